"""A newcomer's first steps, scripted as the README gives them: the smoke test (configs/smoke.yaml), `test` on
a tiny suite with filtered cases (their count and reason in the summary), a suite built from a spec tested
without --task (the suite records its task), and `plan` on a tiny config printing minutes; and the pages a reader
meets: no history, no development paths, a README of at most 200 lines that starts with the two commands, links
that lead somewhere, task-type lists that are whole."""

import re
from pathlib import Path

import pandas as pd
import pytest
from conftest import CONFIGS, REPO, beluga_cli, case, output, pipeline


@pytest.fixture(scope="module")
def smoke(tmp_path_factory) -> Path:
    """The README's smoke test, run once: the whole pipeline on tiny-random; returns its results folder."""
    wd = tmp_path_factory.mktemp("smoke")
    out = pipeline(wd, "--cores", "2", configfiles=(REPO / "configs" / "smoke.yaml",))
    assert "precision:" in output(out)   # the run says which precision it uses when it starts
    return wd / "results" / "smoke"


def iid_model(results: Path) -> Path:
    return results / "sent" / "models" / "iid" / "vanilla" / "standard" / "all"


def test_smoke_run_writes_the_tables_and_figures(smoke):
    for rel in ("table3/table3.md", "table3/table3.tex", "sent/figures/figure1.png", "sent/scores/scores.csv",
                "sent/diagnostics/diagnostics.md", "sent/ood/ood_table.md", "sent/stats/significance.csv"):
        assert (smoke / rel).stat().st_size > 0, rel
    table = (smoke / "table3" / "table3.md").read_text()
    assert "IID→T" in table and "IID→(IID+T)" in table and "G_func" in table


def test_test_counts_filtered_cases_with_their_reason(smoke, tmp_path):
    # every sentence twice, sliced on the original's predicted class 0 and 1: whatever the model predicts,
    # exactly one case of each pair is filtered, with the reason "original not predicted <class>"
    n = 6
    rows = [case(f"c{i}-{k}", "typos sliced", "Robustness", "INV", [f"a fine film {i}", f"a fnie film {i}"],
                 expect="inv", params={"slice": "orig_pred_eq", "slice_value": k}) for i in range(n) for k in (0, 1)]
    suite = tmp_path / "sliced.parquet"
    pd.DataFrame(rows).to_parquet(suite)
    res = beluga_cli("test", "--model", iid_model(smoke), "--suite", suite, "--task", "sent", "--out", tmp_path / "t")
    assert res.returncode == 0, res.stderr
    assert f"{n} filtered: " in res.stdout and "original not predicted" in res.stdout, res.stdout
    funcs = pd.read_csv(tmp_path / "t" / "functionalities.csv")
    assert funcs["n_filtered"].tolist() == [n], funcs
    assert "original not predicted" in (tmp_path / "t" / "summary.md").read_text()


def test_a_spec_built_suite_needs_no_task(smoke, tmp_path):
    sentences = tmp_path / "sentences.txt"
    sentences.write_text("".join(f"It is a film that I do not like, part {i} of the story.\n" for i in range(40)))
    built = tmp_path / "mine.parquet"
    res = beluga_cli("suite", "build", "--spec", REPO / "configs" / "specs" / "my_suite.yaml",
                     "--source", sentences, "--out", built)
    assert res.returncode == 0, res.stderr
    res = beluga_cli("test", "--model", iid_model(smoke), "--suite", built, "--out", tmp_path / "t")
    assert res.returncode == 0, res.stderr
    assert "food sentiment" in res.stdout and "negated positive food" in res.stdout, res.stdout


def test_plan_of_a_tiny_config_prints_minutes():
    res = beluga_cli("plan", "--configfile", CONFIGS / "tiny.yaml", "--cores", "2", "--no-calibrate")
    assert res.returncode == 0, res.stderr
    head = res.stdout.splitlines()[0]
    assert "core-min in all" in head and "core-h" not in head, head
    assert "seconds per job" in res.stdout and "on 2 cores: about" in res.stdout, res.stdout


def test_the_readme_is_a_front_door():
    """At most 200 lines, and its first commands are the two a newcomer runs: set up and run the main job on the
    embedded default, then the tests."""
    text = (REPO / "README.md").read_text()
    assert len(text.splitlines()) <= 200, len(text.splitlines())
    assert text.startswith("# BELUGA pipeline\n\n```bash\n"), text[:80]
    first_block = text.split("```bash\n", 1)[1].split("```", 1)[0]
    assert first_block.splitlines() == ["bash scripts/setup.sh && time .venv/bin/snakemake --cores 2",
                                        ".venv/bin/python -m pytest -q tests"], first_block


def _slug(heading: str) -> str:
    """A heading's anchor as GitHub makes it: lower case, punctuation dropped, spaces to hyphens."""
    import re

    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    import re

    anchors, fenced = set(), False
    for line in page.read_text().splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and (m := re.match(r"#{1,6} (.*)", line)):
            anchors.add(_slug(m.group(1)))
    return anchors


