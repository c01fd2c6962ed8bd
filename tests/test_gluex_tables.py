"""GLUE-X's Tables 3 and 4 in their layout (beluga.analyses.gluex_tables, issue 40) from a comparison table shaped
as rule ood_ranking's ood_table.csv: the benchmark ``all`` read when there, the tasks named by what their backbones'
ids share, the models by their backbones, sorted by the OOD average; one-line errors naming the file and field."""

import pandas as pd
import pytest

from beluga.analyses.gluex_tables import tables_3_and_4, tables_markdown, task_label
from beluga.core.errors import DataError

BENCHMARKS = {"sst2_bert": "sst2_bert", "sst2_roberta": "sst2_bert", "mnli_bert": "mnli_bert",
              "mnli_roberta": "mnli_bert"}


def row(bench, backbone, ood_avg, **blocks):
    return {"benchmark": bench, "system": f"{backbone}/iid/vanilla", "backbone": backbone, "configuration": "iid",
            "method": "vanilla", **{f"ood:{k}": v for k, v in blocks.items()}, "id_avg": 90.0, "ood_avg": ood_avg,
            "decrease_ratio": 100 * (90.0 - ood_avg) / 90.0, "rank_decrease_ratio": 1.0,
            "friedman_rank_ood": 1.0, "friedman_rank_id": 1.0}


def comparison() -> pd.DataFrame:
    return pd.DataFrame([row("sst2_bert", "bert", 80.0, imdb=80.0), row("sst2_bert", "roberta", 85.0, imdb=85.0),
                         row("all", "bert", 70.0, sst2_bert=80.0, mnli_bert=60.0),
                         row("all", "roberta", 75.0, sst2_bert=85.0, mnli_bert=65.0)])


def test_task_label_is_the_shared_prefix():
    assert task_label("sst2_bert", BENCHMARKS) == "sst2"
    assert task_label("mnli_bert", BENCHMARKS) == "mnli"
    assert task_label("cola", {"cola": "cola"}) == "cola"
    assert task_label("a", {"a": "a", "b": "a"}) == "a"          # nothing shared: the benchmark's id


def test_tables_read_the_all_benchmark_sorted_by_ood_average():
    t3, t4 = tables_3_and_4(comparison(), BENCHMARKS)
    assert list(t3["model"]) == ["roberta", "bert"] and list(t3["ood_avg"]) == [75.0, 70.0]
    assert list(t3.columns) == ["model", "ood_avg", "id_avg", "decrease_ratio", "friedman_rank_ood",
                                "friedman_rank_id", "rank_decrease_ratio"]
    assert list(t4.columns) == ["model", "sst2", "mnli", "ood_avg", "decrease_ratio"]
    assert t4.set_index("model").loc["bert", "mnli"] == 60.0
    md = tables_markdown(t3, t4)
    assert "| roberta | 75.00 | 90.00 | 16.67 |" in md and "| Model | sst2 | mnli | Avg | Avg ↓ |" in md


def test_one_task_has_its_sets_as_columns_and_a_system_with_a_configuration_is_named():
    one = comparison()
    one = one[one["benchmark"] == "sst2_bert"].copy()
    one.loc[one["backbone"] == "bert", ["configuration", "method"]] = ["iid_to_t", "lp_ft"]
    t3, t4 = tables_3_and_4(one, BENCHMARKS)
    assert list(t4.columns) == ["model", "imdb", "ood_avg", "decrease_ratio"]
    assert list(t3["model"]) == ["roberta", "bert (iid_to_t lp_ft)"]


def test_errors_are_one_line_naming_the_file_and_field():
    with pytest.raises(DataError, match=r"^t.csv: field 'ood_avg': column missing"):
        tables_3_and_4(comparison().drop(columns="ood_avg"), BENCHMARKS, source="t.csv")
    two = comparison()
    two = two[two["benchmark"] != "all"]
    two = pd.concat([two, two.assign(benchmark="mnli_bert")])
    with pytest.raises(DataError, match=r"^t.csv: field 'benchmark': no benchmark 'all'"):
        tables_3_and_4(two, BENCHMARKS, source="t.csv")


def test_the_layout_is_asked_for_only_when_every_task_has_the_same_models():
    """The default target asks for Tables 3 and 4 only when the ranking over tasks will have every model on
    every task (its benchmark 'all'): a task on another set of backbones, or one with a suite beside
    suite-less ones, would stop rule gluex_tables after every model had trained."""
    from beluga.analyses.gluex_tables import layout_problem

    def task(name: str, model: str, suite: bool = False) -> dict:
        return {"type": "nli", "model": model, "iid": {"source": name}, "ood": [{"name": f"{name}-ood"}],
                **({"suite": {"generate": "nli_default"}} if suite else {})}

    tasks = {f"{t}_{m}": task(t, m) for t in ("mnli", "rte") for m in ("bert", "roberta")}
    assert layout_problem(tasks, list(tasks)) is None
    one_more = dict(tasks, qnli_bert=task("qnli", "bert"))
    assert layout_problem(one_more, list(one_more)) == \
        "task 'qnli_bert' has the models bert; task 'mnli_bert' has bert, roberta"
    with_suite = dict(tasks, rte_bert=task("rte", "bert", suite=True))
    assert layout_problem(with_suite, ["mnli_bert", "mnli_roberta", "rte_roberta"]) == \
        "task 'rte_bert' has the models bert (with a suite); task 'mnli_bert' has bert, roberta"
    assert layout_problem({"mnli_bert": tasks["mnli_bert"]}, ["mnli_bert"]) == "fewer than two tasks with OOD sets"
