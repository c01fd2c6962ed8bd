"""The bad-input catalogue, OOD sets and offline sources (issue 25, C1): every
case ends with one line naming the config file (config) or the data file and
the field, a non-zero exit (or an exception), and no complete-looking output,
found as early as it can be known — while the DAG is built (``snakemake -n``)
when the config and a file's header say enough.

- OOD set names that are column or split names of the OOD outputs
  (``ood_eval.RESERVED_SET_NAMES``), or another set's column;
- OOD files (and local i.i.d. tables) whose columns do not match the task's
  input shape: a PARA set without a second text, a SENT set with one, a READ
  set without context / question / answers; a source made for another task;
- the related papers' sets and the task's labels: ``source: sick`` on a
  similarity task (docs/OOD.md) passes the dry run and is read as its
  relatedness score, scored by correlation; another NLI set on a similarity
  task (``snli``: no score), or SICK on a PARA task, stops the dry run with the
  line rule ``prepare_ood`` would stop with;
- with the hub offline (``HF_HUB_OFFLINE``), an ``hf:`` i.i.d. source, an OOD
  ``hub`` set or a hub model that is not in the local cache; a cached one is
  used (no network probe at DAG time).
- ``ood-rank`` (issue 36): systems with different metric sets on one dataset
  stop with one line naming the block and the systems (``--mixed-metrics``
  allows it, and the output says so); ``--out`` never replaces the scores file
  (the folder holding it, or an earlier run's ranking.csv read back as the
  scores) and is written as a whole or not at all; GLUE-X's published shape
  (one overall ID score per backbone) ranks (the hand computation is
  tests/test_ood.py).
"""

import json
import socket
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml
from conftest import ENV, REPO, SNAKEMAKE, config_with, dry_load, hf_flags, load_error, output

from beluga.analyses import ood_eval, ood_report
from beluga.cli import main
from beluga.core.errors import BelugaError, ConfigError, DataError
from beluga.core.io import write_parquet
from beluga.core.tasks import get_task_type
from beluga.data import ood_sets
from beluga.data.iid import load_splits
from beluga.heads import get_head
from beluga.steps import ood as ood_steps
from beluga.workflow import dag

COMMIT = "0123456789abcdef0123456789abcdef01234567"


# ---------------------------------------------------------------- helpers (as tests/test_bad_inputs.py)
def smk(workdir: Path, cfg: dict, *args, env: dict | None = None):
    """snakemake with ``cfg`` written next to ``workdir`` as its config file, in ``env`` (default ENV)."""
    workdir.mkdir(parents=True, exist_ok=True)
    cfg_file = workdir.parent / f"{workdir.name}.yaml"
    cfg_file.write_text(yaml.safe_dump(cfg, sort_keys=False))
    cmd = [SNAKEMAKE, "-s", str(REPO / "Snakefile"), "-d", str(workdir), "--configfile", str(cfg_file), *args]
    return subprocess.run(cmd, capture_output=True, text=True, env=env or ENV, timeout=300), cfg_file


def one_line(text: str, *needles: str) -> str:
    lines = [ln for ln in text.splitlines() if all(n in ln for n in needles)]
    assert len(lines) == 1, f"expected one line with {needles}, got {lines}:\n{text[-3000:]}"
    print(lines[0])
    return lines[0]


def check_workflow_error(out: subprocess.CompletedProcess, *needles: str) -> str:
    text = output(out)
    assert out.returncode != 0, text[-2000:]
    line = one_line(text, *needles)
    lines = text.splitlines()
    i = lines.index(line)
    assert i > 0 and lines[i - 1].startswith("WorkflowError"), text[-2000:]
    for noise in ("Failed validating", "On instance", "Traceback"):
        assert noise not in text, text[-3000:]
    return line


def check_exc(excinfo, *needles: str) -> str:
    msg = str(excinfo.value)
    print(msg)
    assert "\n" not in msg, msg
    assert all(n in msg for n in needles), (needles, msg)
    return msg


def assert_no_output(folder: Path) -> None:
    if folder.exists():
        stray = [p for p in folder.rglob("*") if p.is_file() and not p.name.startswith(".")]
        assert not stray, stray