def test_the_links_of_the_pages_lead_somewhere():
    """Every relative link of the README and docs/ names a file that exists and, with #anchor, one of its
    headings (the README's one-line pointers to the sections that live in docs/ included)."""
    import re

    pages = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
    broken, n = [], 0
    for page in pages:
        for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text()):
            if re.match(r"[a-z]+:", target):
                continue
            n += 1
            path, _, anchor = target.partition("#")
            file = page.parent / path if path else page
            if not file.exists():
                broken.append(f"{page.relative_to(REPO)}: {target}: no such file")
            elif anchor and file.suffix == ".md" and anchor not in _anchors(file):
                broken.append(f"{page.relative_to(REPO)}: {target}: no such heading")
    assert n > 30 and not broken, "\n".join(broken)


def _section(page: Path, heading: str) -> str:
    text = page.read_text()
    assert f"\n{heading}\n" in text, (page, heading)
    return text.split(f"\n{heading}\n", 1)[1].split("\n#", 1)[0]


def test_the_task_type_lists_are_whole():
    """The pages that list task types list them all: RUNNING.md every type the pipeline implements
    (beluga.core.tasks.TASK_TYPES), SUITE_FORMAT.md every type a spec may be written for (the spec schema's)."""
    import re

    import yaml

    from beluga.core.tasks import TASK_TYPES
    from beluga.suites.spec import SPEC_SCHEMA

    listed = set(re.findall(r"`(\w+)`", _section(REPO / "docs" / "RUNNING.md",
                                                  "## Task types and the related papers' experiments")))
    assert set(TASK_TYPES) <= listed, set(TASK_TYPES) - listed
    spec_tasks = yaml.safe_load(SPEC_SCHEMA.read_text())["properties"]["task"]["enum"]
    top = _section(REPO / "docs" / "SUITE_FORMAT.md", "### The format").split("`functionalities`", 1)[0]
    assert set(spec_tasks) <= set(re.findall(r"`(\w+)`", top)), top


def test_the_contributing_map_names_every_module():
    """docs/CONTRIBUTING.md's map lists every module of the package under its package's line ("  model/",
    a subpackage indented under its package: "    span/" under "  heads/"; a package's __init__ by the line)."""
    text = (REPO / "docs" / "CONTRIBUTING.md").read_text()
    block = text[text.index("## The map"):]
    block = block[:block.index("\n```\n", block.index("```") + 3)]
    sections: dict[str, str] = {}
    top = current = None
    for line in block.splitlines():
        name = line[:23].strip()
        if line.startswith("  ") and not line.startswith(" " * 23) and name.endswith("/"):
            nested = line.startswith("    ")
            current = (top + name) if nested and top else name
            top = top if nested else name
            sections[current] = line[23:]
        elif current is not None and line.startswith(" " * 23):
            sections[current] += " " + line.strip()
        else:
            current = None
    missing = []
    for p in sorted((REPO / "beluga").rglob("*.py")):
        rel = p.relative_to(REPO / "beluga")
        if len(rel.parts) == 1:
            continue   # __init__ / __main__: the beluga/ line
        package = "/".join(rel.parts[:-1]) + "/"
        words = set(re.findall(r"[A-Za-z_0-9]+", sections.get(package, "")))
        if package not in sections or (p.stem != "__init__" and p.stem not in words):
            missing.append(str(rel))
    assert sections and not missing, "modules the map does not name: " + ", ".join(missing)


# ---------------------------------------------------------------------------------------------------------------
# Part d: settings as documented (a spec's seed), the first page for a user with data (data stage, the i.i.d.
# files' labels, apply_to), every doc and --help free of development paths, history and stale lists, help for
# every option.

def _commands() -> list[tuple[list[str], object]]:
    """Every command of ``python -m beluga`` with its parser: (the words after ``beluga``, the parser)."""
    import argparse

    from beluga.cli.parser import build_parser

    found, todo = [], [([], build_parser())]
    while todo:
        words, parser = todo.pop(0)
        found.append((words, parser))
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                todo.extend(([*words, name], sub) for name, sub in action.choices.items())
    return found


def _reader_texts() -> list[tuple[str, str]]:
    """What a user reads: the README, every page of docs/, the config and spec schemas (every key documented
    there) and the full ``--help`` of every command, as (where, text)."""
    texts = [(str(p.relative_to(REPO)), p.read_text()) for p in
             [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md")), REPO / "schemas" / "config.schema.yaml",
              REPO / "beluga" / "suites" / "packaged_specs" / "spec.schema.yaml"]]
    for words, _ in _commands():
        res = beluga_cli(*words, "--help")
        assert res.returncode == 0 and res.stdout.startswith("usage: beluga"), (words, res.stderr)
        texts.append((f"beluga {' '.join(words)} --help".replace("  ", " "), res.stdout))
    return texts


