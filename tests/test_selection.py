import json

import pytest
from conftest import fold_run

from beluga.core.errors import ConfigError
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


# ----------------------------------------------------------------------------- selection.objective


def _case(cid, ttype, inputs, expect, labels=None, params=None, agg=None, inputs_b=None, answers=None):
    return {"case_id": cid, "functionality": f"f-{cid}", "capability": "c", "test_type": ttype,
            "inputs": list(inputs), "inputs_b": inputs_b, "labels": labels, "expect": expect,
            "expect_params": json.dumps(params or {}),
            "agg_fn": agg or ("all" if ttype == "MFT" else "all_except_first"), "answers": answers, "meta": None}


def _preds(probs: dict):
    """A predictions frame from {(case_id, input_idx): [P(class 0), P(class 1)]}."""
    import pandas as pd

    return pd.DataFrame({"case_id": [k[0] for k in probs], "input_idx": [k[1] for k in probs],
                         "probs": [list(v) for v in probs.values()]})


def test_sent_reference_objective_by_hand():
    import pandas as pd

    from beluga.core.tasks import get_task_type
    from beluga.heads.classification import classification_parts, classification_plan
    from beluga.train.selection import reference_objective

    sent = get_task_type("sent")
    cases = pd.DataFrame([
        _case("m1", "MFT", ["a"], "eq", [0]), _case("m2", "MFT", ["b"], "not_negative"),
        _case("m3", "MFT", ["c"], "eq", [1]), _case("m4", "MFT", ["d"], "eq_or_not_negative", [1]),
        _case("i1", "INV", ["e", "e1", "e2"], "inv"), _case("i2", "INV", ["f", "f1"], "inv"),
        _case("d1", "DIR", ["g", "g1", "g2"], "diff_up", params={"tolerance": 0.1, "slice": "orig_not_neutral"}),
        _case("d2", "DIR", ["h", "h1"], "monotonic", params={"increasing": True, "tolerance": 0.1}),
    ])
    plan = classification_plan(sent, cases)
    assert plan["mft"] == [("m1", 0, 0), ("m2", 0, "not_0"), ("m3", 0, 1), ("m4", 0, "not_0")]
    assert plan["inv"] == [("i1", 1), ("i1", 2), ("i2", 1)]
    assert [(c, j) for c, j, _ in plan["dir"]] == [("d1", 1), ("d1", 2), ("d2", 1)]
    p = {("m1", 0): [0.8, 0.2], ("m2", 0): [0.55, 0.45], ("m3", 0): [0.1, 0.9], ("m4", 0): [0.9, 0.1],
         ("i1", 0): [0.4, 0.6], ("i1", 1): [0.35, 0.65], ("i1", 2): [0.25, 0.75], ("i2", 0): [0.7, 0.3],
         ("i2", 1): [0.61, 0.39],
         ("d1", 0): [0.6, 0.4], ("d1", 1): [0.75, 0.25], ("d1", 2): [0.65, 0.35],
         ("d2", 0): [0.2, 0.8], ("d2", 1): [0.25, 0.75]}
    parts = classification_parts(sent, plan, _preds(p))
    # MFT, squash_to_neutral of P(pos): 0.2 < 1/3 -> 0 (label 0: hit); 0.45 in (1/3, 1/2) -> neutral
    # 1 - 3 * 0.05 = 0.85 -> 1 (not_0: hit); 0.9 > 2/3 -> 2 (label 1: miss); 0.1 -> 0 (not_0: miss) => 2/4
    assert parts["mft_accuracy"] == pytest.approx(0.5)
    # INV |dP(pos)|: 0.05 pass, 0.15 fail, 0.09 pass => 2/3
    assert parts["inv_pass"] == pytest.approx(2 / 3)
    # DIR, "add positive" (ref. not_less_2): relu(P_pos(orig) - P_pos(pert)) = 0.15 fail, 0.05 pass;
    # "intensifiers" (ref. not_less_conf, c* = 1): relu(0.8 - 0.75) = 0.05 pass; no slice => 2/3
    assert parts["dir_pass"] == pytest.approx(2 / 3)
    assert (parts["n_mft"], parts["n_inv"], parts["n_dir"]) == (4, 3, 3)
    out = reference_objective("sent", parts)
    assert out["score"] == pytest.approx(0.5 + 2 / 3 + 2 / 3) and out["objective"] == "reference"
    assert set(out["terms"]) == {"mft", "inv", "dir"}
    # training.eq_or_not_negative_target: label (paper.yaml, the reference's): "Q & A: no" label 1 is trained
    # as neutral [1/2, 1/2] and scored so: label 1, only a neutral prediction is a hit (m4 at 0.1 -> 0: miss;
    # at 0.45 -> neutral: hit, which "not_0" would also count; at 0.9 -> 2: a hit for "not_0", a miss here)
    literal = classification_plan(sent, cases, eq_or_not_negative_target="label")
    assert literal["mft"] == [("m1", 0, 0), ("m2", 0, "not_0"), ("m3", 0, 1), ("m4", 0, 1)]
    for p_pos, hit in ((0.45, 1), (0.9, 0)):
        parts = classification_parts(sent, literal, _preds({**p, ("m4", 0): [1 - p_pos, p_pos]}))
        assert parts["mft_accuracy"] == pytest.approx((2 + hit) / 4)


