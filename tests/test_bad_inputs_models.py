"""The bad-input catalogue, models and output folders (issue 25, round 3; the
conventions of tests/test_bad_inputs.py): every bad model folder, model /
suite mismatch and --out folder ends with one line naming the file and the
field, a non-zero exit (or an exception), and no complete-looking output --
nothing written, an earlier run's folder left as it was, no input
overwritten.

- a model folder without tokenizer files (transformers would build a
  5-token tokenizer: every word [UNK]): ``test`` and the pipeline's model load;
- a model whose head would be initialised at random (a classifier on a READ
  suite), a model that records another task type (SENT model on PARA), a class
  count the suite cannot read: ``test`` and the pipeline's prediction job;
- the task record every saved model carries (config.json ``beluga_task``);
- ``max_length`` beyond the model's positions: ``test`` and the jobs;
- ``test`` / ``score`` into an existing --out: whole or nothing, never beside
  files of others, never over an input; ``suite export`` over its input.
- a causal LM's label words that its tokenizer makes one (``Good`` / ``good``
  to a tokenizer that lower-cases: every input would get [0.5, 0.5]).
"""

import hashlib
import json
import os
import shutil
from pathlib import Path

import pandas as pd
import pytest
from conftest import case, fold_run, make_tiny_suite, score_argv

from beluga.cli import main
from beluga.core.errors import BelugaError, ModelError, OutputError
from beluga.core.io import write_parquet
from beluga.suites.format import save_suite

# ---------------------------------------------------------------- helpers (as tests/test_bad_inputs.py)


def check_exc(excinfo, *needles: str) -> str:
    msg = str(excinfo.value)
    print(msg)
    assert "\n" not in msg, msg
    assert all(n in msg for n in needles), (needles, msg)
    return msg


def cli_error(capsys, argv: list, *needles: str) -> str:
    """``main(argv)`` in this process: exit status 2, one ``error: `` line holding every needle, no traceback."""
    capsys.readouterr()
    rc = main([str(a) for a in argv])
    err = capsys.readouterr().err
    assert rc == 2, err[-2000:]
    lines = [ln for ln in err.splitlines() if ln.startswith("error: ")]
    assert len(lines) == 1, err[-2000:]
    print(lines[0])
    assert all(n in lines[0] for n in needles), (needles, lines[0])
    assert "Traceback" not in err
    return lines[0]