def _task_lists(text: str) -> list[tuple[set[str], str]]:
    """Every run of three or more task-type names in ``text`` (``sent, para or read``, ``nli / similarity / ...``,
    names in backticks or quotes too; not a path's ``{a,b,c}``), as (the names, the text around it)."""
    from beluga.core.tasks import TASK_TYPES

    name = "[`'\"]?(?:" + "|".join(sorted(TASK_TYPES, key=len, reverse=True)) + ")[`'\"]?"
    sep = r"(?:\s*,\s*(?:or\s+|and\s+)?|\s*/\s*|\s+or\s+|\s+and\s+)"
    flat = re.sub(r"\s+", " ", text)
    return [({n for n in re.findall(r"\w+", m.group(0)) if n in TASK_TYPES},
             flat[max(0, m.start() - 150):m.end() + 60])
            for m in re.finditer(r"(?<![\w{,/.-])" + name + "(?:" + sep + name + r"){2,}(?![\w-])", flat)]


def _stale_task_lists(text: str) -> list[str]:
    """The task-type lists of ``text`` that are none of the sets the code defines: every type
    (``beluga.core.tasks.TASK_TYPES``), those a suite spec is written for and its pair tasks (the spec schema,
    ``beluga.suites.spec.core.APPLY_TO``), the pair tasks, or CheckList's three beside its suites' names."""
    import yaml

    from beluga.core.tasks import SUITE_TASK_TYPES, TASK_TYPES
    from beluga.suites.spec import SPEC_SCHEMA
    from beluga.suites.spec.core import APPLY_TO

    spec = set(yaml.safe_load(SPEC_SCHEMA.read_text())["properties"]["task"]["enum"])
    known = [set(TASK_TYPES), spec, {t for t in spec if APPLY_TO[t]}, {n for n, t in TASK_TYPES.items() if t.pair}]
    checklist = set(SUITE_TASK_TYPES.values())
    stale = []
    for names, around in _task_lists(text):
        if names in known or (names == checklist and all(s in around for s in SUITE_TASK_TYPES)):
            continue
        stale.append(f"{sorted(names)}: ...{around}...")
    return stale


def test_the_task_list_check_finds_a_stale_list():
    assert _stale_task_lists("A task's `type` is one of `sent`, `para` and `read`.")
    assert _stale_task_lists("a pair task (para, nli,\n similarity) refuses single texts")
    assert not _stale_task_lists("`suite`: sentiment / qqp / squad for sent / para / read")
    assert not _stale_task_lists("results under `results/x/{sent,para,read}/`")
    assert not _stale_task_lists("one of sent, para, read, nli, nli_binary, acceptability, similarity or "
                                 "similarity_classes")


def test_docs_and_help_name_no_development_path_no_history_and_whole_task_lists():
    """The README, docs/, the schemas and every command's --help: no ``../shared`` (a development machine's
    folder), no issue numbers, every list of task types one the code defines, every list of packaged specs
    all of them."""
    from beluga.suites.spec.core import PACKAGED

    texts = _reader_texts()
    assert len(texts) > 30
    bad = [f"{where}: {line.strip()}" for where, text in texts for line in text.splitlines()
           if "../shared" in line or re.search(r"\bissue [0-9]", line, re.I)]
    bad += [f"{where}: stale task-type list {s}" for where, text in texts for s in _stale_task_lists(text)]
    for where, text in texts:
        for run in re.findall(r"`?\w+_default`?(?:(?:\s*,\s*|\s*/\s*|\s+or\s+)`?\w+_default`?){2,}",
                              re.sub(r"\s+", " ", text)):
            if set(re.findall(r"\w+_default", run)) != set(PACKAGED):
                bad.append(f"{where}: packaged specs listed as {run!r}, not {list(PACKAGED)}")
    assert not bad, "\n".join(bad)


def test_every_option_of_every_command_has_help():
    """Every option and argument of every command says what it is (the --help of each)."""
    import argparse

    missing = []
    for words, parser in _commands():
        for action in parser._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            if isinstance(action, argparse._SubParsersAction):
                missing += [f"beluga {' '.join(words)} {c.dest}" for c in action._choices_actions
                            if not (c.help or "").strip()]
            elif not (action.help or "").strip():
                missing.append(f"beluga {' '.join(words)} {'/'.join(action.option_strings) or action.dest}")
    assert len(_commands()) >= 10 and not missing, missing


def test_suite_help_lists_every_export_format_and_score_help_every_prediction_format():
    """``suite --help`` names every format ``suite export --format`` takes, with what it writes; ``score --help``
    every predictions format the reader knows."""
    from beluga.analyses.lm_eval_samples import SAMPLES_FORMAT
    from beluga.analyses.predictions import FORMATS

    parsers = {" ".join(words): parser for words, parser in _commands()}
    formats = next(a for a in parsers["suite export"]._actions if a.dest == "format").choices
    assert len(formats) == 3, formats
    suite_help = re.sub(r"\s+", " ", beluga_cli("suite", "--help").stdout)
    for f in formats:
        assert f" {f}: " in suite_help, (f, suite_help)
    score_help = re.sub(r"\s+", " ", beluga_cli("score", "--help").stdout)
    for f in (*FORMATS, SAMPLES_FORMAT):
        assert re.search(rf"(?<![\w-]){re.escape(f)}(?![\w-])", score_help), f