def test_para_reference_objective_by_hand():
    import pandas as pd

    from beluga.core.tasks import get_task_type
    from beluga.heads.classification import classification_parts, classification_plan
    from beluga.train.selection import reference_objective

    para = get_task_type("para")
    b = ["x"] * 3
    cases = pd.DataFrame([
        _case("q1", "MFT", ["a"], "eq", [1], inputs_b=b[:1]), _case("q2", "MFT", ["b"], "eq", [0], inputs_b=b[:1]),
        _case("q3", "MFT", ["c"], "eq", [0], inputs_b=b[:1]),
        _case("syn", "INV", ["s"], "inv", params={"train": {"as": "MFT", "label": 1}}, inputs_b=b[:1]),
        _case("i1", "INV", ["e", "e1", "e2"], "inv", inputs_b=b),
        _case("d1", "DIR", ["g", "g1", "g2"], "eq", params={"val": 0}, inputs_b=b),
        _case("t1", "DIR", ["t", "t1", "t2"], "triplet", [1, 1, 0], inputs_b=b),
    ])
    plan = classification_plan(para, cases)
    assert plan["mft"] == [("q1", 0, 1), ("q2", 0, 0), ("q3", 0, 0), ("syn", 0, 1)]
    assert plan["inv"] == [("i1", 1), ("i1", 2)]
    assert plan["dir"] == [("d1", 1, 0), ("d1", 2, 0), ("t1", 0, 1), ("t1", 1, 1), ("t1", 2, 0)]
    p = {("q1", 0): [0.3, 0.7], ("q2", 0): [0.4, 0.6], ("q3", 0): [0.9, 0.1], ("syn", 0): [0.8, 0.2],
         ("i1", 0): [0.5, 0.5], ("i1", 1): [0.45, 0.55], ("i1", 2): [0.3, 0.7],
         ("d1", 0): [0.0, 1.0], ("d1", 1): [0.7, 0.3], ("d1", 2): [0.2, 0.8],
         ("t1", 0): [0.1, 0.9], ("t1", 1): [0.4, 0.6], ("t1", 2): [0.45, 0.55]}
    parts = classification_parts(para, plan, _preds(p))
    # MFT (gold, pred): (1, 1) (0, 1) (0, 0) (1, 0): accuracy 2/4, F1 = 2 tp / (2 tp + fp + fn) = 2 / 4
    assert (parts["mft_accuracy"], parts["mft_f1"]) == (pytest.approx(0.5), pytest.approx(0.5))
    # INV |dP(dup)|: 0.05 pass, 0.2 fail
    assert parts["inv_pass"] == pytest.approx(0.5)
    # DIR (the original of d1 unchecked): (0, 0) (0, 1) (1, 1) (1, 1) (0, 1): accuracy 3/5, F1 = 4 / (4 + 2)
    assert (parts["dir_accuracy"], parts["dir_f1"]) == (pytest.approx(0.6), pytest.approx(2 / 3))
    out = reference_objective("para", parts)
    assert out["score"] == pytest.approx((0.5 + 0.5) / 2 + 0.5 + (0.6 + 2 / 3) / 2)