def write_tsv(path: Path, columns: dict) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(columns).to_csv(path, sep="\t", index=False)
    return path


def sent_rows(n: int = 6, **more) -> dict:
    return {"id": [f"r{i}" for i in range(n)], "text": [f"a fine film {i}" for i in range(n)],
            "label": [i % 2 for i in range(n)], **more}


def para_task(tmp_path: Path, ood: list[dict]) -> dict:
    """A PARA task (i.i.d. pairs in a local table) with the OOD sets ``ood``."""
    iid = write_tsv(tmp_path / "para_iid.tsv", {"question1": ["a?", "b?"], "question2": ["c?", "d?"],
                                                "label": [0, 1]})
    return {"para": {"type": "para", "model": "tiny-random", "suite": {"generate": "sent_default"},
                     "iid": {"source": str(iid), "n_val": 1, "n_test": 1}, "ood": ood}}


def read_task(tmp_path: Path, ood: list[dict]) -> dict:
    folder = tmp_path / "squad"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "dev-v1.1.json").write_text("{}")
    return {"read": {"type": "read", "model": "tiny-random", "suite": {"generate": "sent_default"},
                     "iid": {"source": "squad", "path": str(folder)}, "ood": ood}}


def sent_task(**changes) -> dict:
    task = json.loads(json.dumps(config_with()["tasks"]["sent"]))
    task.update(changes)
    return {"sent": task}


def python(code: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=REPO,
                          timeout=300)


def datasets_cache(tmp_path: Path, name: str, files: dict[str, dict]) -> Path:
    """A ``datasets`` cache holding the dataset ``name`` (one CSV per split), prepared as a download would
    prepare it (loaded once from a local folder of that name), so that it loads offline by name."""
    src = tmp_path / "src" / name
    src.mkdir(parents=True)
    for split, cols in files.items():
        pd.DataFrame(cols).to_csv(src / f"{split}.csv", index=False)
    cache = tmp_path / "datasets_cache"
    env = dict(ENV, HF_DATASETS_CACHE=str(cache), HF_HUB_OFFLINE="1")
    out = python(f"import datasets; datasets.load_dataset({str(src)!r}, split={next(iter(files))!r})", env)
    assert out.returncode == 0, out.stderr[-3000:]
    return cache


def hub_cache(root: Path, name: str, commit: str = COMMIT, ref: str | None = "main") -> Path:
    """A hub cache holding a snapshot of the model ``name`` at ``commit`` (``refs/<ref>`` pointing to it)."""
    repo = root / f"models--{name.replace('/', '--')}"
    (repo / "snapshots" / commit).mkdir(parents=True)
    (repo / "snapshots" / commit / "config.json").write_text("{}")
    if ref:
        (repo / "refs").mkdir()
        (repo / "refs" / ref).write_text(commit)
    return root


# ---------------------------------------------------------------- 1. OOD set names that are column names
@pytest.mark.parametrize("name", ["id", "label"])
def test_reserved_ood_set_name_stops_the_dry_run(tmp_path, name):
    """A set named ``id`` replaced the ID column of ood_table.md; ``label`` crashed rule ood after training."""
    cfg = config_with(tasks__sent__ood=[{"name": "tweets", "source": "hutto", "set": "tweets"},
                                        {"name": name, "source": "hutto", "set": "nyt"}])
    line, cfg_file = load_error(tmp_path / "wd", cfg, "field 'tasks.sent.ood[1].name'")
    assert line.startswith(f"config file {cfg_file}: ") and f"{name!r} is reserved" in line, line


@pytest.mark.parametrize("name", ["id", "ood_avg", "label", "iid_test", "system", "decrease_ratio",
                                  "friedman_rank_id", "pearson_r", "benchmark", "split", "case_id", "probs",
                                  "train", "pool", "suite_test", "fold"])
def test_every_column_and_split_name_is_reserved(name):
    cfg = {"tasks": {"sent": {"ood": [{"name": name, "source": "hutto", "set": "nyt"}]}}}
    with pytest.raises(ConfigError) as excinfo:
        dag.check_config(cfg, {}, ["c.yaml"])
    check_exc(excinfo, "config file c.yaml", "field 'tasks.sent.ood[0].name'", f"{name!r} is reserved")


