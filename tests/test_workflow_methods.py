"""End-to-end: the eight methods in the three suite-augmented configurations,
and grid model selection, on tiny configs (tiny random BERT)."""

import json

import pandas as pd
from conftest import REPO, pipeline, planned_jobs

CONFIGS = REPO / "tests" / "configs"
METHODS = ["vanilla", "l2", "dropout", "lp", "lp_ft", "irm", "group_dro", "fish", "lora"]
#: the target the tests run to: every fold's training, predictions and outcomes, and the score table
SCORES = "results/sent/scores/scores.csv"


def test_all_methods_all_configurations(tmp_path):
    cfg = (CONFIGS / "tiny_methods.yaml",)
    jobs = planned_jobs(tmp_path, configfiles=cfg)
    # one job per fold; LP's, which LP-FT starts from, also writes its model (a temporary file)
    assert jobs["finetune"] == 3 * 8 and jobs["finetune_keep"] == 3 and jobs["predict"] == 1, jobs
    pipeline(tmp_path, "--cores", "2", SCORES, configfiles=cfg)   # (every fold; not the figures and statistics)
    res = tmp_path / "results" / "sent"
    scores = pd.read_csv(res / "scores" / "scores.csv")
    assert len(scores) == 27 + 1 and scores.iloc[0].configuration == "iid"
    assert sorted(set(zip(scores.configuration[1:], scores.method[1:]))) == sorted(
        (c, m) for c in ("iid_to_t", "iid_plus_t", "iid_to_iid_plus_t") for m in METHODS)
    assert scores.G_seen.between(0, 1).all()
    for conf in ("iid_to_t", "iid_plus_t", "iid_to_iid_plus_t"):
        runs = {m: json.loads((res / "predictions" / conf / m / "seen" / "all.json").read_text()) for m in METHODS}
        # LP-FT's fine-tuning step starts from the LP model of the same configuration and fold
        assert runs["lp_ft"]["start_model"] == "lp model of this fold"
        assert sorted(runs["lp"]["method_info"]["trainable_parameters"]) == ["classifier.bias", "classifier.weight"]
        assert runs["dropout"]["method_info"]["dropout_p"] == [0.3]
        # lora: adapters on the start model (the IID model in IID→T), the head in full, merged when saved
        info = runs["lora"]["method_info"]
        assert (info["lora_r"], info["lora_alpha"], info["lora_dropout"]) == (4, 8, 0.1)
        assert 0 < info["trainable_parameters"] < info["base_parameters"]
        assert runs["lora"]["start_model"] == ("iid" if conf.startswith("iid_to") else runs["vanilla"]["start_model"])
        for m, r in runs.items():
            assert r["method"] == m and r["configuration"] == conf and r["steps"] > 0
            assert {"hparams", "seed", "versions", "device", "wall_time_s"} <= set(r)
    assert not (res / "models" / "iid_to_t").exists()  # fold models (LP ones included) are temporary


def test_grid_selection_per_fold(tmp_path):
    cfg = (CONFIGS / "tiny_selection.yaml",)
    jobs = planned_jobs(tmp_path, configfiles=cfg)
    # folds: seen + mft / inv / dir; two grid points each
    assert jobs["trial"] == 4 * 2 and jobs["select_hparams"] == 4 and jobs["finetune"] == 4, jobs
    pipeline(tmp_path, "--cores", "2", SCORES, configfiles=cfg)
    res = tmp_path / "results" / "sent"
    sel = res / "selection" / "iid_to_t" / "vanilla"
    for fold in ("seen/all", "type/mft", "type/inv", "type/dir"):
        chosen = json.loads((sel / fold / "selected.json").read_text())
        assert chosen["trial"] in ("lr0.001", "lr1e-05") and chosen["policy"] == "per_fold"
        trials = {t: json.loads((sel / fold / "trials" / f"{t}.json").read_text()) for t in ("lr0.001", "lr1e-05")}
        best = max(trials.values(), key=lambda t: (t["score"], t["trial"] == "lr0.001"))
        assert chosen["score"] == best["score"]
        if fold != "seen/all":
            # the held-out functionalities are never scored during selection
            held = {"type/mft": "simple negations: negative", "type/inv": "typos",
                    "type/dir": "add positive phrases"}[fold]
            assert all(held not in t["pass_rates"] for t in trials.values())
        run = json.loads((res / "predictions" / "iid_to_t" / "vanilla" / f"{fold}.json").read_text())
        assert run["hparams"]["lr"] == chosen["hparams"]["lr"] and run["selection"]["trial"] == chosen["trial"]