def test_data_stage_is_documented_with_the_layout_it_reads():
    """`data stage --help` and RUNNING.md's section show every file it stages (beluga.data.fetch.STAGED) and
    its SHA256SUMS; the README's "Where to read on" leads there."""
    from beluga.data.fetch import STAGED

    helptext = beluga_cli("data", "stage", "--help").stdout
    section = _section(REPO / "docs" / "RUNNING.md", "## A local copy of the data: `data stage`")
    tree = section.split("```text\n", 1)[1].split("```", 1)[0]
    for rel in STAGED:
        assert f"    {rel}\n" in helptext, rel
        # the tree: each folder of the path, then the file, below it
        parts = rel.split("/")
        rows = [next(i for i, line in enumerate(tree.splitlines()) if re.search(rf"─ {re.escape(p)}/?(\s|$)", line))
                for p in parts]
        assert rows == sorted(rows), (rel, rows)
    assert "SHA256SUMS" in helptext and "SHA256SUMS" in tree and "python -m beluga data stage --from" in section
    read_on = _section(REPO / "README.md", "## Where to read on")
    assert "(docs/RUNNING.md#a-local-copy-of-the-data-data-stage)" in read_on


def test_running_md_gives_every_iid_source_and_each_task_types_label_integers():
    """RUNNING.md's "i.i.d. files" section: a row for every i.i.d. source with its label column, and for every
    task type its integers in the order beluga.core.tasks gives them (an NLI file's 0 / 1 / 2)."""
    from beluga.core.tasks import TASK_TYPES
    from beluga.data.iid import SOURCE_TASK_TYPES

    section = _section(REPO / "docs" / "RUNNING.md", "## i.i.d. files: columns and labels")
    rows = {m.group(1): m.group(0) for m in re.finditer(r"^\| `([^`]+)` \|.*$", section, flags=re.M)}
    for source in (*SOURCE_TASK_TYPES, "hf:<name>"):
        assert source in rows, source
    assert "| a `.tsv` / `.csv` file |" in section
    for name, ttype in TASK_TYPES.items():
        row = rows[name]
        for k, label in ttype.iid_labels.items():
            assert f"{k} {label}" in row or (label == str(k) and f" {k}" in row), (name, k, label, row)
        if not ttype.iid_labels:
            assert "none:" in row, row


def test_apply_to_sits_under_perturb_in_the_documented_nli_example(tmp_path):
    """SUITE_FORMAT.md's apply_to example, rendered in an NLI spec: the perturbation changes the hypothesis only,
    as ``perturb: {..., apply_to: hypothesis}`` says."""
    import yaml

    from beluga.suites.spec import load_spec, render_spec

    text = (REPO / "docs" / "SUITE_FORMAT.md").read_text()
    lead = "changes is `apply_to`, a key of the `perturb:` mapping itself"
    assert lead in text
    block = text.split(lead, 1)[1].split("```yaml\n", 1)[1].split("```", 1)[0]
    func = yaml.safe_load(block)[0]
    assert func["templates"][0]["perturb"]["apply_to"] == "hypothesis"
    spec = tmp_path / "nli.yaml"
    spec.write_text(yaml.safe_dump({"spec_version": 1, "name": "apply_example", "task": "nli",
                                    "functionalities": [func]}))
    df = render_spec(load_spec(str(spec)), {}, cases_per_functionality=4)
    assert len(df) == 4
    for premises, hypotheses in zip(df["inputs"], df["inputs_b"]):
        assert len(set(premises)) == 1 and len(set(hypotheses)) == len(hypotheses) > 1, (premises, hypotheses)


SEEDED_SPEC = """spec_version: 1
name: seeded
task: sent
defaults: {seed: 3}
lexicons:
  food: [pizza, pasta, soup, salad, burger, curry, bread, rice, noodles, stew, tacos, sushi]
functionalities:
  - name: food sentiment
    class: Vocabulary
    type: MFT
    expect: eq
    templates:
      - label: positive
        templates: ["The {food} was {pos_adj}."]
"""


def _inputs(df) -> list:
    return [list(x) for x in df["inputs"]]