def test_reserved_names_cover_what_the_ood_outputs_write():
    """Every column the OOD tables write (other than a set's own) and every split name is reserved."""
    written = {*ood_eval.LONG_COLUMNS, *ood_eval.LONG_EXTRA_COLUMNS, *ood_eval.RANKING_COLUMNS,
               *ood_eval.CORRELATION_COLUMNS, "benchmark", *ood_eval.TABLE_LEAD, *ood_eval.TABLE_TAIL,
               *ood_eval.MODEL_COLUMNS, ood_eval.ID_DATASET, "train", "val", "test", "pool", "suite_test",
               "suite_val", "split", "case_id", "input_idx", "probs", "answer", "start", "end"}
    assert written <= ood_eval.RESERVED_SET_NAMES


def test_a_set_named_after_another_sets_column_is_refused():
    """Sets ``a`` and ``a_p``: the p-value column of ``a`` would be replaced by the score of ``a_p``."""
    cfg = {"tasks": {"sent": {"ood": [{"name": "a", "source": "hutto", "set": "nyt"},
                                      {"name": "a_p", "source": "hutto", "set": "tweets"}]}}}
    with pytest.raises(ConfigError) as excinfo:
        dag.check_config(cfg, {}, ["c.yaml"])
    check_exc(excinfo, "config file c.yaml", "field 'tasks.sent.ood[1].name'", "p-value column of OOD set 'a'")
    assert ood_eval.set_name_clash(["tweets", "nyt", "amazon", "my-set_2"]) is None


def test_ood_step_never_writes_a_table_with_a_column_replaced(tmp_path):
    """The rule's step refuses a reserved name too (the ID column was silently the OOD score of set 'id')."""
    runs = []
    for conf in ("iid", "iid_to_t"):
        path = tmp_path / f"{conf}.parquet"
        rows = [("iid_test", f"e{i}", i % 2 == 0) for i in range(6)] + [("ood:id", f"o{i}", i < 2) for i in range(6)]
        write_parquet(pd.DataFrame({"split": [r[0] for r in rows], "case_id": [r[1] for r in rows],
                                    "correct": pd.array([r[2] for r in rows], dtype="boolean")}), path)
        runs.append({"configuration": conf, "method": "vanilla", "partition": "seen", "fold": "all",
                     "path": str(path)})
    out = tmp_path / "ood"
    names = ("scores", "ranking", "table", "markdown", "latex", "figure", "models", "correlation")
    files = {f"out_{k}": str(out / f"{k}.out") for k in names}
    with pytest.raises(BelugaError) as excinfo:
        ood_steps.ood(task="sent", task_type="sent", backbone="b", credits={}, runs=runs, models=runs,
                      data=[str(tmp_path / "data" / "id.parquet")], alpha=0.05, correction="none", **files)
    check_exc(excinfo, "field 'tasks.sent.ood[0].name'", "'id' is reserved")
    assert_no_output(out)


# ---------------------------------------------------------------- 2. OOD files against the task's input shape
def test_sent_ood_file_with_a_second_text_stops_the_dry_run(tmp_path):
    """A SENT set with a ``sentence2`` column was fed to the model as pairs."""
    tsv = write_tsv(tmp_path / "pairs.tsv", sent_rows(sentence2=[f"other {i}" for i in range(6)]))
    cfg = config_with(tasks__sent__ood=[{"name": "reviews", "source": "local", "path": str(tsv)}])
    line, _ = load_error(tmp_path / "wd", cfg, f"ood file {tsv}", "field 'sentence2'")
    assert "unexpected column" in line and "a sent task's inputs are single texts" in line, line


