"""A run whose i.i.d. data are not the paper's files says so (issue 34): the record
(``source.json``'s ``fallback``), Table 3's footnote (Markdown, LaTeX), scores.md, the
report's page, the prepare_iid log line and the run's last lines; and the cost plan counts
the paper's sizes for the paper's sources (``--assume-paper-data``). The staged files'
row counts checked against the constants need ../shared/data (skipped without it)."""

import gzip
import json
import logging
from pathlib import Path

import pandas as pd
import pytest
import yaml
from conftest import REPO
from test_tables import make_long

from beluga.data.iid import describe_source, fallback_note
from beluga.data.paper_data import PAPER_FILES, paper_data_name, paper_sizes
from beluga.report import iid_data
from beluga.report.tables import table3_latex, table3_markdown
from beluga.score.metrics import SCENARIOS, scores_markdown

SHARED = REPO.parent / "shared" / "data"
needs_shared = pytest.mark.skipif(not (SHARED / "iid").is_dir(), reason=f"real data folder {SHARED} is absent")
QUORA_HEAD = "id\tqid1\tqid2\tquestion1\tquestion2\tis_duplicate\n"


def quora_folder(folder: Path, n: int = 60) -> Path:
    """A Quora-release-shaped fallback folder (``n`` pairs, half duplicates)."""
    folder.mkdir(parents=True, exist_ok=True)
    rows = "".join(f"{i}\t{2 * i}\t{2 * i + 1}\tWhat is thing {i}?\tWhat is item {i}?\t{i % 2}\n" for i in range(n))
    (folder / "quora_duplicate_questions.tsv").write_text(QUORA_HEAD + rows)
    return folder


def quora_record(folder: Path) -> dict:
    """What prepare_iid records for the fallback (rows as the Quora split of 363,784 / 20,134 / 20,125)."""
    rec = describe_source({"source": "qqp", "path": str(folder), "seed": 42})
    rec["rows"] = {"train": 363_784, "val": 20_134, "test": 20_125, "pool": 0}
    return rec


# ---------------------------------------------------------------- the paper's sizes
def test_paper_sizes_are_the_official_files_halved():
    # train file; dev // 2 -> val, the rest -> test (beluga.data.located.halve)
    assert paper_sizes("sst2") == {"train": 67_349, "val": 436, "test": 436}          # 872 = 436 + 436
    assert paper_sizes("qqp") == {"train": 363_846, "val": 20_215, "test": 20_215}    # 40,430 = 2 x 20,215
    assert paper_sizes("squad") == {"train": 87_599, "val": 5_285, "test": 5_285}     # 10,570 = 2 x 5,285
    assert paper_data_name("qqp") == "GLUE QQP (QQP-clean.zip: 363,846 train / 40,430 dev)"


@needs_shared
def test_paper_row_counts_match_the_staged_files():
    """SST-2's TSVs are GLUE's files (one header row each); the SQuAD dev reconstruction has the
    official dev set's questions. (QQP: GLUE's split is not staged; 363,846 + 40,430 = 404,276
    pairs of the 404,290 the Quora release numbers.)"""
    for split, n in (("train", PAPER_FILES["sst2"][2]), ("dev", PAPER_FILES["sst2"][3])):
        lines = (SHARED / "iid" / "sst2" / f"{split}.tsv").read_text(encoding="utf-8").splitlines()
        assert len([ln for ln in lines[1:] if ln.strip()]) == n
    with gzip.open(SHARED / "iid" / "squad" / "dev-v1.1.reconstructed.json.gz", "rt", encoding="utf-8") as f:
        squad = json.load(f)
    questions = sum(len(p["qas"]) for a in squad["data"] for p in a["paragraphs"])
    assert questions == PAPER_FILES["squad"][3] == 10_570
    assert PAPER_FILES["qqp"][2] + PAPER_FILES["qqp"][3] == 404_276 <= 404_290