def test_reference_objective_leaves_out_a_missing_test_type_and_refuses_unknown_cases():
    import pandas as pd

    from beluga.core.errors import BelugaError
    from beluga.core.tasks import get_task_type
    from beluga.heads.classification import binary_f1, classification_parts, classification_plan
    from beluga.train.selection import reference_objective

    sent = get_task_type("sent")
    cases = pd.DataFrame([_case("m1", "MFT", ["a"], "eq", [2])])
    parts = classification_parts(sent, classification_plan(sent, cases), _preds({("m1", 0): [0.2, 0.8]}))
    out = reference_objective("sent", parts)
    assert out["terms"] == {"mft": 1.0, "inv": None, "dir": None} and out["score"] == 1.0
    empty = reference_objective("sent", classification_parts(sent, classification_plan(sent, cases.iloc[:0]),
                                                             _preds({})))
    assert empty["score"] != empty["score"]     # NaN: never wins
    with pytest.raises(BelugaError, match="case 'x'.*SENT has no reference metric"):
        classification_plan(sent, pd.DataFrame([_case("x", "DIR", ["a", "b"], "eq", [0, 0])]))
    with pytest.raises(BelugaError, match="no prediction for case 'm1', input 0"):
        classification_parts(sent, classification_plan(sent, cases), _preds({("m2", 0): [0.5, 0.5]}))
    with pytest.raises(BelugaError, match="two-class"):
        classification_parts(sent, classification_plan(sent, cases), _preds({("m1", 0): [0.2, 0.3, 0.5]}))
    assert binary_f1([0, 0], [0, 0]) == 0.0 and binary_f1([1, 0, 1], [1, 1, 1]) == pytest.approx(0.8)


def test_read_parts_and_terms_by_hand():
    from beluga.heads.span import read_parts
    from beluga.train.selection import reference_objective

    parts = read_parts([True, False, True, True], [True, False, False, True], [True, True], [False, True])
    # start 3/4, end 2/4 -> 0.625; INV start 2/2, end 1/2 -> 0.75
    assert parts["mft_mean_accuracy"] == pytest.approx(0.625) and parts["inv_mean_pass"] == pytest.approx(0.75)
    assert reference_objective("read", parts)["score"] == pytest.approx(0.625 + 0.75)
    assert reference_objective("read", read_parts([True], [False], [], []))["terms"] == {"mft": 0.5, "inv": None}


def test_reference_alignment_is_the_reference_codes():
    from beluga.heads.span.qa import aligned_argmax_same, reference_alignment

    # perturbation inserts two tokens: blocks (pert 0, orig 0, 1) and (pert 3, orig 1, 3)
    orig, pert = [1, 2, 3, 4], [1, 9, 9, 2, 3, 4]
    assert reference_alignment(orig, pert) == ([0, 1, 2, 3], [0, 3, 4, 5])
    # the substituted token is left out, the missing pair padded with (0, 0)
    assert reference_alignment([101, 5, 6, 7, 102, 0, 0], [101, 5, 9, 7, 102, 0, 0]) == \
        ([0, 1, 3, 4, 5, 6, 0], [0, 1, 3, 4, 5, 6, 0])
    # SequenceMatcher's default autojunk (sequences of 200+): a token in more than 1% + 1 of the original's
    # positions never starts a match, so two sequences sharing only padding match nothing
    orig, pert = [5] + [0] * 150 + [6] + [0] * 60, [7] + [0] * 150 + [8] + [0] * 60
    assert reference_alignment(orig, pert) == ([0] * 212, [0] * 212)
    align = reference_alignment([1, 2, 3, 4], [1, 9, 9, 2, 3, 4])
    # the perturbation's maximum (9 at position 1) is not aligned: both argmax at aligned index 2
    assert aligned_argmax_same([0, 1, 5, 2], [0, 9, 9, 1, 5, 2], align)
    assert not aligned_argmax_same([0, 1, 5, 2], [0, 9, 9, 6, 5, 2], align)


def test_best_trial_refuses_mixed_objectives(tmp_path):
    from beluga.train.selection import best_trial, check_objective

    a = {"trial": "a", "score": 0.4, "objective": "pass_rate"}
    b = {"trial": "b", "score": 1.9, "objective": "reference"}
    with pytest.raises(ConfigError, match="different objectives"):
        best_trial([a, b])
    assert best_trial([{"trial": "x", "score": float("nan")}, {"trial": "y", "score": float("nan")}])["trial"] == "x"
    with pytest.raises(ConfigError, match="selection.objective"):
        check_objective("accuracy")


def test_pass_rate_objective_by_hand():
    import pandas as pd

    from beluga.train.selection import pass_rate_objective

    assert pass_rate_objective(pd.Series([0.5, float("nan"), 1.0]))["score"] == 0.75   # (0.5 + 1.0) / 2
    nothing = pass_rate_objective(pd.Series([float("nan")]))["score"]
    assert nothing != nothing