def digest(folder: Path) -> dict[str, str]:
    """name -> SHA-256 of every file under ``folder`` (an earlier run's output, to compare after a failure)."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def no_new_files(parent: Path, before: set[str]) -> None:
    """Nothing but hidden temporaries (``.name.*.tmp``) appeared under ``parent``."""
    now = {str(p.relative_to(parent)) for p in parent.rglob("*")}
    stray = [p for p in now - before if not any(part.startswith(".") for part in Path(p).parts)]
    assert not stray, stray


def record_task(folder: Path, task_type: str, head: str = "classification", num_labels: int = 2) -> Path:
    """Write the task record (config.json ``beluga_task``) by hand, as save_model(task_type=...) does."""
    cfg = json.loads((folder / "config.json").read_text())
    cfg["beluga_task"] = {"task_type": task_type, "head": head, "num_labels": num_labels}
    (folder / "config.json").write_text(json.dumps(cfg, indent=2))
    return folder


def name_classes(folder: Path, *names: str) -> Path:
    """config.json ``id2label`` / ``label2id`` naming the classes, as a hub model of another project has them."""
    cfg = json.loads((folder / "config.json").read_text())
    cfg["id2label"] = {str(i): n for i, n in enumerate(names)}
    cfg["label2id"] = {n: i for i, n in enumerate(names)}
    (folder / "config.json").write_text(json.dumps(cfg, indent=2))
    return folder


def para_suite() -> pd.DataFrame:
    """A tiny QQP-like suite: question pairs, duplicate or not (MFT) and invariance to a typo (INV)."""
    rows = []
    for i in range(3):
        rows.append({**case(f"dup-{i}", "synonyms", "Vocabulary", "MFT", [f"How do I cook rice {i}?"], [1]),
                     "inputs_b": [f"How should I cook rice {i}?"]})
        rows.append({**case(f"typo-{i}", "typos", "Robustness", "INV",
                            [f"Is Paris big {i}?", f"Is Pairs big {i}?"], expect="inv", params={"tolerance": 0.1}),
                     "inputs_b": [f"Is Paris large {i}?", f"Is Paris large {i}?"]})
    return pd.DataFrame(rows)


def qa_suite() -> pd.DataFrame:
    return pd.DataFrame([{"case_id": "q1", "functionality": "f", "capability": "c", "test_type": "MFT",
                          "inputs": ["Anne is taller than Bob.", "Bob is taller than Anne."],
                          "inputs_b": ["Who is taller?", "Who is taller?"], "labels": None, "expect": "squad",
                          "expect_params": json.dumps({}), "agg_fn": "all", "meta": None,
                          "answers": ["Anne", "Bob"]}])


# ---------------------------------------------------------------- tiny models and suites (built once)
@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """Tiny model folders: a SENT classifier without a task record (its classes named in config.json, as a hub
    model's), the same without tokenizer files, a QA model, a three-class classifier (named too)."""
    from beluga.model.modeling import TINY_RANDOM, load_model, save_model, set_seed

    root = tmp_path_factory.mktemp("models")
    set_seed(0)
    clf, tok = load_model(TINY_RANDOM, 2)
    save_model(clf, tok, root / "clf")
    name_classes(root / "clf", "NEGATIVE", "POSITIVE")
    shutil.copytree(root / "clf", root / "no_tokenizer")
    for f in (root / "no_tokenizer").iterdir():
        if f.name not in ("config.json", "model.safetensors"):
            f.unlink()
    qa, tok = load_model(TINY_RANDOM, 0, head="qa")
    save_model(qa, tok, root / "qa")
    three, tok = load_model(TINY_RANDOM, 3)
    save_model(three, tok, root / "three")
    name_classes(root / "three", "negative", "neutral", "positive")
    return root


@pytest.fixture(scope="module")
def suites(tmp_path_factory):
    root = tmp_path_factory.mktemp("suites")
    save_suite(make_tiny_suite(2), root / "sent.parquet")
    save_suite(qa_suite(), root / "qa.parquet")
    save_suite(para_suite(), root / "para.parquet")
    return root


def copy_model(models: Path, name: str, tmp_path: Path) -> Path:
    dst = tmp_path / "models" / name
    shutil.copytree(models / name, dst)
    return dst


def run_test(out: Path, model: Path, suite: Path, task: str, *extra) -> int:
    return main(["test", "--model", str(model), "--suite", str(suite), "--out", str(out), "--task", task,
                 *map(str, extra)])


# ---------------------------------------------------------------- the test command: model folders
def test_test_model_folder_without_tokenizer(models, suites, tmp_path, capsys):
    out = tmp_path / "out"
    line = cli_error(capsys, ["test", "--model", models / "no_tokenizer", "--suite", suites / "sent.parquet",
                              "--out", out, "--task", "sent"],
                     f"model {models / 'no_tokenizer'}", "field 'tokenizer'", "5 tokens", "vocab_size is 30522")
    assert "tokenizer files" in line
    assert not out.exists()


def test_test_classifier_on_read_suite(models, suites, tmp_path, capsys):
    """transformers would attach a random QA head (qa_outputs.weight MISSING) and the failure rates would be noise."""
    out = tmp_path / "out"
    line = cli_error(capsys, ["test", "--model", models / "clf", "--suite", suites / "qa.parquet", "--out", out,
                              "--task", "read", "--max-length", 256],
                     f"model {models / 'clf'}", "field 'head'", "qa_outputs.weight", "initialised at random")
    assert "classifier.weight" in line and "'read'" in line
    assert not out.exists()


def test_test_qa_model_on_sent_suite(models, suites, tmp_path, capsys):
    out = tmp_path / "out"
    cli_error(capsys, ["test", "--model", models / "qa", "--suite", suites / "sent.parquet", "--out", out,
                       "--task", "sent"], f"model {models / 'qa'}", "field 'head'", "classifier.weight")
    assert not out.exists()


def test_test_qa_model_on_read_suite_with_the_defaults(models, suites, tmp_path):
    """The right model runs with the default --max-length (128): the window stride defaults below it (it was
    fixed at 128, which no 128-token window can hold)."""
    model = record_task(copy_model(models, "qa", tmp_path), "read", "qa", 0)
    out = tmp_path / "out"
    assert run_test(out, model, suites / "qa.parquet", "read") == 0
    assert sorted(os.listdir(out)) == sorted(["predictions.parquet", "cases.parquet", "functionalities.csv",
                                              "summary.md", "summary.html", "run.json"])


def test_test_recorded_task_mismatch(models, suites, tmp_path, capsys):
    """A SENT model (task recorded in config.json) on a PARA suite: both are two-class classifiers, only the
    record tells."""
    model = record_task(copy_model(models, "clf", tmp_path), "sent")
    out = tmp_path / "out"
    cli_error(capsys, ["test", "--model", model, "--suite", suites / "para.parquet", "--out", out, "--task", "para"],
              f"model {model}", "field 'task'", "'sent'", "not 'para'")
    assert not out.exists()
    # the same model on the task it records runs; a model without a record is read by its classes' names: SENT
    # names on a PARA suite are refused, unless --label-order says which class is which
    assert run_test(out, model, suites / "sent.parquet", "sent") == 0
    assert (out / "summary.html").exists()
    cli_error(capsys, ["test", "--model", models / "clf", "--suite", suites / "para.parquet", "--out",
                       tmp_path / "out2", "--task", "para"], f"model {models / 'clf'}", "field 'id2label'",
              "NEGATIVE, POSITIVE", "--label-order not_duplicate,duplicate")
    assert run_test(tmp_path / "out2", models / "clf", suites / "para.parquet", "para",
                    "--label-order", "not_duplicate,duplicate") == 0


def test_test_class_count_the_suite_cannot_read(models, suites, tmp_path, capsys):
    out = tmp_path / "out"
    cli_error(capsys, ["test", "--model", models / "three", "--suite", suites / "para.parquet", "--out", out,
                       "--task", "para"], f"model {models / 'three'}", "field 'num_labels'", "3 classes")
    assert not out.exists()
    assert run_test(out, models / "three", suites / "sent.parquet", "sent") == 0   # SENT reads three classes


def test_test_max_length_beyond_positions(models, suites, tmp_path, capsys):
    out = tmp_path / "out"
    cli_error(capsys, ["test", "--model", models / "clf", "--suite", suites / "sent.parquet", "--out", out,
                       "--task", "sent", "--max-length", 600],
              f"model {models / 'clf'}", "field '--max-length'", "600 tokens", "512 positions")
    assert not out.exists()


def test_check_max_length_reads_config_only(tmp_path):
    """The reusable check (beluga.model.config.check_max_length, also beluga.model.modeling's): RoBERTa's offset,
    DeBERTa's relative positions, a folder without config.json (not checked), tiny-random."""
    from beluga.model import modeling
    from beluga.model.config import check_max_length

    assert modeling.check_max_length is check_max_length
    rob = tmp_path / "roberta"
    rob.mkdir()
    (rob / "config.json").write_text(json.dumps({"model_type": "roberta", "max_position_embeddings": 514,
                                                 "pad_token_id": 1}))
    assert check_max_length(rob, 512, "max_length") == 512
    with pytest.raises(ModelError) as excinfo:
        check_max_length(rob, 513, "tasks.sent.training.max_length")
    check_exc(excinfo, f"model {rob}", "field 'tasks.sent.training.max_length'", "513 tokens", "512 positions",
              "roberta reserves 2")
    deb = tmp_path / "deberta"
    deb.mkdir()
    (deb / "config.json").write_text(json.dumps({"model_type": "deberta-v2", "max_position_embeddings": 512,
                                                 "position_biased_input": False}))
    assert check_max_length(deb, 4096) is None
    assert check_max_length(tmp_path / "nowhere", 4096) is None
    with pytest.raises(ModelError) as excinfo:
        check_max_length("tiny-random", 513, "max_length")
    check_exc(excinfo, "model tiny-random", "field 'max_length'")


# ---------------------------------------------------------------- the pipeline's jobs
@pytest.fixture
def iid_train(tmp_path):
    path = tmp_path / "train.parquet"
    write_parquet(pd.DataFrame({"example_id": ["a", "b"], "text": ["good", "bad"], "label": [1, 0]}), path)
    return path


def _train_iid(model: str, iid_train: Path, out_dir: Path, max_length: int = 16, task_type: str = "sent"):
    from beluga.steps import train as train_steps

    run = fold_run(hparams={"lr": 1e-3, "batch_size": 2, "epochs": 1}, seed=1, task="sent", configuration="iid",
                   partition="standard", model=model, max_length=max_length, task_type=task_type)
    train_steps.train_iid(run=run.to_dict(), train=str(iid_train), out_model=str(out_dir))


def test_pipeline_model_without_tokenizer(models, iid_train, tmp_path):
    """tasks.<id>.model a folder without tokenizer files: the job stops before training."""
    out_dir = tmp_path / "results" / "model"
    with pytest.raises(ModelError) as excinfo:
        _train_iid(str(models / "no_tokenizer"), iid_train, out_dir)
    check_exc(excinfo, f"model {models / 'no_tokenizer'}", "field 'tokenizer'", "5 tokens")
    assert not out_dir.exists()


def test_pipeline_max_length_beyond_positions(iid_train, tmp_path):
    out_dir = tmp_path / "results" / "model"
    with pytest.raises(ModelError) as excinfo:
        _train_iid("tiny-random", iid_train, out_dir, max_length=1000)
    check_exc(excinfo, "model tiny-random", "field 'max_length'", "1000 tokens", "512 positions")
    assert not out_dir.exists()


def test_pipeline_saved_model_records_its_task_and_start_model_checks_it(iid_train, tmp_path):
    """The IID model records task type and head in config.json; a job of another task type starting from it (or
    using it as its model) stops in one line; a backbone without a record still trains."""
    from beluga.model.job import start_job
    from beluga.train.fold import load_start_model

    iid = tmp_path / "results" / "iid"
    _train_iid("tiny-random", iid_train, iid)
    cfg = json.loads((iid / "config.json").read_text())
    assert cfg["beluga_task"] == {"task_type": "sent", "head": "classification", "num_labels": 2}
    job = start_job(1, "fp32")
    with pytest.raises(ModelError) as excinfo:
        load_start_model(fold_run(task_type="para", max_length=16), job, num_labels=2, start=str(iid))
    check_exc(excinfo, f"model {iid}", "field 'task'", "'sent'", "not 'para'")
    with pytest.raises(ModelError) as excinfo:
        load_start_model(fold_run(task_type="read", model=str(iid), max_length=16), job, num_labels=0, head="qa")
    check_exc(excinfo, f"model {iid}", "field 'task'", "'sent'", "not 'read'")
    model, _ = load_start_model(fold_run(task_type="sent", max_length=16), job, num_labels=2, start=str(iid))
    assert model.config.num_labels == 2


def test_pipeline_start_model_without_its_head(models, tmp_path):
    """A trained start model (the IID model) whose head weights are not in the folder is refused: training would
    start from a random head; a pre-trained backbone (no head) as the task's model still loads."""
    from beluga.model.job import start_job
    from beluga.train.fold import load_start_model

    job = start_job(1, "fp32")
    with pytest.raises(ModelError) as excinfo:
        load_start_model(fold_run(task_type="sent", max_length=16), job, num_labels=2, start=str(models / "qa"))
    check_exc(excinfo, f"model {models / 'qa'}", "field 'head'", "classifier.weight")
    model, _ = load_start_model(fold_run(task_type="sent", model=str(models / "qa"), max_length=16), job,
                                num_labels=2)
    assert model.config.num_labels == 2


def test_pipeline_predict_job_refuses_random_head(models, tmp_path):
    """rules/evaluate.smk's predict on a classifier for a READ task: one line, before any input is read."""
    from beluga.steps import evaluate as evaluate_steps

    target = tmp_path / "results" / "predictions.parquet"
    with pytest.raises(ModelError) as excinfo:
        evaluate_steps.predict(task_type="read", model=str(models / "clf"), suite=str(tmp_path / "suite.parquet"),
                               split=str(tmp_path / "split.parquet"), iid_test=str(tmp_path / "iid.parquet"),
                               functionalities=None, batch_size=8, max_length=64, doc_stride=16, threads=1,
                               precision="fp32", out_predictions=str(target), out_run=str(tmp_path / "r.json"))
    check_exc(excinfo, f"model {models / 'clf'}", "field 'head'", "qa_outputs.weight")
    with pytest.raises(ModelError) as excinfo:
        evaluate_steps.predict(task_type="sent", model=str(models / "clf"), suite=str(tmp_path / "suite.parquet"),
                               split=str(tmp_path / "split.parquet"), iid_test=str(tmp_path / "iid.parquet"),
                               functionalities=None, batch_size=8, max_length=4096, doc_stride=16, threads=1,
                               precision="fp32", out_predictions=str(target), out_run=str(tmp_path / "r.json"))
    check_exc(excinfo, f"model {models / 'clf'}", "field 'max_length'", "4096 tokens")
    assert not target.exists()


# ---------------------------------------------------------------- output folders: whole or nothing
def test_test_failing_midway_leaves_the_earlier_run_whole(models, suites, tmp_path, capsys, monkeypatch):
    """A second ``test`` into the same --out that fails while writing (here: the disk fills at summary.html) leaves
    the first run's five files exactly as they were, not three new files beside two old ones."""
    import errno

    from beluga.core import io

    out = tmp_path / "out"
    assert run_test(out, models / "clf", suites / "sent.parquet", "sent", "--max-cases-per-functionality", 1) == 0
    before = digest(out)
    assert len(before) == 6   # TEST_OUTPUTS, run.json included
    real = io.write_text

    def full_disk(text, path):
        if Path(path).name.startswith("summary.html") or ".summary.html." in Path(path).name:
            e = OutputError(f"output file {path}: field 'path': cannot be written: No space left on device (ENOSPC)")
            e.errno = errno.ENOSPC
            raise e
        return real(text, path)
    monkeypatch.setattr(io, "write_text", full_disk)
    line = cli_error(capsys, ["test", "--model", models / "clf", "--suite", suites / "sent.parquet", "--out", out,
                              "--task", "sent"], "field 'path'", "No space left on device")
    assert f"{out / 'summary.html'}" in line
    assert digest(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]          # no staging folder left either
    # the disk has room again: the run replaces the folder, whole
    monkeypatch.undo()
    assert run_test(out, models / "clf", suites / "sent.parquet", "sent") == 0
    after = digest(out)
    assert sorted(after) == sorted(before) and after["cases.parquet"] != before["cases.parquet"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_test_refuses_files_of_others_and_the_working_directory(models, suites, tmp_path, capsys, monkeypatch):
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    cli_error(capsys, ["test", "--model", models / "clf", "--suite", suites / "sent.parquet", "--out", out,
                       "--task", "sent"], f"output folder {out}", "field '--out'", "notes.txt")
    assert sorted(os.listdir(out)) == ["notes.txt"]
    (out / "notes.txt").unlink()
    monkeypatch.chdir(out)
    cli_error(capsys, ["test", "--model", models / "clf", "--suite", suites / "sent.parquet", "--out", ".",
                       "--task", "sent"], "output folder .", "field '--out'", "working directory")
    assert os.listdir(out) == []


def test_test_never_overwrites_its_suite_or_model(models, suites, tmp_path, capsys):
    """``test --suite d/predictions.parquet --out d`` would replace the suite by the predictions."""
    d = tmp_path / "d"
    d.mkdir()
    suite = d / "predictions.parquet"
    shutil.copy(suites / "sent.parquet", suite)
    before = digest(d)
    cli_error(capsys, ["test", "--model", models / "clf", "--suite", suite, "--out", d, "--task", "sent"],
              f"output folder {d}", "field '--out'", f"suite {suite}")
    assert digest(d) == before
    # through a symbolic link to the folder, and the model folder as --out
    (tmp_path / "link").symlink_to(d)
    cli_error(capsys, ["test", "--model", models / "clf", "--suite", suite, "--out", tmp_path / "link",
                       "--task", "sent"], "field '--out'", "suite")
    assert digest(d) == before
    model = copy_model(models, "clf", tmp_path)
    before = digest(model)
    cli_error(capsys, ["test", "--model", model, "--suite", suites / "sent.parquet", "--out", model, "--task", "sent"],
              f"output folder {model}", "field '--out'", "model folder")
    assert digest(model) == before


def test_score_failing_midway_leaves_the_earlier_run_whole(suites, tmp_path, capsys, monkeypatch):
    import errno

    from beluga.core import io

    out = tmp_path / "scored"
    argv = score_argv(suites / "sent.parquet", tmp_path, out)
    assert main(argv) == 0
    before = digest(out)
    assert sorted(before) == ["cases.parquet", "functionalities.csv", "run.json", "summary.html", "summary.md"]

    def full_disk(df, path):
        e = OutputError(f"output file {path}: field 'path': cannot be written: No space left on device (ENOSPC)")
        e.errno = errno.ENOSPC
        raise e
    monkeypatch.setattr(io, "write_csv", full_disk)
    cli_error(capsys, argv, f"output file {out / 'functionalities.csv'}", "field 'path'", "No space left on device")
    assert digest(out) == before


def test_score_never_writes_beside_its_inputs(suites, tmp_path, capsys):
    """``score --predictions d/predictions.parquet --out d``: the folder holds an input (and files score does not
    write); refused, nothing written."""
    suite = make_tiny_suite(2)
    rows = [(r.case_id, j, [0.2, 0.8]) for r in suite.itertuples(index=False) for j in range(len(r.inputs))]
    d = tmp_path / "d"
    d.mkdir()
    preds = d / "predictions.parquet"
    pd.DataFrame(rows, columns=["case_id", "input_idx", "probs"]).to_parquet(preds)
    before = digest(d)
    cli_error(capsys, ["score", "--suite", suites / "sent.parquet", "--predictions", preds, "--out", d,
                       "--task", "sent"], f"output folder {d}", "field '--out'", f"predictions {preds}")
    assert digest(d) == before
    # a predictions file named like an output of score
    shutil.move(preds, d / "cases.parquet")
    before = digest(d)
    cli_error(capsys, ["score", "--suite", suites / "sent.parquet", "--predictions", d / "cases.parquet",
                       "--out", d, "--task", "sent"], "field '--out'", "predictions")
    assert digest(d) == before


def test_check_out_folder_unit(tmp_path):
    from beluga.cli.testing import TEST_OUTPUTS
    from beluga.core.io import check_out_folder

    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(BelugaError) as excinfo:
        check_out_folder("test", str(f), TEST_OUTPUTS, {})
    check_exc(excinfo, f"output folder {f}", "field '--out'", "is a file")
    d = tmp_path / "d"
    d.mkdir()
    (d / "summary.md").write_text("earlier")
    (d / ".summary.md.abc.tmp").write_text("leftover")
    check_out_folder("test", str(d), TEST_OUTPUTS, {"suite": str(tmp_path / "elsewhere.parquet")})   # an earlier run
    (d / "sub").mkdir()
    with pytest.raises(BelugaError) as excinfo:
        check_out_folder("test", str(d), TEST_OUTPUTS, {})
    check_exc(excinfo, "holds 1 file(s) test does not write (sub)")


# ---------------------------------------------------------------- suite export over its input
@pytest.mark.parametrize("how", ["same", "dot", "absolute", "symlink", "dotdot", "checklist"])
def test_suite_export_never_overwrites_its_input(tmp_path, capsys, monkeypatch, how):
    """The check that was already there (verified: relative / absolute / ./ / symlink / .. / --format checklist)."""
    monkeypatch.chdir(tmp_path)
    suite = make_tiny_suite(2)
    suite.to_json(tmp_path / "x.jsonl", orient="records", lines=True)
    before = digest(tmp_path)
    out = {"same": "x.jsonl", "dot": "./x.jsonl", "absolute": str(tmp_path / "x.jsonl"), "symlink": "link.jsonl",
           "dotdot": "sub/../x.jsonl", "checklist": "x.jsonl"}[how]
    if how == "symlink":
        (tmp_path / "link.jsonl").symlink_to(tmp_path / "x.jsonl")
        before = digest(tmp_path)
    if how == "dotdot":
        (tmp_path / "sub").mkdir()
    extra = ["--format", "checklist"] if how == "checklist" else ["--task", "sent"]
    cli_error(capsys, ["suite", "export", "--suite", "x.jsonl", "--out", out, *extra], "field '--out'",
              "input suite file itself")
    assert digest(tmp_path) == before


def test_suite_perturb_never_writes_over_its_input(tmp_path, capsys):
    """``suite perturb --out`` a hard link to its --input (another name, the same file): refused, the input kept."""
    src = tmp_path / "s.txt"
    src.write_text("The plot was extremely predictable.\nI hated the ending.\n")
    out = tmp_path / "s.parquet"
    os.link(src, out)
    before = digest(tmp_path)
    cli_error(capsys, ["suite", "perturb", "--input", src, "--perturbation", "add_negation", "--type", "DIR",
                       "--expect", "not_negative", "--out", out], f"output {out}", "field '--out'",
              f"is the input itself ({src}, the same file)")
    assert digest(tmp_path) == before


# ---------------------------------------------------------------- max_length at DAG time


def test_max_length_beyond_positions_stops_the_dry_run(tmp_path):
    """A task's max_length (global or its own) or a combinational variant's beyond the local model's
    positions stops ``snakemake -n`` in one line naming the config file, the field and the model."""
    import yaml
    from conftest import REPO, load_error

    from beluga.core.errors import ConfigError
    from beluga.workflow.dag import check_models

    base = yaml.safe_load((REPO / "config.yaml").read_text())
    cfg = {**base, "training": {"max_length": 64}, "combinational": {"max_length": 64, "variants": [
        {"name": "a"}, {"name": "b", "max_length": 700}]}}
    variants = {"a": {"model": "default", "max_length": 64}, "b": {"model": "default", "max_length": 700}}
    with pytest.raises(ConfigError) as e:
        check_models(cfg, variants, ["c.yaml"])
    check_exc(e, "config file c.yaml", "'combinational.variants[1].max_length'", "700", "512 positions")
    variants["b"]["max_length"] = 64
    check_models(cfg, variants, ["c.yaml"])   # fits
    cfg["tasks"] = {"sent": {**base["tasks"]["sent"], "training": {"max_length": 513}}}
    with pytest.raises(ConfigError) as e:
        check_models(cfg, variants, ["c.yaml"])
    check_exc(e, "'tasks.sent.training.max_length'", "513", "model default")

    # the dry run's check (beluga.workflow.config.load_workflow, in-process)
    line, cfg_file = load_error(tmp_path / "wd", {**base, "results": str(tmp_path / "results"),
                                                  "training": {"max_length": 600}}, "field 'training.max_length'")
    assert str(cfg_file) in line and "600 tokens" in line, line
    assert not (tmp_path / "results").exists()


# ---------------------------------------------------------------- re-tried as a new user (issue 25)


def test_local_model_without_tokenizer_stops_the_dry_run(models, tmp_path):
    """A tokenizer-less folder as tasks.<id>.model is refused while the DAG is built (and by the plan),
    not 7 s into train_iid; a missing model path names the config file too."""
    import yaml
    from conftest import REPO

    from beluga.core.errors import ConfigError
    from beluga.workflow.dag import check_models
    from beluga.workflow.plan import plan_command

    base = yaml.safe_load((REPO / "config.yaml").read_text())
    cfg = {**base, "training": {"max_length": 64}, "combinational": {"max_length": 64}}
    cfg["tasks"] = {"sent": {**base["tasks"]["sent"], "model": str(models / "no_tokenizer")}}
    with pytest.raises(ConfigError) as e:
        check_models(cfg, {}, ["c.yaml"])
    check_exc(e, "config file c.yaml", f"model {models / 'no_tokenizer'}", "'tasks.sent.model'", "tokenizer files")
    cfg["tasks"]["sent"]["model"] = str(models / "clf")
    check_models(cfg, {}, ["c.yaml"])   # a complete folder passes
    cfg["tasks"]["sent"]["model"] = str(tmp_path / "nowhere" / "model")
    with pytest.raises(ConfigError) as e:
        check_models(cfg, {}, ["c.yaml"])
    check_exc(e, "config file c.yaml", "'tasks.sent.model'", "path does not exist")
    # the plan runs the same check (it priced this config before)
    cfg_file = tmp_path / "c.yaml"
    cfg_file.write_text(yaml.safe_dump({**base, "training": {"max_length": 1000}}))
    with pytest.raises(BelugaError) as e:
        plan_command(str(cfg_file))
    check_exc(e, str(cfg_file), "'training.max_length'", "1000 tokens")


def test_head_refusal_is_the_only_output(models, suites, tmp_path, capfd):
    """transformers' load report (which suggests training the new head) and progress bar stay silent: the
    one error line is all the user sees."""
    rc = main(["test", "--model", str(models / "clf"), "--suite", str(suites / "qa.parquet"), "--out",
               str(tmp_path / "out"), "--task", "read", "--max-length", "256"])
    captured = capfd.readouterr()
    assert rc == 2
    lines = [ln for ln in (captured.out + captured.err).splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and "field 'head'" in lines[0], lines


def test_malformed_task_record_is_refused(models, suites, tmp_path, capsys):
    model = copy_model(models, "clf", tmp_path)
    cfg = json.loads((model / "config.json").read_text())
    cfg["beluga_task"] = "sent"
    (model / "config.json").write_text(json.dumps(cfg))
    cli_error(capsys, ["test", "--model", model, "--suite", suites / "sent.parquet", "--out", tmp_path / "out",
                       "--task", "sent"], f"model {model}", "field 'beluga_task'", "not a task record")
    assert not (tmp_path / "out").exists()


def test_test_option_minimum_names_the_option(models, suites, tmp_path, capsys):
    """The command line's number: argparse's one line naming the option; the package's own check (test_command
    called from Python) names it too."""
    from beluga.cli.testing import test_command

    with pytest.raises(SystemExit) as excinfo:
        main(["test", "--model", str(models / "clf"), "--suite", str(suites / "sent.parquet"), "--out",
              str(tmp_path / "out"), "--task", "sent", "--max-length", "4"])
    err = capsys.readouterr().err.strip().splitlines()
    assert excinfo.value.code == 2 and "argument --max-length: '4' is not a whole number >= 8" in err[-1], err
    with pytest.raises(BelugaError, match="field '--max-length': 4 is below its minimum 8"):
        test_command(str(models / "clf"), str(suites / "sent.parquet"), str(tmp_path / "out"), "sent", max_length=4)
    assert not (tmp_path / "out").exists()


def test_suite_export_onto_a_folder(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    make_tiny_suite(2).to_json(tmp_path / "x.jsonl", orient="records", lines=True)
    (tmp_path / "p3").mkdir()
    cli_error(capsys, ["suite", "export", "--suite", "x.jsonl", "--out", "p3", "--task", "sent"],
              "export p3", "field '--out'", "is a folder")
    assert list((tmp_path / "p3").iterdir()) == []


def test_combinational_job_messages_name_the_variant_field():
    """A variant's own label words refused in its job (the tokenizer makes them one) name the variant's
    field, not the block's."""
    from beluga.analyses import combinational as comb

    block = {"variants": [{"name": "a"}, {"name": "b", "label_words": {"fst": "x", "sec": "y", "neu": "z"}}]}
    assert comb.variant_fields(block, "b")["label_words"] == "combinational.variants[1].label_words"
    assert comb.variant_fields(block, "a")["label_words"] == "combinational.label_words"
    assert comb.variant_fields(block, "b")["max_length"] == "combinational.max_length"

    class OneToken:   # every word the same unknown token
        def __call__(self, texts, text_pair=None, **_):
            return {"input_ids": [[0] * 3 for _ in texts]}

    pool = pd.DataFrame({"example_id": ["e1"], "text": ["fine"], "role": ["fst"]})
    with pytest.raises(BelugaError) as e:
        comb.fit_inputs(pool, {"fst": "😀", "sec": "😡", "neu": "😐"}, "{S} It is {LABEL}.", OneToken(), 64,
                        fields=comb.variant_fields(block, "b"))
    check_exc(e, "field 'combinational.variants[1].label_words'", "give the same tokens")


# ---------------------------------------------------------------- a causal LM's label words, as its tokenizer reads
def test_test_label_words_the_tokenizer_makes_one(suites, tmp_path, capsys):
    """``test --label-words negative=Good positive=good`` with a causal LM whose tokenizer lower-cases: the two
    words are the same continuation tokens, every input would get [0.5, 0.5] and every case fail with exit 0;
    refused in one line naming the model, the option and both words, nothing written. The same model with
    words its tokenizer tells apart (sharing their first tokens) runs."""
    from tiny_decoder import build_decoder

    texts = [x for xs in make_tiny_suite(2)["inputs"] for x in xs] + ["Review: Sentiment:"]
    model = build_decoder(tmp_path / "lower_lm", texts, lowercase=True)
    argv = ["test", "--model", model, "--suite", suites / "sent.parquet", "--out", tmp_path / "out", "--task", "sent",
            "--prompt", "Review: {text} Sentiment:", "--precision", "fp32", "--label-words"]
    cli_error(capsys, [*argv, "negative=Good", "positive=good"], f"model {model}", "field '--label-words'",
              "negative='Good' and positive='good' are the same tokens", "could not be told apart")
    assert not (tmp_path / "out").exists()
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model)
    a, b = tok.encode(" terrible"), tok.encode(" terrific")
    assert a != b and a[0] == b[0]                          # the first token shared, the whole words not
    assert main([str(a) for a in [*argv, "negative=terrible", "positive=terrific"]]) == 0
    assert (tmp_path / "out" / "predictions.parquet").is_file()