def test_para_ood_file_without_a_second_text_stops_at_dag_time(tmp_path):
    """A PARA set without a second question scored the pair model on single questions."""
    tsv = write_tsv(tmp_path / "singles.tsv", sent_rows())
    with pytest.raises(DataError) as excinfo:
        dag.check_sources(para_task(tmp_path, [{"name": "s", "source": "local", "path": str(tsv)}]), ["c.yaml"])
    check_exc(excinfo, f"ood file {tsv}", "field 'text_b'", "column missing", "a para task's inputs are pairs")
    good = write_tsv(tmp_path / "pairs.tsv", sent_rows(question2=[f"q{i}?" for i in range(6)]))
    dag.check_sources(para_task(tmp_path, [{"name": "s", "source": "local", "path": str(good)}]), ["c.yaml"])


def test_read_ood_file_without_answers_stops_at_dag_time(tmp_path):
    path = tmp_path / "qa.jsonl"
    path.write_text(json.dumps({"id": "q1", "context": "Anne went home.", "question": "Who?"}) + "\n")
    with pytest.raises(DataError) as excinfo:
        dag.check_sources(read_task(tmp_path, [{"name": "qa", "source": "local", "path": str(path)}]), ["c.yaml"])
    check_exc(excinfo, f"ood file {path}: line 1", "field 'answers'", "column missing")


def test_hutto_sets_on_a_pair_task_stop_at_dag_time(tmp_path):
    tasks = para_task(tmp_path, [{"name": "tweets", "source": "hutto", "set": "tweets"}])
    with pytest.raises(ConfigError) as excinfo:
        dag.check_sources(tasks, ["c.yaml"])
    check_exc(excinfo, "config file c.yaml", "field 'tasks.para.ood[0].source'", "a para task")


@pytest.mark.parametrize("columns,pair,field,words", [
    ({"text": ["a", "b"], "label": [0, 1]}, True, "text_b", "column missing"),
    ({"question1": ["a?", "b?"], "question2": ["c?", "d?"], "label": [0, 1]}, False, "question2",
     "unexpected column"),
])
def test_ood_file_shape_is_checked_when_the_set_is_read(tmp_path, columns, pair, field, words):
    """load_ood(..., pair=TaskType.pair): the same check when rule prepare_ood reads any set (local or hub)."""
    tsv = write_tsv(tmp_path / "set.tsv", columns)
    entry = {"name": "s", "source": "local", "path": str(tsv)}
    with pytest.raises(DataError) as excinfo:
        ood_sets.load_ood(entry, "classification", {0, 1}, pair=pair)
    check_exc(excinfo, f"ood file {tsv}", f"field '{field}'", words)
    with pytest.raises(ConfigError, match="field 'source': 'hutto' holds single sentences"):
        ood_sets.load_ood({"name": "t", "source": "hutto", "set": "tweets"}, "classification", {0, 1}, pair=True)


def test_iid_table_and_source_of_another_task_stop_at_dag_time(tmp_path):
    """A SENT i.i.d. table with a second text (fed as pairs), and a named source made for another task."""
    tsv = write_tsv(tmp_path / "iid.tsv", sent_rows(20, text_b=[f"b{i}" for i in range(20)]))
    with pytest.raises(DataError) as excinfo:
        dag.check_sources(sent_task(iid={"source": str(tsv), "n_val": 2, "n_test": 2}), ["c.yaml"])
    check_exc(excinfo, f"iid file {tsv}", "field 'text_b'", "unexpected column")
    with pytest.raises(DataError) as excinfo:   # and when rule prepare_iid reads it (load_splits(..., pair=))
        load_splits({"source": str(tsv), "n_val": 2, "n_test": 2}, "classification", {0, 1}, pair=False)
    check_exc(excinfo, f"iid file {tsv}", "field 'text_b'", "unexpected column")
    folder = tmp_path / "qqp"
    folder.mkdir()
    (folder / "quora_duplicate_questions.tsv").write_text("id\tquestion1\tquestion2\tis_duplicate\n")
    with pytest.raises(ConfigError) as excinfo:
        dag.check_sources(sent_task(iid={"source": "qqp", "path": str(folder)}), ["c.yaml"])
    check_exc(excinfo, "config file c.yaml", "field 'tasks.sent.iid.source'", "'qqp' holds the inputs of a para task")