@pytest.fixture
def cpu_job():
    import torch

    from beluga.model.job import Job
    from beluga.model.precision import resolve

    cpu = torch.device("cpu")
    return Job(cpu, resolve("fp32", cpu), 1)


def test_suite_objective_sent_on_a_tiny_model(cpu_job):
    import numpy as np
    from conftest import make_tiny_suite

    from beluga.core.clock import Clock
    from beluga.core.tasks import binary_to_three_class, get_task_type
    from beluga.score.predict import suite_predictions
    from beluga.train import fold

    sent = get_task_type("sent")
    run = fold_run(max_length=32)
    model, tok = fold.load_start_model(run, cpu_job, num_labels=2)
    cases = make_tiny_suite(3)
    ref = fold.suite_objective(model, tok, cases, run, cpu_job, Clock(), batch_size=4, source="t",
                               objective="reference")
    default = fold.suite_objective(model, tok, cases, run, cpu_job, Clock(), batch_size=4, source="t")
    assert ref["pass_rates"] == default["pass_rates"] and len(default["pass_rates"]) == 4
    assert default["score"] == pytest.approx(np.mean(list(default["pass_rates"].values())))
    preds = suite_predictions(model, tok, sent, cases, "suite_val", 4, 32, run.doc_stride, cpu_job.precision)
    p = {(c, j): np.asarray(v) for c, j, v in zip(preds["case_id"], preds["input_idx"], preds["probs"])}
    n = 3
    three = {c: int(binary_to_three_class(p[(c, 0)][None, 1])[0].argmax()) for c, _ in p}
    mft = ([three[f"mft-{i}"] == 0 for i in range(n)]              # "neg words": label 0
           + [three[f"nn-{i}"] in (1, 2) for i in range(n)])       # "not negative"
    inv = [abs(p[(f"inv-{i}", j)][1] - p[(f"inv-{i}", 0)][1]) <= 0.1 for i in range(n) for j in (1, 2)]
    # diff_up: the negative probability must not rise by more than 0.1
    dirs = [max(0.0, p[(f"dir-{i}", 1)][0] - p[(f"dir-{i}", 0)][0]) <= 0.1 for i in range(n)]
    assert ref["parts"]["n_mft"] == 6 and ref["parts"]["n_inv"] == 6 and ref["parts"]["n_dir"] == 3
    assert ref["score"] == pytest.approx(np.mean(mft) + np.mean(inv) + np.mean(dirs))