def test_a_specs_seed_is_used_unless_the_config_sets_one(tmp_path, caplog):
    """In the pipeline, a spec's ``defaults.seed`` draws the suite when the config's suite block sets no seed;
    a seed the config sets wins; a spec without one keeps the schema's default. The build log names it."""
    import logging

    import yaml

    from beluga.suites.build import make_suite
    from beluga.suites.spec import load_spec, render_spec
    from beluga.workflow.config import validate_config

    spec_file = tmp_path / "seeded.yaml"
    spec_file.write_text(SEEDED_SPEC)
    unseeded = tmp_path / "unseeded.yaml"
    unseeded.write_text(SEEDED_SPEC.replace("defaults: {seed: 3}\n", ""))

    def settled(spec, **suite) -> dict:
        cfg = yaml.safe_load((CONFIGS / "tiny.yaml").read_text())
        cfg["tasks"]["sent"]["suite"] = {"spec": str(spec), "cases_per_functionality": 6, **suite}
        return validate_config(cfg)["tasks"]["sent"]["suite"]

    def rendered(seed: int) -> list:
        return _inputs(render_spec(load_spec(str(spec_file)), {}, seed=seed, cases_per_functionality=6,
                                   max_perturbations=3, max_words=40))

    assert rendered(3) != rendered(7)   # the seed matters to this spec
    from_spec, from_config, schema = settled(spec_file), settled(spec_file, seed=7), settled(unseeded)
    assert (from_spec["seed"], from_config["seed"], schema["seed"]) == (3, 7, 7)
    with caplog.at_level(logging.INFO, logger="beluga.suites.build"):
        assert _inputs(make_suite(from_spec, "sent", None)[0]) == rendered(3)
        assert _inputs(make_suite(from_config, "sent", None)[0]) == rendered(7)
    said = [r.getMessage() for r in caplog.records if "suite rendered from spec" in r.getMessage()]
    assert said == [f"suite rendered from spec {spec_file}, seed 3: the spec's defaults.seed, which a suite.seed in "
                    "the config would replace",
                    f"suite rendered from spec {spec_file}, seed 7: the config's suite.seed, over the spec's "
                    "defaults.seed 3"], said


def test_suite_build_says_which_seed_and_prints_a_stable_name(tmp_path):
    """``suite build``: the first line names the spec's name (the same on a new file and on a rerun over it) and
    the seed with where it came from; --seed wins over the spec's."""
    from beluga.suites.format import load_suite

    spec_file = tmp_path / "my_nli_like.yaml"
    spec_file.write_text(SEEDED_SPEC)
    out = tmp_path / "built.parquet"
    first = beluga_cli("suite", "build", "--spec", spec_file, "--out", out)
    again = beluga_cli("suite", "build", "--spec", spec_file, "--out", out)
    assert first.returncode == again.returncode == 0, first.stderr + again.stderr
    head = first.stdout.splitlines()[0]
    assert head == again.stdout.splitlines()[0]
    assert head.startswith("seeded (sent): ") and "seed 3 (the spec's defaults.seed)" in head, head
    seeded = _inputs(load_suite(str(out)))
    other = beluga_cli("suite", "build", "--spec", spec_file, "--out", out, "--seed", "5")
    assert "seed 5 (--seed, over the spec's defaults.seed 3)" in other.stdout.splitlines()[0], other.stdout
    assert _inputs(load_suite(str(out))) != seeded


# ---------------------------------------------------------------- part b: `test` / `score` flag a constant predictor
# and speak the task's words (class names, `p = `, named columns)

def _tiny_classifier(folder: Path, texts: list[str], constant: bool) -> Path:
    """A tiny SENT classifier saved as a model folder: ``constant`` -- its head's weights zero and a bias, so every
    input gets P(positive) = sigmoid(0.08) = 0.52; else its weights scaled up and its bias centring the suite's
    logits, so about half the inputs are negative, half positive, each with P near 0 or 1 (on bf16 and fp32
    alike)."""
    import torch

    from beluga.model.modeling import load_model, save_model, set_seed

    set_seed(1)
    model, tok = load_model("tiny-random", 2)
    model.eval()
    with torch.no_grad():
        if constant:
            model.classifier.weight.zero_()
            model.classifier.bias.copy_(torch.tensor([0.0, 0.08]))
        else:
            model.classifier.weight.mul_(30000.0)
            logits = model(**tok(texts, padding=True, return_tensors="pt")).logits
            model.classifier.bias[1] -= (logits[:, 1] - logits[:, 0]).median()
    save_model(model, tok, folder, task_type="sent")
    return folder


@pytest.fixture(scope="module")
def sent_suite(tmp_path_factory) -> Path:
    from conftest import make_tiny_suite

    from beluga.suites.format import save_suite

    path = tmp_path_factory.mktemp("part_b") / "suite.parquet"
    save_suite(make_tiny_suite(6), path)
    return path


@pytest.fixture(scope="module")
def two_models(sent_suite, tmp_path_factory) -> dict[str, Path]:
    from beluga.suites.format import load_suite

    texts = [t for inputs in load_suite(sent_suite)["inputs"] for t in inputs]
    folder = tmp_path_factory.mktemp("part_b_models")
    return {kind: _tiny_classifier(folder / kind, texts, kind == "constant") for kind in ("constant", "varied")}


def _header(stdout: str) -> str:
    return next(line for line in stdout.splitlines() if "class / functionality" in line)


