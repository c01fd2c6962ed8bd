import json

import pytest
from conftest import fold_run

from beluga.errors import ConfigError
from beluga.steps.train import select_hparams, with_selection
from beluga.workflow.dag import grid_points


def test_grid_points_ids_and_order():
    pts = grid_points({"lr": [2e-5, 5e-5], "batch_size": [8, 16], "epochs": [1]})
    assert list(pts) == ["lr2e-05-bs8-ep1", "lr2e-05-bs16-ep1", "lr5e-05-bs8-ep1", "lr5e-05-bs16-ep1"]
    assert pts["lr5e-05-bs16-ep1"] == {"lr": 5e-5, "batch_size": 16, "epochs": 1}
    assert grid_points({}) == {} and grid_points({"lr": []}) == {}
    with pytest.raises(ConfigError, match=r"selection.grid.momentum"):
        grid_points({"momentum": [0.9]})


def _trial(tmp_path, name, score, point):
    p = tmp_path / f"{name}.json"
    p.write_text(json.dumps({"trial": name, "score": score, "grid_point": point, "partition": "seen",
                             "fold": "all"}))
    return str(p)


def test_select_best_first_on_ties_nan_never(tmp_path):
    trials = [_trial(tmp_path, "a", 0.5, {"lr": 1}), _trial(tmp_path, "b", float("nan"), {"lr": 2}),
              _trial(tmp_path, "c", 0.7, {"lr": 3}), _trial(tmp_path, "d", 0.7, {"lr": 4})]
    out = tmp_path / "selected.json"
    select_hparams(trials=trials, policy="seen", out_selected=str(out))
    chosen = json.loads(out.read_text())
    assert chosen["trial"] == "c" and chosen["hparams"] == {"lr": 3} and chosen["fold"] == "seen/all"
    run = fold_run(hparams={"lr": 9, "batch_size": 16, "epochs": 1})
    selected, choice = with_selection(run, str(out))
    assert selected.hparams == {**run.hparams, "lr": 3} and choice["trial"] == "c"
    assert with_selection(run, None) == (run, None)


def test_cap_inputs_keeps_original_and_aligned_columns():
    import pandas as pd

    from beluga.suites.build import cap_inputs

    df = pd.DataFrame([
        {"case_id": "a", "expect": "same_answer", "inputs": [f"c{i}" for i in range(8)],
         "inputs_b": [f"q{i}" for i in range(8)], "labels": None, "answers": None,
         "meta": json.dumps([{}] + [[f"o{i}", f"n{i}"] for i in range(1, 8)])},
        {"case_id": "t", "expect": "triplet", "inputs": ["x", "y", "z"], "inputs_b": ["1", "2", "3"],
         "labels": [1, 1, 0], "answers": None, "meta": None},
        {"case_id": "m", "expect": "eq", "inputs": ["p", "q", "r", "s"], "inputs_b": None,
         "labels": [0, 1, 2, 0], "answers": None, "meta": None},
    ])
    out = cap_inputs(df, 3, seed=7)
    a = out.iloc[0]
    assert a.inputs[0] == "c0" and len(a.inputs) == 3
    assert [x.replace("c", "q") for x in a.inputs] == list(a.inputs_b)
    idx = [int(x[1:]) for x in a.inputs]
    assert idx == sorted(idx) and json.loads(a.meta)[1:] == [[f"o{i}", f"n{i}"] for i in idx[1:]]
    assert list(out.iloc[1].inputs) == ["x", "y", "z"]          # triplets untouched
    m = out.iloc[2]
    assert len(m.inputs) == 3 and [{"p": 0, "q": 1, "r": 2, "s": 0}[x] for x in m.inputs] == list(m.labels)
    pd.testing.assert_frame_equal(cap_inputs(df, 3, seed=7), out)     # deterministic
    assert cap_inputs(df, None, seed=7) is df