def similarity_task(tmp_path: Path, ood: list[dict]) -> dict:
    """A SIMILARITY task (i.i.d. scored pairs in a local table, the packaged spec) with the OOD sets ``ood``."""
    iid = write_tsv(tmp_path / "sts.tsv", {"text": [f"A man plays {i}." for i in range(8)],
                                           "text_b": [f"A man sings {i}." for i in range(8)],
                                           "label": [i * 0.6 for i in range(8)]})
    return {"sts": {"type": "similarity", "model": "tiny-random",
                    "suite": {"generate": "similarity_default", "cases_per_functionality": 3},
                    "iid": {"source": str(iid), "n_train": 4, "n_val": 2, "n_test": 2}, "ood": ood}}


def test_sick_on_a_similarity_task_is_its_relatedness_score(tmp_path):
    """``source: sick`` on a similarity task, as docs/OOD.md configures it: the dry run passes, rule prepare_ood
    reads SICK's relatedness score (1..5) as the gold score (before: refused at job time, "an nli, nli_binary
    or, for sick, similarity task"), and the OOD outcomes are the i.i.d. test set's (gold scores, correlation)."""
    from test_challenge_data import sick_zip

    from beluga.core.tasks import SIMILARITY
    from beluga.score.outcomes import iid_outcomes
    from beluga.steps.data import prepare_ood

    sick_zip(tmp_path / "sick", [(1, "NEUTRAL", "4.5", "TEST"), (2, "ENTAILMENT", "3.6", "TEST"),
                                 (3, "CONTRADICTION", "1", "TEST"), (4, "NEUTRAL", "5", "TRAIN")])
    entry = {"name": "sick", "source": "sick", "path": str(tmp_path / "sick")}
    cfg = config_with(tasks=similarity_task(tmp_path, [entry]))
    loaded, _ = dry_load(tmp_path / "wd", cfg)
    assert not isinstance(loaded, BelugaError), loaded
    prepare_ood(entry=entry, task_type="similarity", out_data=str(tmp_path / "sick.parquet"))
    gold = pd.read_parquet(tmp_path / "sick.parquet")
    assert gold["example_id"].tolist() == ["sick-1", "sick-2", "sick-3"]
    assert gold["label"].tolist() == [4.5, 3.6, 1.0] and gold["label"].between(1, 5).all()
    preds = pd.DataFrame({"case_id": ["sick-3", "sick-1", "sick-2"], "input_idx": 0, "score": [0.5, 4.0, 3.0]})
    out = iid_outcomes(preds, gold.set_index("example_id", drop=False), SIMILARITY.head, split="ood:sick")
    assert out["gold_score"].tolist() == [1.0, 4.5, 3.6]
    assert get_head(SIMILARITY.head).metric("spearman", out) == pytest.approx(1.0)


@pytest.mark.parametrize("task,source,words", [
    ("similarity", "snli", "'snli' has NLI labels (an nli or nli_binary task); the task's labels are scores"),
    ("para", "sick", "'sick' has NLI labels and a relatedness score"),
])
def test_nli_set_a_task_cannot_score_stops_the_dry_run(tmp_path, task, source, words):
    """An NLI set on a task its labels do not suit stops while the DAG is built, in the line rule prepare_ood
    stops with (before: the dry run passed; snli on a similarity task stopped at job time, SICK on a PARA task
    was prepared with relatedness scores as its labels)."""
    from beluga.data.challenge import load_challenge

    entry = {"name": "nli", "source": source, "path": str(tmp_path / source)}
    tasks = similarity_task(tmp_path, [entry]) if task == "similarity" else para_task(tmp_path, [entry])
    tid = next(iter(tasks))
    line, _ = load_error(tmp_path / "wd", config_with(tasks=tasks), f"field 'tasks.{tid}.ood[0].source'", words)
    assert "OOD set 'nli'" in line, line
    ttype = get_task_type(task)
    with pytest.raises(ConfigError) as excinfo:   # the job's own check, before any file is read
        load_challenge(entry, ttype.head, ttype.pair, ttype.iid_labels)
    assert line.endswith(check_exc(excinfo, "ood set 'nli': field 'source'").split("field 'source': ", 1)[1])