def test_test_and_score_flag_a_constant_predictor(two_models, sent_suite, tmp_path):
    """`test` on a model that gives every input P(positive) 0.52 says so in one line (terminal, summary.md,
    summary.html) and records it in run.json; `score` on its predictions says the same under the same header."""
    import json

    model = two_models["constant"]
    res = beluga_cli("test", "--model", model, "--suite", sent_suite, "--out", tmp_path / "t", "--task", "sent")
    assert res.returncode == 0, res.stderr
    flag = ("⚠ constant predictor: neutral for all 42 inputs (P(positive) 0.52 ± 0.00); the failure rates "
            "describe that constant, not the model's behaviour")
    assert " ".join(res.stdout.split()).count(flag) == 1, res.stdout          # wrapped at 100 columns
    assert max(map(len, res.stdout.splitlines()[:-1])) <= 100
    record = json.loads((tmp_path / "t" / "run.json").read_text())["constant_predictor"]
    assert list(record) == [str(model)]
    got = record[str(model)]
    assert (got["prediction"], got["share"], got["n_inputs"], got["probability"]["class"]) == \
        ("neutral", 1.0, 42, "positive")
    assert got["probability"]["mean"] == pytest.approx(0.52, abs=0.005) and got["probability_spread"] < 1e-3
    from beluga.analyses.behavioral import markdown_safe

    assert f"**{markdown_safe(flag)}**" in (tmp_path / "t" / "summary.md").read_text()
    assert "<div class='warn' id='constant'><p><strong>⚠ constant predictor: neutral for all 42 inputs" in \
        (tmp_path / "t" / "summary.html").read_text()

    preds = tmp_path / "t" / "predictions.parquet"
    scored = beluga_cli("score", "--suite", sent_suite, "--predictions", preds, "--out", tmp_path / "s",
                        "--task", "sent")
    assert scored.returncode == 0, scored.stderr
    assert " ".join(scored.stdout.split()).count(flag) == 1, scored.stdout
    assert _header(scored.stdout) == _header(res.stdout)
    assert json.loads((tmp_path / "s" / "run.json").read_text())["constant_predictor"] == {str(preds): got}


def test_a_model_that_varies_is_not_flagged(two_models, sent_suite, tmp_path):
    import json

    model = two_models["varied"]
    res = beluga_cli("test", "--model", model, "--suite", sent_suite, "--out", tmp_path / "t", "--task", "sent")
    assert res.returncode == 0, res.stderr
    assert "constant" not in res.stdout and "⚠" not in res.stdout, res.stdout
    assert json.loads((tmp_path / "t" / "run.json").read_text())["constant_predictor"] == {str(model): None}
    for page in ("summary.md", "summary.html"):
        assert "⚠" not in (tmp_path / "t" / page).read_text(), page
    # over both models: only the constant one is flagged, by its label
    both = beluga_cli("test", "--model", two_models["varied"], two_models["constant"], "--suite", sent_suite,
                      "--out", tmp_path / "both", "--task", "sent")
    assert both.returncode == 0, both.stderr
    flags = [line for line in both.stdout.splitlines() if line.startswith("⚠")]
    assert len(flags) == 1 and flags[0].startswith("⚠ m2 is a constant predictor: neutral for all 42 inputs"), flags
    record = json.loads((tmp_path / "both" / "run.json").read_text())["constant_predictor"]
    assert record[str(two_models["varied"])] is None and record[str(two_models["constant"])]["share"] == 1.0


def test_the_summary_table_names_its_columns(two_models, sent_suite, tmp_path):
    """One model: failure rate, failed / scored, then the status word (so `0.0%` never reads as a pass rate);
    several: the failure rate's mean ± sd and min–max; each row's numbers under their column."""
    res = beluga_cli("test", "--model", two_models["varied"], "--suite", sent_suite, "--out", tmp_path / "t",
                     "--task", "sent")
    header = _header(res.stdout)
    assert header.split() == ["class", "/", "functionality", "type", "failure", "rate", "failed", "/", "scored",
                              "status"]
    funcs = pd.read_csv(tmp_path / "t" / "functionalities.csv")
    for r in funcs.itertuples(index=False):
        row = next(line for line in res.stdout.splitlines() if line.startswith(f"  {r.functionality} "))
        rate = f"{100 * r.failure_rate:.1f}%"
        assert row.endswith(f"  {r.status}") and \
            row[:-len(r.status)].split()[-4:] == [rate, str(r.n_failed), "/", str(r.n_scored)], row
        # the rate ends where the header's "failure rate" ends; the status starts where "status" starts
        assert row.index(rate) + len(rate) == header.index("failure rate") + len("failure rate"), row
        assert row.rindex(r.status) == header.index("status"), row


