"""The plumbing under Snakemake as a process, for the rules the other real runs do not reach: the analyses run
(the tiny SENT task with its fold models kept, one inoculation unit and one combinational variant, and two
suiteless tasks with OOD sets in GLUE-X's layout), run once with the targets of the three analyses. Every job
is a process of its own: its log ends with its timing line, its benchmark file is written, its outputs are
there. What these analyses compute is tested in-process (tests/inproc.py: test_ood, test_analyses,
test_combinational, test_workflow_suiteless, test_workflow_compute).

The suite's last check (tests/conftest.py, ``pytest_sessionfinish``) needs every rule of the workflow run in a
snakemake process at least once when the whole suite runs: the tiny run (tests/test_workflow.py), this run,
the paper miniature (tests/test_workflow_paper.py) and the fetch (tests/test_fetch.py) cover them between them.
"""

from pathlib import Path

import pandas as pd
import pytest
import yaml
from conftest import FINISHED, RULES_RAN_ENV, missing_rules, record_rules, rules_ran, smk, whole_suite, workflow_rules

from beluga.workflow.smk import TIMING_TAG

TINY_TRAINING = {"max_length": 32, "iid": {"lr": 1.0e-3, "batch_size": 8, "epochs": 1},
                 "suite": {"lr": 1.0e-3, "batch_size": 4, "epochs": 1}, "iid_in_mix": 16}


def analyses_config() -> dict:
    sent = {"type": "sent", "model": "tiny-random",
            "suite": {"generate": "sent_default", "cases_per_functionality": 4, "max_perturbations": 2, "seed": 7,
                      "functionalities": ["simple negations: negative", "typos", "add positive phrases"]},
            "iid": {"source": "rotten_tomatoes", "n_train": 40, "n_val": 10, "n_test": 20, "seed": 42}}
    suiteless = {"type": "sent", "model": "tiny-random", "backbone": "tiny"}
    return {
        "results": "results", "seed": 3,
        "tasks": {
            "sent": sent,
            # GLUE-X's layout: two benchmark tasks without a suite, the same backbone, an OOD set each
            "rt_a": {**suiteless, "iid": {"source": "rotten_tomatoes", "n_train": 24, "n_val": 8, "n_test": 12,
                                          "seed": 1},
                     "ood": [{"name": "tweets", "source": "hutto", "set": "tweets", "max_examples": 10}]},
            "rt_b": {**suiteless, "iid": {"source": "rotten_tomatoes", "n_train": 24, "n_val": 8, "n_test": 12,
                                          "seed": 2},
                     "ood": [{"name": "amazon", "source": "hutto", "set": "amazon", "max_examples": 10}]},
        },
        "split": {"fractions": [0.5, 0.25, 0.25], "seed": 123},
        "configurations": ["iid_to_t"], "methods": ["vanilla"], "partitions": ["seen"],
        "keep_models": True,   # finetune_model, then predict and outcomes of the kept fold model
        "training": TINY_TRAINING, "predict": {"batch_size": 32},
        "statistics": {"randomization_R": 100, "bootstrap_R": 100},
        "inoculation": {"enabled": True, "tasks": ["sent"], "units": ["suite"], "doses": [1], "lrs": [1.0e-3],
                        "max_epochs": 1, "patience": 1},
        "combinational": {"enabled": True, "model": "tiny-random", "ks": [4], "n_test": 6, "max_length": 32,
                          "training": {"lr": 1.0e-3, "batch_size": 8, "epochs": 1}, "per_epoch": True,
                          "figures": {"epochs": {"k": 4, "panels": [["default"]]}}},
    }


TARGETS = ("all", "inoculation_all", "combinational_all")


@pytest.fixture(scope="module")
def analyses_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("analyses")
    cfg_file = tmp / "analyses.yaml"
    cfg_file.write_text(yaml.safe_dump(analyses_config(), sort_keys=False))
    wd = tmp / "run"
    out = smk(wd, "--cores", "2", *TARGETS, configfiles=(cfg_file,))
    return wd, out