# ---------------------------------------------------------------- the record
def test_fallback_note_names_what_was_read_instead(tmp_path):
    rec = quora_record(quora_folder(tmp_path / "qqp"))
    assert describe_source({"source": "qqp", "path": str(tmp_path / "qqp")})["fallback"] == fallback_note(
        {k: v for k, v in rec.items() if k != "rows"})
    assert fallback_note(rec) == (
        "Quora Question Pairs release (quora_duplicate_questions.tsv; GLUE's QQP files absent); "
        "363,784 / 20,134 / 20,125 train / val / test examples; "
        "not the paper's GLUE QQP (QQP-clean.zip: 363,846 train / 40,430 dev)")
    # the paper's files, or a source that is not one of the paper's: nothing to say
    sst2 = tmp_path / "sst2"
    sst2.mkdir()
    for name in ("train.tsv", "dev.tsv"):
        (sst2 / name).write_text("sentence\tlabel\nfine .\t1\n")
    assert describe_source({"source": "sst2", "path": str(sst2)})["fallback"] is None
    assert describe_source({"source": "rotten_tomatoes", "n_val": 10, "n_test": 20})["fallback"] is None
    # SQuAD: the dev file alone; train with the reconstructed dev
    squad = tmp_path / "squad"
    squad.mkdir()
    (squad / "dev-v1.1.reconstructed.json.gz").write_bytes(b"")
    assert "no train-v1.1.json" in describe_source({"source": "squad", "path": str(squad)})["fallback"]
    (squad / "train-v1.1.json").write_text("{}")
    note = describe_source({"source": "squad", "path": str(squad)})["fallback"]
    assert note.startswith("SQuAD v1.1 (train-v1.1.json, reconstructed dev ") and "not the paper's SQuAD v1.1" in note


def test_prepare_iid_logs_one_warning_line_and_records_the_fallback(tmp_path, caplog):
    from beluga.steps import data as data_steps

    folder = quora_folder(tmp_path / "qqp", n=200)
    outputs = {s: str(tmp_path / "res" / f"{s}.parquet") for s in ("train", "val", "test", "pool")}
    with caplog.at_level(logging.WARNING, logger="beluga.steps.data"):
        data_steps.prepare_iid(iid={"source": "qqp", "path": str(folder), "seed": 42}, task_type="para",
                               outputs=outputs, out_source=str(tmp_path / "res" / "source.json"), task="para")
    rec = json.loads((tmp_path / "res" / "source.json").read_text())
    rows = [rec["rows"][s] for s in ("train", "val", "test")]
    assert sum(rows) == 200 and rec["fallback"] == fallback_note(rec)
    assert f"{rows[0]:,} / {rows[1]:,} / {rows[2]:,} train / val / test" in rec["fallback"]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == [f"para: i.i.d. data not the paper's (iid.source qqp): {rec['fallback']}"]


# ---------------------------------------------------------------- Table 3, scores.md, the report's page
def test_table3_footnote_names_task_and_source(tmp_path):
    long = make_long(tasks=("sent", "para"))
    records = {"sent": {"source": "sst2", "paper_split": True, "origin": "GLUE SST-2 (SST-2.zip)"},
               "para": quora_record(quora_folder(tmp_path / "qqp"))}
    notes = iid_data.fallback_lines(records)
    assert list(notes) == ["para"]
    assert notes["para"] == f"PARA (iid.source qqp): trained and tested on {fallback_note(records['para'])}."
    plain = table3_markdown(long)
    md = table3_markdown(long, iid_notes=notes)
    assert table3_markdown(long, iid_notes={}) == plain == table3_markdown(long, iid_notes={"read": "x"})
    assert "PARA† · i.i.d." in md and "PARA† · G_type" in md and "SENT · i.i.d." in md and "SENT†" not in md
    assert md.replace("PARA†", "PARA").startswith(plain)   # the table and legend, the footnote after them
    assert md.replace("PARA†", "PARA")[len(plain):] == (
        "\n† Not the paper's i.i.d. data (each task's iid/source.json; docs/DEVIATIONS.md, "
        f"'i.i.d. data files'):\n\n- {notes['para']}\n")
    tex = table3_latex(long, iid_notes=notes)
    assert r"\multicolumn{5}{c}{PARA$^\dagger$}" in tex and r"\multicolumn{5}{c}{SENT}" in tex
    assert r"$^\dagger$Not the paper's i.i.d.\ data" in tex and r"quora\_duplicate\_questions.tsv" in tex
    assert tex.count("{") == tex.count("}") and table3_latex(long, iid_notes={}) == table3_latex(long)