def test_outputs_name_the_classes(tmp_path):
    """An NLI suite built from the packaged spec names its sample labels (`(label contradiction)`, never
    `(label 2)`); `score` of a model that says entailment with p = 0.9 shows a not_eq expectation's class by name
    (`not_eq val=entailment`) and each prediction as `entailment (p = 0.90)`, in the terminal, summary.md and
    summary.html; it is flagged as a constant predictor."""
    from beluga.suites.format import load_suite

    suite = tmp_path / "nli.parquet"
    built = beluga_cli("suite", "build", "--spec", "nli_default", "--out", suite, "--cases", "2")
    assert built.returncode == 0, built.stderr
    assert "(label contradiction)" in built.stdout and not re.search(r"\(label \d\)", built.stdout), built.stdout
    cases = load_suite(suite)
    preds = tmp_path / "preds.parquet"
    pd.DataFrame([(r.case_id, j, [0.9, 0.06, 0.04]) for r in cases.itertuples() for j in range(len(r.inputs))],
                 columns=["case_id", "input_idx", "probs"]).to_parquet(preds)
    res = beluga_cli("score", "--suite", suite, "--predictions", preds, "--out", tmp_path / "s")
    assert res.returncode == 0, res.stderr
    from beluga.analyses.behavioral import markdown_safe

    md, page = ((tmp_path / "s" / name).read_text() for name in ("summary.md", "summary.html"))
    for doc, shown in ((res.stdout, str), (md, markdown_safe), (page, str)):
        assert shown("not_eq val=entailment") in doc and "entailment (p = 0.90)" in doc
        assert not re.search(r"(val|label|slice\\?_value)=\d", doc) and "(label " in doc
    n = int(cases["inputs"].map(len).sum())
    assert f"⚠ constant predictor: entailment for all {n} inputs (P(entailment) 0.90 ± 0.00)" in res.stdout


def test_the_constant_check_of_each_head():
    """A classifier whose probabilities hardly vary is constant even when its argmax splits the inputs (a
    constant near a class boundary); one that predicts one class for ≥ 95% of its inputs is too, and one that
    varies is not; a regression with scores of sd ≤ 0.05; a QA model with one answer for ≥ 95% of inputs."""
    import numpy as np

    from beluga.core.tasks import get_task_type
    from beluga.heads import get_head

    para, cls = get_task_type("para"), get_head("classification")
    near = [[0.501, 0.499], [0.499, 0.501]] * 10                       # 50% each class, spread 0.002
    got = cls.constant_predictor(para, near, "p")
    assert got["share"] == 0.5 and got["probability_spread"] == pytest.approx(0.002)
    assert got["text"] == "not duplicate for 50.0% of 20 inputs (P(not duplicate) 0.50 ± 0.00)"
    varied = [[0.9, 0.1], [0.2, 0.8]] * 10
    assert cls.constant_predictor(para, varied, "p") is None
    mostly = [[0.9, 0.1]] * 19 + [[0.2, 0.8]]                          # 95% one class, probabilities vary
    assert cls.constant_predictor(para, mostly, "p")["share"] == 0.95
    assert cls.constant_predictor(para, mostly[1:] + [[0.2, 0.8]], "p") is None   # 90%
    assert cls.constant_predictor(para, [], "p") is None

    sim, score = get_task_type("similarity"), get_head("regression")
    flat = score.constant_predictor(sim, list(2.5 + 0.01 * np.sin(np.arange(30))), "p")
    assert flat["text"] == "score 2.50 ± 0.01 for all 30 inputs" and flat["constant_std"] == 0.05
    assert score.constant_predictor(sim, [1.0, 4.0] * 15, "p") is None

    read, span = get_task_type("read"), get_head("qa")
    assert span.constant_predictor(read, [""] * 19 + ["Paris"], "p")["text"] == "answer '' for 95.0% of 20 inputs"
    assert span.constant_predictor(read, ["Paris", "Rome"] * 10, "p") is None


def test_expectations_and_slices_name_their_classes():
    from beluga.core.tasks import get_task_type
    from beluga.score.expectations import expectation_text, filter_condition

    names = get_task_type("nli").suite_labels
    assert expectation_text("not_eq", {"val": 0}, names) == "not_eq val=entailment"
    assert expectation_text("monotonic", {"label": 2, "increasing": False, "train": {"x": 1}}, names) == \
        "monotonic label=contradiction, increasing=False"
    assert expectation_text("inv", {"slice": "orig_pred_eq", "slice_value": 1}, names) == \
        "inv slice=orig_pred_eq, slice_value=neutral"
    assert expectation_text("score_near", {"val": 3, "tolerance": 0.5}, get_task_type("similarity").suite_labels) \
        == "score_near val=3, tolerance=0.5"
    assert filter_condition("inv", {"slice": "orig_pred_eq", "slice_value": 2}, names) == \
        "a case whose original is not predicted contradiction is filtered"