# ---------------------------------------------------------------- 3. offline hub sources and models
def test_hf_iid_source_offline_and_not_cached_stops_the_dry_run(tmp_path, monkeypatch):
    cfg = config_with(tasks__sent__iid={"source": "hf:glue/sst2", "n_train": 40, "n_val": 10, "n_test": 20})
    hf_flags(monkeypatch, offline=True, datasets_cache=tmp_path / "empty_cache")
    line, cfg_file = load_error(tmp_path / "wd", cfg, "field 'tasks.sent.iid.source'")
    assert line.startswith(f"config file {cfg_file}: ")
    assert "not reachable" in line and "not in the datasets cache" in line and "'sst2'" in line, line


@pytest.mark.slow
def test_cached_hub_datasets_pass_the_dag_and_load_offline(tmp_path):
    """With HF_HUB_OFFLINE=1 a dataset in the ``datasets`` cache is used (before: always refused), for an OOD
    hub set and an hf: i.i.d. source, and the dry run opens no socket."""
    cache = datasets_cache(tmp_path, "mini_reviews", {
        "test": {"text": ["good", "bad", "fine"], "sentence": ["good", "bad", "fine"], "label": [1, 0, 1]},
        "train": {"text": ["nice", "awful"], "sentence": ["nice", "awful"], "label": [1, 0]}})
    env = dict(ENV, HF_DATASETS_CACHE=str(cache), HF_HUB_OFFLINE="1")
    entry = {"name": "mini", "source": "hub", "dataset": "mini_reviews", "split": "test"}
    out = python(f"from beluga.data.ood_sets import load_ood\n"
                 f"print(load_ood({entry!r}, 'classification', {{0, 1}}, pair=False).to_json(orient='records'))\n"
                 f"from beluga.data.tables import load_source\n"
                 f"print(len(load_source('hf:mini_reviews', {{0, 1}})))", env)
    assert out.returncode == 0, out.stderr[-3000:]
    records, n_iid = out.stdout.strip().splitlines()[-2:]
    assert [r["text"] for r in json.loads(records)] == ["good", "bad", "fine"] and n_iid == "2"
    cfg = config_with(tasks__sent__ood=[entry])
    res, _ = smk(tmp_path / "wd", cfg, "-n", "--quiet", "rules", env=env)
    assert res.returncode == 0, output(res)[-3000:]
    assert "prepare_ood" in output(res)


def test_ood_hub_set_check_uses_the_flag_and_the_cache_never_the_network(tmp_path, monkeypatch):
    def no_socket(*a, **k):
        raise AssertionError("the DAG check opened a socket")

    monkeypatch.setattr(socket, "create_connection", no_socket)
    hf_flags(monkeypatch, offline=False, datasets_cache=tmp_path / "empty")
    tasks = sent_task(ood=[{"name": "imdb", "source": "hub", "dataset": "imdb"}])
    dag.check_sources(tasks, ["c.yaml"])   # online: the job downloads it; nothing is probed here
    hf_flags(monkeypatch, offline=True)
    with pytest.raises(ConfigError) as excinfo:
        dag.check_sources(tasks, ["c.yaml"])
    check_exc(excinfo, "config file c.yaml", "field 'tasks.sent.ood[0].dataset'", "not in the datasets cache",
              str(tmp_path / "empty"))
    # a copy datasets prepared (loaded once from a local folder named imdb), asked of datasets itself
    import datasets

    src = tmp_path / "src" / "imdb"
    src.mkdir(parents=True)
    pd.DataFrame({"text": ["good", "bad"], "label": [1, 0]}).to_csv(src / "test.csv", index=False)
    datasets.load_dataset(str(src), split="test", cache_dir=str(tmp_path / "cache"))
    hf_flags(monkeypatch, datasets_cache=tmp_path / "cache")
    dag.check_sources(tasks, ["c.yaml"])
    for entry in ({"revision": "v1"}, {"dataset_config": "default", "revision": "v1"}):   # offline: the latest copy
        dag.check_sources(sent_task(ood=[{**tasks["sent"]["ood"][0], **entry}]), ["c.yaml"])
    with pytest.raises(ConfigError) as excinfo:   # a configuration the cache does not hold
        dag.check_sources(sent_task(ood=[{**tasks["sent"]["ood"][0], "dataset_config": "other"}]), ["c.yaml"])
    check_exc(excinfo, "field 'tasks.sent.ood[0].dataset'", "(configuration 'other') is not in the datasets cache")