@pytest.mark.slow
def test_the_analyses_run_as_processes(analyses_run):
    """Every job of the run was a process that logged its timing line, each model job got its benchmark file
    (with the process's CPU time); the kept fold model, the inoculation, combinational and GLUE-X outputs are
    there."""
    wd, out = analyses_run
    ran = rules_ran(out.stdout + out.stderr)
    expected = {"finetune_model", "prepare_ood", "ood", "ood_ranking", "gluex_tables", "inoculate", "inoculation",
                "inoculation_all", "combinational_data", "combinational_train", "combinational",
                "combinational_comparison", "combinational_figure", "combinational_all"}
    assert expected <= ran, sorted(expected - ran)
    logs = sorted((wd / "logs").rglob("*.log"))
    assert logs and all(TIMING_TAG in p.read_text() for p in logs), [p for p in logs if TIMING_TAG not in p.read_text()]
    # the model jobs' benchmark files (beluga/workflow/resources.py job_benchmark: the log's path), each a row
    # with the process's time
    benchmarks = sorted((wd / "benchmarks" / "jobs").rglob("*.tsv"))
    assert len(benchmarks) >= 8, benchmarks
    for b in benchmarks:
        rest = b.relative_to(wd / "benchmarks" / "jobs").with_suffix(".log")
        assert (wd / "logs" / rest).exists(), b
        row = pd.read_csv(b, sep="\t")
        assert len(row) == 1 and row["s"].iloc[0] > 0 and row["cpu_time"].iloc[0] > 0, b
    res = wd / "results"
    assert any((res / "sent" / "models" / "iid_to_t" / "vanilla" / "seen" / "all").glob("*.safetensors"))
    for rel in ("ood/ranking.csv", "ood/gluex_tables.md", "sent/inoculation/inoculation.md",
                "combinational/comparison.md", "combinational/figure_epochs.png"):
        assert (res / rel).stat().st_size > 0, rel


def test_rules_are_read_from_what_snakemake_printed(tmp_path, monkeypatch):
    """The records of the session's last check: the rules whose jobs finished, from snakemake's own lines; a
    rule no process ran is missing; the check runs only when the whole suite ran."""
    import subprocess

    text = ("[Mon Dec  7 04:17:12 2026]\nFinished jobid: 5 (Rule: train_iid)\n5 of 50 steps (10%) done\n"
            "Finished jobid: 19 (Rule: finetune)\nFinished jobid: 0 (Rule: all)\nlocalrule table3:\n")
    assert rules_ran(text) == {"train_iid", "finetune", "all"} and FINISHED.pattern
    monkeypatch.setenv(RULES_RAN_ENV, str(tmp_path))
    record_rules(subprocess.CompletedProcess([], 0, text, ""))
    record_rules(subprocess.CompletedProcess([], 1, "", "Finished jobid: 7 (Rule: table3)\n"))
    assert missing_rules(tmp_path, {"train_iid", "finetune", "table3", "heatmap", "all"}) == ["heatmap"]
    assert missing_rules(tmp_path, {"train_iid"}) == []

    class Opt:
        markexpr = keyword = ""
        lf = exitfirst = False
        deselect = None

    class Config:
        option = Opt()
        args = [str(Path(__file__).parent)]

    class Session:
        config = Config()

    assert whole_suite(Session())
    Config.args = [__file__]
    assert not whole_suite(Session())
    Config.args, Opt.markexpr = [str(Path(__file__).parent)], "not slow"
    assert not whole_suite(Session())


@pytest.mark.slow
def test_workflow_rules_are_snakemakes_list():
    """The rules the last check needs: ``snakemake --list-rules`` (the workflow's 39, fetch and targets
    included)."""
    rules = workflow_rules()
    assert {"all", "train_iid", "finetune", "finetune_keep", "finetune_model", "fetch_file", "gluex_tables",
            "combinational_all", "inoculation_all"} <= rules and len(rules) >= 39, sorted(rules)