# ---------------------------------------------------------------- part 56a: degenerate results marked where shown
@pytest.mark.slow
def test_an_all_degenerate_run_says_so_in_table3_and_in_its_last_lines(tmp_path):
    """The first own-suite run of a newcomer: every model degenerate (a tiny random BERT after a few steps on 40
    examples answers one class for every input; the diagnostics say so, and the premise is checked). Table 3
    marks every cell ⚠ and bolds none (Markdown and LaTeX), its CSV counts each cell's degenerate models, a
    legend line says what the mark means and where to read why, and the run's last lines count the models."""
    from conftest import config_with, pipeline_config

    out, _ = pipeline_config(tmp_path / "wd", config_with(partitions=["seen", "func"]), "--cores", "1")
    assert out.returncode == 0, out.stderr[-4000:]
    res = tmp_path / "wd" / "results"
    diag = pd.read_csv(res / "sent" / "diagnostics" / "diagnostics.csv")
    assert len(diag) == 5 and diag["degenerate"].all(), ("the premise: every model predicts one class",
                                                         diag[["partition", "fold", "iid_majority_share"]])
    md = (res / "table3" / "table3.md").read_text()
    rows = [ln.strip("|").split(" | ") for ln in md.splitlines() if ln.startswith("| IID")]
    cells = [c.strip() for r in rows for c in r[2:]]
    assert len(rows) == 2 and len(cells) == 2 * 4, md
    assert all(c.endswith(" ⚠") and "**" not in c for c in cells), md
    legend = next(ln for ln in md.splitlines() if ln.startswith("⚠: "))
    assert "(5 of 5 models are)" in legend and "never bold" in legend
    assert "results/sent/diagnostics/diagnostics.md says which and why" in legend
    tex = (res / "table3" / "table3.tex").read_text()
    assert r"\textbf" not in tex and tex.count(r"$^{\ast}$") == 8 + 1, tex
    table = pd.read_csv(res / "table3" / "table3.csv")
    assert (table["n_degenerate"] == table["n_models"]).all() and (table["n_models"] > 0).all(), table
    # the run's last lines: ours, then only Snakemake's own closing lines (where its log is, the elapsed time)
    lines = out.stderr.strip().splitlines()
    at = next(i for i, ln in enumerate(lines) if ln.startswith("BELUGA warning: 5 of 5 models are degenerate"))
    assert lines[at:at + 2] == ["BELUGA warning: 5 of 5 models are degenerate (one class, answer or score for "
                                "(almost) every input); the cells computed from them are marked ⚠ and never bold. "
                                "Why:", "  SENT: 5 of 5 models (on the i.i.d. test set and the suite): "
                                "results/sent/diagnostics/diagnostics.md"], out.stderr[-2000:]
    assert [ln.split(":")[0] for ln in lines[at + 2:]] == ["Complete log(s)", "Elapsed time"], lines[at:]
    page = (res / "sent" / "diagnostics" / "diagnostics.html").read_text()
    assert "<strong>5 of 5 models are degenerate</strong>" in page


# ---------------------------------------------------------------- times that hold: the plan calibrated here
@pytest.mark.slow   # the calibration's processes; the shared real run of the tiny config (snakemake --cores 2)
def test_plan_calibrated_here_counts_the_tiny_runs_jobs(tiny_run, tmp_path):
    """`plan` on the tiny config measures this machine (--recalibrate: now), says so, and counts the jobs the tiny
    run ran: its training / prediction jobs per rule and the rest (data, scoring, statistics, tables, plots), as
    Snakemake's own job stats of the real run list them. How close its wall-clock comes to the run's is a timing,
    measured by the benchmark (scripts/benchmark.py, "plan vs the tiny run": the plan, then the run right after it
    on the same machine), not here, where other tests share the cores."""
    import json

    from conftest import job_counts

    from beluga.workflow.calibrate import cpu_name

    res = beluga_cli("plan", "--configfile", CONFIGS / "tiny.yaml", "--cores", "2", "--recalibrate",
                     "--json", tmp_path / "plan.json")
    assert res.returncode == 0, res.stderr
    head = res.stdout.splitlines()[0]
    assert re.search(rf"throughput: calibrated on this machine \({re.escape(cpu_name())}, bf16 (native|emulated)\), "
                     r"cached at \S+calibration-[0-9a-f]{16}\.json\)$", head), head
    assert re.search(r"^  on 2 cores: about \d+(\.\d+)? (s|min) -- ", res.stdout, re.M), res.stdout
    planned = {}
    for job in json.loads((tmp_path / "plan.json").read_text())["jobs"]:
        planned[job["rule"]] = planned.get(job["rule"], 0) + job["count"]
    logs = sorted((tiny_run / ".snakemake" / "log").glob("*.snakemake.log"))
    ran = job_counts(logs[0].read_text().split("Select jobs to execute")[0])
    ran.pop("all", None)
    assert planned and {rule: ran.get(rule) for rule in planned} == planned, (planned, ran)
    others = sum(n for rule, n in ran.items() if rule not in planned)
    assert f"the run's other jobs: {others} of its {sum(ran.values())} (Snakemake's dry run" in res.stdout, res.stdout