def test_hub_model_offline_and_not_cached_stops_the_dry_run(tmp_path, monkeypatch):
    """Offline, a hub model not in the cache stops the dry run (not the fetch_model job)."""
    cfg = config_with(tasks__sent__model="org/not-cached")
    hf_flags(monkeypatch, offline=True, hub_cache=tmp_path / "empty_hub")
    line, cfg_file = load_error(tmp_path / "wd", cfg, "field 'tasks.sent.model'")
    assert line.startswith(f"config file {cfg_file}: ")
    assert "'org/not-cached'" in line and "not in the Hugging Face cache" in line and "HF_HUB_OFFLINE" in line


def test_hub_model_check_follows_the_cache_and_the_fetched_marker(tmp_path, monkeypatch):
    hf_flags(monkeypatch, offline=True, hub_cache=hub_cache(tmp_path / "hub", "org/bert"))
    data = str(tmp_path / "data")
    dag.check_sources(sent_task(model="org/bert"), ["c.yaml"], data_dir=data)          # refs/main -> snapshot
    dag.check_sources(sent_task(model="org/bert", model_revision=COMMIT), ["c.yaml"], data_dir=data)  # a commit
    with pytest.raises(ConfigError) as excinfo:   # not fetched: the fetch resolves v2 in the cache, offline
        dag.check_sources(sent_task(model="org/bert", model_revision="v2"), ["c.yaml"], data_dir=data)
    check_exc(excinfo, "config file c.yaml", "field 'tasks.sent.model'", "'org/bert'",
              "revision 'v2' is not in the Hugging Face cache")
    with pytest.raises(ConfigError):              # without the data folder: no snapshot of the model at all
        dag.check_sources(sent_task(model="org/gpt"), ["c.yaml"])
    # a fetched marker names the commit the jobs load: that snapshot must be cached
    marker = Path(tmp_path / "data" / "models" / "org--bert@main.json")
    marker.parent.mkdir(parents=True)
    marker.write_text(json.dumps({"model": "org/bert", "revision": "main", "commit": "f" * 40}))
    with pytest.raises(ConfigError) as excinfo:
        dag.check_sources(sent_task(model="org/bert"), ["c.yaml"], data_dir=data)
    check_exc(excinfo, "field 'tasks.sent.model'", f"commit {'f' * 12}")
    hf_flags(monkeypatch, offline=False)
    dag.check_sources(sent_task(model="org/other"), ["c.yaml"])   # online: fetched by the run, nothing probed


# ---------------------------------------------------------------- ood-rank (issue 36)
def scores_csv(path: Path, extra_f1: bool = False) -> Path:
    """A long score table: A has the best accuracy everywhere; with ``extra_f1`` B also has a low F1 on ``d1``
    (averaged in, it would rank B last although only its metric set differs)."""
    rows = [{"system": s, "task": "t", "dataset": d, "domain": dom, "metric": "acc", "value": v}
            for s, per in {"A": (90, 80, 70), "B": (85, 75, 65), "C": (80, 70, 60)}.items()
            for d, dom, v in zip(("i", "d1", "d2"), ("id", "ood", "ood"), per)]
    if extra_f1:
        rows.append({"system": "B", "task": "t", "dataset": "d1", "domain": "ood", "metric": "f1", "value": 10})
    path.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def rank_error(capsys, *args: str) -> str:
    capsys.readouterr()
    assert main(["ood-rank", *args]) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and not captured.out, captured
    return lines[0]