class _PeakQA:
    """A stand-in QA model: start logits 1 on every "mary" token, 0 elsewhere; end logits 1 at position 7."""

    def __new__(cls, mary_id):
        import types

        import torch

        class Model(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.w = torch.nn.Parameter(torch.zeros(()))

            def forward(self, input_ids, attention_mask=None, token_type_ids=None):
                start = (input_ids == mary_id).float() + self.w
                end = torch.zeros_like(start)
                end[:, 7] = 1.0
                return types.SimpleNamespace(start_logits=start, end_logits=end)
        return Model()


def test_suite_objective_read_by_hand(cpu_job):
    import pandas as pd

    from beluga.core.clock import Clock
    from beluga.heads.span.qa import encode_qa, span_targets
    from beluga.model.modeling import load_model
    from beluga.train import fold

    run = fold_run(task_type="read", max_length=48, doc_stride=8)
    _, tok = load_model("tiny-random", 0, head="qa")
    model = _PeakQA(tok.convert_tokens_to_ids("mary"))
    long = ("The river runs through the old town and past the mill. " * 4) + "Anna lives near the bridge."
    q = "Who is taller?"
    cases = pd.DataFrame([
        _case("m0", "MFT", ["Mary is taller than John."], "squad", inputs_b=[q], answers=["Mary"]),
        _case("m1", "MFT", [long], "squad", inputs_b=["Who lives near the bridge?"], answers=["Anna"]),
        _case("m2", "MFT", ["Paris is in France."], "squad", inputs_b=["Where is Paris?"], answers=["France"]),
        # [CLS] who is taller ? [SEP] mary is ...: "mary" at 6, "is" at 7
        _case("i0", "INV", ["Mary is taller than John.", "Maria is taller than John.",
                            "Mary Mary is taller than John."], "inv", inputs_b=[q] * 3),
    ])
    out = fold.suite_objective(model, tok, cases, run, cpu_job, Clock(), batch_size=2, source="t",
                               objective="reference")
    parts = out["parts"]
    windows = encode_qa(tok, ["Who lives near the bridge?"], [long], max_length=48, stride=8)
    w = len(windows)
    a = int((span_targets(windows, [long], ["Anna"])[0] > 0).sum())   # m1's windows holding the answer
    assert w >= 2 and 1 <= a < w and parts["n_mft_windows"] == w + 2
    # start argmax: m0 at "mary" (its target, a hit); m1 and m2 at 0 ([CLS], a hit only where the target is 0)
    assert parts["mft_start_accuracy"] == pytest.approx((1 + w - a) / (w + 2))
    # end argmax always 7: m0's target is 6, m2's "france" is not at 7 either
    assert parts["mft_end_accuracy"] == pytest.approx(0.0)
    # INV start: "maria" leaves no aligned "mary" on either side (aligned argmax 0 = 0); "mary mary": the
    # original's mary (6) aligned with the perturbation's second (7), the first unaligned -> same index. Both pass.
    # INV end (position 7): "maria" substitutes, 7 aligned with 7 -> pass; "mary mary" inserts: the original's
    # 7 is aligned index 7, the perturbation's 7 aligned index 6 -> fail
    assert (parts["n_inv"], parts["inv_start_pass"], parts["inv_end_pass"]) == (2, 1.0, 0.5)
    assert out["score"] == pytest.approx((1 + w - a) / (w + 2) / 2 + 0.75)
    assert set(out["pass_rates"]) == {"f-m0", "f-m1", "f-m2", "f-i0"}


def test_trial_records_the_objective_and_checks_its_plan_before_training(tmp_path, monkeypatch, cpu_job):
    import pandas as pd
    from conftest import make_tiny_suite

    import beluga.train.fold
    from beluga.core.errors import BelugaError
    from beluga.core.io import write_parquet
    from beluga.steps.train import trial
    from beluga.suites.format import save_suite

    suite = make_tiny_suite(4)
    save_suite(suite, tmp_path / "suite.parquet")
    write_parquet(pd.DataFrame({"case_id": suite["case_id"], "split": ["val"] * len(suite)}),
                  tmp_path / "split.parquet")
    run = fold_run(hparams={"lr": 1e-4}, max_length=32,   # the trial's run: its grid point on top (Runs.hparams)
                   functionalities=tuple(dict.fromkeys(suite["functionality"])))
    model, tok = beluga.train.fold.load_start_model(run, cpu_job, num_labels=2)
    trained = []

    def fake_train_fold(run, job, clock, **kw):
        trained.append(run.hparams["lr"])
        return model, tok, {"steps": 0, "wall_time_s": 0.0}

    monkeypatch.setattr(beluga.train.fold, "train_fold", fake_train_fold)
    where = dict(run=run.to_dict(), grid_point={"lr": 1e-4}, suite=str(tmp_path / "suite.parquet"),
                 split=str(tmp_path / "split.parquet"), iid_train=None, start=None, batch_size=8)
    for objective in ("pass_rate", "reference"):
        trial(**where, trial_id=objective, out_score=str(tmp_path / f"{objective}.json"), objective=objective)
    default, ref = (json.loads((tmp_path / f"{o}.json").read_text()) for o in ("pass_rate", "reference"))
    assert default["objective"] == "pass_rate" and "terms" not in default and trained == [1e-4, 1e-4]
    assert ref["objective"] == "reference" and set(ref["terms"]) == {"mft", "inv", "dir"}
    assert ref["score"] == pytest.approx(sum(ref["terms"].values())) and ref["pass_rates"] == default["pass_rates"]
    out = tmp_path / "selected.json"
    select_hparams(trials=[str(tmp_path / "reference.json")], policy="seen", out_selected=str(out))
    assert json.loads(out.read_text())["objective"] == "reference"
    bad = suite.assign(expect=["eq" if t == "DIR" else e for t, e in zip(suite["test_type"], suite["expect"])],
                       labels=[[0, 0] if t == "DIR" else x for t, x in zip(suite["test_type"], suite["labels"])])
    save_suite(bad, tmp_path / "suite.parquet")
    with pytest.raises(BelugaError, match="SENT has no reference metric for a label-checked DIR"):
        trial(**where, trial_id="bad", out_score=str(tmp_path / "bad.json"), objective="reference")
    assert trained == [1e-4, 1e-4]      # refused before training