def test_scores_markdown_says_it_under_the_title():
    scores = pd.DataFrame([{"configuration": "iid", "method": "vanilla", "iid_score": 0.5,
                            **{f"{p}_{s}": 0.5 for p in ("s", "G") for s in SCENARIOS}}])
    line = "PARA (iid.source qqp): trained and tested on the Quora release; not the paper's GLUE QQP."
    md = scores_markdown(scores, "para", iid_note=line).splitlines()
    assert md[:4] == ["# PARA: scores (×100)", "", f"**Not the paper's i.i.d. data**: {line} (iid/source.json; "
                      "docs/DEVIATIONS.md, 'i.i.d. data files')", ""]
    assert "Not the paper's" not in scores_markdown(scores, "para")


def test_report_page_and_run_end_lines(tmp_path):
    para = quora_record(quora_folder(tmp_path / "qqp"))
    sent = {"source": "sst2", "paper_split": True, "origin": "GLUE SST-2 (SST-2.zip)", "split": "halved",
            "rows": {"train": 67_349, "val": 436, "test": 436}}
    html = iid_data.iid_data_html({"sent": sent, "para": para})
    assert "<div class='warn'><p><strong>Not the paper's i.i.d. data</strong>" in html
    assert "<td>67,349 / 436 / 436</td><td>yes</td>" in html
    assert "<tr class=fallback><td>PARA</td>" in html and "<td>363,784 / 20,134 / 20,125</td><td>no: fallback" in html
    assert "class='warn'" not in iid_data.iid_data_html({"sent": sent})
    paths = {}
    for task, rec in (("sent", sent), ("para", para)):
        paths[task] = tmp_path / task / "source.json"
        paths[task].parent.mkdir()
        paths[task].write_text(json.dumps(rec))
    paths["read"] = tmp_path / "read" / "source.json"    # not prepared (a target that did not need it)
    lines = iid_data.run_end_lines(paths)
    assert lines == ["BELUGA warning: the i.i.d. data of 1 task(s) are not the paper's; Table 3 and scores.md say "
                     "so in a footnote (each task's iid/source.json; docs/DEVIATIONS.md, 'i.i.d. data files'):",
                     "  " + iid_data.fallback_line("para", para)]
    assert iid_data.run_end_lines({"sent": paths["sent"], "read": paths["read"]}) == []
    paths["read"].parent.mkdir()
    paths["read"].write_text("{not json")
    lines = iid_data.run_end_lines(paths)
    assert lines[0].startswith("BELUGA warning: the i.i.d. data of 2 task(s)")
    assert lines[2].startswith(f"  READ: iid source record {paths['read']}: field '(top level)': cannot be read")


# ---------------------------------------------------------------- the cost plan
@needs_shared
def test_plan_counts_the_papers_sizes_for_a_fallback(tmp_path):
    """tiny_para.yaml with a 200-pair Quora-shaped fallback, no n_train cap and all of D_train in the
    mix: the IID job trains on 363,846 pairs (GLUE QQP's train file; the folder not read) instead of the
    fallback's, and each
    IID->(IID+T) fold job on its suite sequences plus those 363,846; val / test stay capped (10 / 20)."""
    from beluga.workflow.cost import REFERENCE
    from beluga.workflow.plan import load_config, plan

    qqp = quora_folder(tmp_path / "qqp", n=200)
    text = (REPO / "tests" / "configs" / "tiny_para.yaml").read_text().replace("../shared/data/iid/qqp", str(qqp))
    cfg = yaml.safe_load(text.replace("../shared/data", str(SHARED)))
    cfg["tasks"]["para"]["iid"].pop("n_train")
    cfg["training"]["iid_in_mix"] = None
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(cfg))
    config = load_config(str(tmp_path / "c.yaml"))
    got = {}
    for assume in (True, False):
        used = {}
        got[assume] = ({ln.rule: ln for ln in plan(config, REFERENCE["cpu"], assume_paper_data=assume,
                                                   iid_used=used)}, used["para"])
    on, off = got[True][0], got[False][0]
    found = int(off["train_iid"].train_seqs)          # epochs: 1
    assert on["train_iid"].train_seqs == 363_846 and 150 < found < 200
    jobs = on["finetune"].jobs
    assert off["finetune"].jobs == jobs == 5          # the seen fold and 4 func folds
    assert on["finetune"].train_seqs - off["finetune"].train_seqs == jobs * (363_846 - found)
    assert got[True][1].startswith("363,846 / 10 / 20 train / val / test, the paper's GLUE QQP (QQP-clean.zip")
    assert "the data folder is not read" in got[True][1]   # the paper's sizes, whatever is staged
    assert got[False][1].startswith(f"{found:,} / ") and "not the paper's data" in got[False][1]