def test_ood_rank_mixed_metric_sets_stop_unless_allowed(tmp_path, capsys):
    scores = scores_csv(tmp_path / "scores.csv", extra_f1=True)
    line = rank_error(capsys, "--scores", str(scores), "--out", str(tmp_path / "out"))
    assert f"scores file {scores}: field 'metric': block t/d1" in line
    assert "'A', 'C' (acc)" in line and "'B' (acc, f1)" in line and "--mixed-metrics" in line
    assert not (tmp_path / "out").exists()
    with pytest.raises(DataError) as excinfo:          # the pipeline's call stops the same way
        ood_eval.rank_systems(pd.read_csv(scores), source="OOD scores of benchmark 't'")
    check_exc(excinfo, "OOD scores of benchmark 't': field 'metric': block t/d1")
    assert main(["ood-rank", "--scores", str(scores), "--out", str(tmp_path / "out"), "--mixed-metrics"]) == 0
    assert "Mixed metric sets allowed (--mixed-metrics) on t/d1" in (tmp_path / "out" / "ranking.md").read_text()


def test_ood_rank_never_writes_over_its_scores_file(tmp_path, capsys):
    res = tmp_path / "res"
    scores = scores_csv(res / "scores.csv")
    before = scores.read_bytes()
    line = rank_error(capsys, "--scores", str(scores), "--out", str(res))   # the folder holding the scores
    assert f"output folder {res}: field '--out': holds the scores file {scores} that ood-rank reads" in line
    assert scores.read_bytes() == before and sorted(p.name for p in res.iterdir()) == ["scores.csv"]
    # an earlier run's ranking.csv named as the scores, the same folder as --out
    out = tmp_path / "out"
    assert main(["ood-rank", "--scores", str(scores), "--out", str(out)]) == 0
    earlier = {p.name: p.read_bytes() for p in out.iterdir()}
    line = rank_error(capsys, "--scores", str(out / "ranking.csv"), "--out", str(out))
    assert "holds the scores file" in line
    assert {p.name: p.read_bytes() for p in out.iterdir()} == earlier
    # the scores file named ranking.csv elsewhere, reached through a link in --out
    other = tmp_path / "other"
    other.mkdir()
    (other / "ranking.csv").symlink_to(scores)
    line = rank_error(capsys, "--scores", str(scores), "--out", str(other))
    assert "holds the scores file" in line and scores.read_bytes() == before
    # a folder holding files of others is never replaced
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep")
    line = rank_error(capsys, "--scores", str(scores), "--out", str(mine))
    assert "holds 1 file(s) ood-rank does not write (notes.txt)" in line
    assert (mine / "notes.txt").read_text() == "keep"


def test_ood_rank_writes_its_folder_as_a_whole_or_not_at_all(tmp_path, capsys, monkeypatch):
    scores = scores_csv(tmp_path / "scores.csv")
    out = tmp_path / "out"
    assert main(["ood-rank", "--scores", str(scores), "--out", str(out)]) == 0
    earlier = {p.name: p.read_bytes() for p in out.iterdir()}
    assert sorted(earlier) == sorted(ood_report.RANK_OUTPUTS)

    def full(text, path):   # the last file fails: a full disk
        raise OSError(28, "No space left on device", str(path))
    monkeypatch.setattr(ood_report, "write_text", full)
    line = rank_error(capsys, "--scores", str(scores), "--out", str(out))
    assert f"output folder {out}: field '--out': cannot be written: No space left on device" in line
    assert {p.name: p.read_bytes() for p in out.iterdir()} == earlier       # the earlier run's files, intact
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".out.")]   # no temporary folder left


def test_ood_rank_ranks_glue_x_published_shape(tmp_path, capsys):
    """The regression of issue 36 (6): ID scores only at a coarser level (task ``glue``) than the OOD blocks."""
    rows = [{"system": s, "task": "glue", "dataset": "id", "domain": "id", "metric": "score", "value": v}
            for s, v in (("A", 90), ("B", 85))]
    rows += [{"system": s, "task": t, "dataset": "ood", "domain": "ood", "metric": "score", "value": v}
             for s, per in (("A", (80, 70)), ("B", (78, 72))) for t, v in zip(("sst2", "mnli"), per)]
    pd.DataFrame(rows).to_csv(tmp_path / "glue_x.csv", index=False)
    capsys.readouterr()
    assert main(["ood-rank", "--scores", str(tmp_path / "glue_x.csv"), "--out", str(tmp_path / "out")]) == 0
    assert "OOD over 2 tasks (sst2, mnli); ID over 1 dataset of task glue (id)" in capsys.readouterr().out
