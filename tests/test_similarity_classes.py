"""GLUE-X's five-class STS-B (issue 40): the ``similarity_classes`` task type (beluga.core.tasks.ScoreClassesType), the
rounding of a score in [0, 5] to the classes 0..4 (round half up, then 5 -> 4; docs/DEVIATIONS.md), STS-B's GLUE
archive and SICK's relatedness read as classes through the data steps (tiny files in the official shapes), and a
STS-B source accepted for the type by the config check."""

import numpy as np
import pandas as pd
import pytest
from test_challenge_data import sick_zip
from test_glue_data import glue_zip

from beluga.core.tasks import SIMILARITY_CLASSES, TASK_TYPES, get_task_type
from beluga.steps import data as data_steps


def test_the_type_is_a_five_class_pair_classification():
    t = get_task_type("similarity_classes")
    assert t is SIMILARITY_CLASSES and TASK_TYPES["similarity_classes"] is t
    assert (t.head, t.pair, t.num_model_labels, t.iid_metrics) == ("classification", True, 5, ("accuracy",))
    assert t.iid_labels == {0: "0", 1: "1", 2: "2", 3: "3", 4: "4"} and t.reads_type == "similarity"
    assert t.mft_target("eq", 3) == [0.0, 0.0, 0.0, 1.0, 0.0]


@pytest.mark.parametrize(("score", "cls"), [(0.0, 0), (0.49, 0), (0.5, 1), (1.5, 2), (2.5, 3), (3.49, 3),
                                            (3.5, 4), (4.49, 4), (4.5, 4), (5.0, 4), (1.0, 1), (2.0, 2)])
def test_round_half_up_then_five_is_four(score, cls):
    assert SIMILARITY_CLASSES.score_classes([score]).tolist() == [cls]


def test_class_labels_only_for_score_tables():
    scores = pd.DataFrame({"example_id": ["a", "b", "c"], "text": list("xyz"), "text_b": list("xyz"),
                           "label": [0.2, 2.5, 5.0]})
    out = data_steps.score_class_labels(scores, SIMILARITY_CLASSES)
    assert out["label"].tolist() == [0, 3, 4] and out["score"].tolist() == [0.2, 2.5, 5.0]
    assert out["label"].dtype.kind == "i"
    classes = scores.assign(label=[0, 1, 4])   # a local table of the type holds classes already
    assert data_steps.score_class_labels(classes, SIMILARITY_CLASSES).equals(classes)
    assert data_steps.score_class_labels(scores, get_task_type("nli")).equals(scores)   # any other type


def test_stsb_archive_prepared_as_classes(tmp_path):
    glue_zip(tmp_path / "stsb", "stsb", n_train=6, n_dev=6)
    outs = {s: str(tmp_path / f"{s}.parquet") for s in ("train", "val", "test", "pool")}
    data_steps.prepare_iid(iid={"source": "stsb", "path": str(tmp_path / "stsb"), "seed": 1},
                           task_type="similarity_classes", outputs=outs)
    for s in ("train", "val", "test"):
        df = pd.read_parquet(outs[s])
        assert set(df["label"]) <= set(range(5)) and df["label"].dtype.kind == "i"
        assert np.array_equal(df["label"], SIMILARITY_CLASSES.score_classes(df["score"]))


def test_sick_relatedness_prepared_as_classes(tmp_path):
    sick_zip(tmp_path, [(1, "NEUTRAL", "4.5", "TEST"), (2, "ENTAILMENT", "3.4", "TEST"),
                        (3, "CONTRADICTION", "1", "TEST"), (4, "NEUTRAL", "2.9", "TRAIN")])
    out = tmp_path / "sick.parquet"
    data_steps.prepare_ood(entry={"name": "sick", "source": "sick", "path": str(tmp_path)},
                           task_type="similarity_classes", out_data=str(out))
    df = pd.read_parquet(out)
    assert df["example_id"].tolist() == ["sick-1", "sick-2", "sick-3"]
    assert df["label"].tolist() == [4, 3, 1] and df["score"].tolist() == [4.5, 3.4, 1.0]
