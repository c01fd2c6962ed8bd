"""Every statistical procedure takes one item per training seed (N ≥ 1): N = 1 gives the one-seed test bit
for bit (the same draws, numbers and p-values) and N ≥ 2 the test stratified by seed. The numbers below were
computed on fixed inputs by the one-seed functions (N = 1) and by their pooled versions (N = 3) of commit
949f90a, before the two were one function; every comparison is exact (==)."""

import numpy as np
import pandas as pd
import pytest
from test_run_stats import FUNCS, write_runs

from beluga.analyses.inoculation.outcomes import dose_tests
from beluga.report import bootstrap, paired, run_stats
from beluga.report.stats import Outcomes

#: the values the one-seed and the pooled functions gave on :func:`_inputs` (rounding included)
PINNED = {
    'mcnemar1': {'p_value': 0.454498291015625, 'n_discordant': 16, 'gained': 10, 'lost': 6},
    'mcnemar3': {'p_value': 0.3317497633694906, 'n_discordant': 52, 'gained': 30, 'lost': 22},
    'rand1': {'delta': 0.04816761618396753, 'p_value': 0.10963455149501661, 'n_discordant': 28},
    'rand1s': {'delta': 0.05186158586976153, 'p_value': 0.10963455149501661, 'n_discordant': 28},
    'rand3': {'delta': 0.027286959268518946, 'p_value': 0.06312292358803986, 'n_discordant': 85},
    'pmt1_bin': (0.629058837890625, 'exact McNemar'),
    'pmt1': (0.10963455149501661, 'paired randomization (R = 300)'),
    'pmt3_bin': (1.0, 'exact McNemar, pairs summed over 3 seeds'),
    'pmt3': (0.06312292358803986, 'paired randomization (R = 300), stratified over 3 seeds'),
    'gap1': 0.00039220836456219603,
    'gap3': 3.9683664313539524e-09,
    'setgap1_bin': 0.8342239294554754,
    'setgap1': 0.19601328903654486,
    'setgap3': 0.292358803986711,
    'perm1': 0.5681063122923588,
    'si1': {'challenge': [41.614583333333336, 70.83333333333334], 'original': [24.07865373340886,
        48.70816331037185]},
    'si3': {'challenge': [48.88194444444443, 65.74179292929293], 'original': [27.778392604764818,
        42.66308920408163]},
    'mi1': (37.804174599410906, 59.74282315799086),
    'mi3': (45.135842376046675, 57.74225278598279),
    'boot1': {'s_T': [[0.43750000000000006, 0.6666666666666666]], 's_iid': [[0.2603647972942037,
        0.4407367197967785]], 'G': [[0.34309103244085865, 0.507537226088597]], 'G_avg': [0.34309103244085865,
        0.507537226088597]},
    'boot3': {'s_T': [[0.5075694444444445, 0.638320707070707]], 's_iid': [[0.29205930308162387,
        0.40961698506018107]], 'G': [[0.37999763704972134, 0.47833875615250443]], 'G_avg': [0.37999763704972134,
        0.47833875615250443]},
    'dose1': {'p_gain': 0.454498291015625, 'discordant_cases': 16, 'p_original': 0.10963455149501661,
        'original_test': 'paired randomization (R = 300)', 'p_gap': 0.999847675986141},
    'dose3': {'p_gain': 0.3317497633694906, 'discordant_cases': 52, 'p_original': 0.06312292358803986,
        'original_test': 'paired randomization (R = 300), stratified over 3 seeds', 'p_gap': 0.9999999995511433},
    'dose1_bin': {'p_gain': 0.454498291015625, 'discordant_cases': 16, 'p_original': 0.629058837890625,
        'original_test': 'exact McNemar', 'p_gap': 0.8563182349756147},
    'dose3_bin': {'p_gain': 0.3317497633694906, 'discordant_cases': 52, 'p_original': 1.0,
        'original_test': 'exact McNemar, pairs summed over 3 seeds', 'p_gap': 0.6495556118084918},
}

#: run_stats on the seeds of tests/test_seeds.py's _seed_data: (column, delta, p_value[, delta_sd]) and
#: (configuration, quantity, lo, hi); 1: one seed (seed 1), 2: two seeds (1 and 2)
SIG1 = [('iid', 0.0, 1.0), ('G_seen', 0.2779260388867708, 0.03986710963455149), ('G_func', 0.1671351903910041,
        0.15614617940199335), ('G_avg', 0.22253061463888746, 0.07308970099667775)]
SIG2 = [('iid', 0.0, 1.0, 0.0), ('G_seen', 0.217791553474799, 0.026578073089700997, 0.08504300483593756), ('G_func',
        0.23144966123574573, 0.0033222591362126247, 0.0909543969254826), ('G_avg', 0.22462060735527234,
        0.009966777408637873, 0.002955696044772484)]
CI1 = [('iid', 's_iid_standard', 0.55, 0.9012500000000003), ('iid', 's_standard', 0.21638888888888894,
        0.7501388888888889), ('iid', 'G_standard', 0.33055003270111194, 0.750206043956044), ('iid_to_t',
        's_iid_seen', 0.55, 0.9), ('iid_to_t', 's_seen', 0.8333333333333334, 1.0), ('iid_to_t', 'G_seen',
        0.6794837464192304, 0.9473684210526316), ('iid_to_t', 's_iid_func', 0.4, 0.7170833333333334), ('iid_to_t',
        's_func', 0.75, 1.0), ('iid_to_t', 'G_func', 0.5709982788296043, 0.8213882352941175), ('iid_to_t', 'G_avg',
        0.6604741646567401, 0.8546606901870061)]
CI2 = [('iid', 's_iid_standard', 0.45, 0.825625), ('iid', 's_standard', 0.31666666666666665, 0.6388888888888888),
        ('iid', 'G_standard', 0.3895879778451941, 0.6620634720625985), ('iid_to_t', 's_iid_seen', 0.45, 0.825),
        ('iid_to_t', 's_seen', 0.8333333333333333, 1.0), ('iid_to_t', 'G_seen', 0.5957602631374516,
        0.8776391292398669), ('iid_to_t', 's_iid_func', 0.5333333333333333, 0.7999999999999998), ('iid_to_t',
        's_func', 0.8330555555555555, 1.0), ('iid_to_t', 'G_func', 0.6591744056756074, 0.8695787405416379),
        ('iid_to_t', 'G_avg', 0.6987953866785983, 0.8206580915812081)]

#: the draw seeds of the three training seeds (the base seed's is a one-seed run's)
DRAWS = [0, [0, 8], [0, 9]]


def _inputs():
    """Three training seeds' fixed per-unit outcomes (0/1 cases, READ features, challenge sets, counts)."""
    rng = np.random.default_rng(20261207)
    n, m = 48, 36
    base = [rng.random(n) < 0.55 for _ in range(3)]
    after = [b ^ (rng.random(n) < 0.3) | (rng.random(n) < 0.15) for b in base]

    def read(k):
        f1 = rng.random((k,))
        em = (f1 > 0.7).astype(float)
        return np.column_stack([em, np.where(em == 1, 1.0, f1)])

    rb = [read(m) for _ in range(3)]
    rs = [np.column_stack([np.maximum(f[:, 0], rng.random(m) < 0.04),
                           np.clip(f[:, 1] + 0.2 * (rng.random(m) - 0.49), 0, 1)]) for f in rb]
    rs = [np.column_stack([f[:, 0], np.where(f[:, 0] == 1, 1.0, f[:, 1])]) for f in rs]
    chal = [read(20) * np.array([1.0, 0.8]) for _ in range(3)]
    counts = [(7, 20, 30, 36), (9, 20, 28, 36), (5, 18, 31, 36)]
    fi = np.arange(n) % 4
    scored = [np.ones(n, bool) for _ in range(3)]
    scored[1][[3, 7]] = False
    passed = [b & s for b, s in zip(base, scored)]
    sent = [b[:m, None].astype(float) for b in after]
    cases0 = [pd.DataFrame({"case_id": [f"c{i}" for i in range(n)], "passed": b & s, "scored": s})
              for b, s in zip(base, scored)]
    cases1 = [pd.DataFrame({"case_id": [f"c{i}" for i in range(n)], "passed": a & s, "scored": s})
              for a, s in zip(after, scored)]
    return dict(base=base, after=after, rb=rb, rs=rs, chal=chal, counts=counts, fi=fi, scored=scored,
                passed=passed, sent=sent, cases0=cases0, cases1=cases1)


def _plain(d: dict) -> dict:
    return {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in d.items()}


def test_mcnemar_over_seeds():
    x = _inputs()
    assert paired.mcnemar([(x["base"][0], x["after"][0])]) == PINNED["mcnemar1"]
    assert paired.mcnemar(list(zip(x["base"], x["after"]))) == PINNED["mcnemar3"]
    with pytest.raises(ValueError, match="no training seed"):
        paired.mcnemar([])


def test_paired_randomization_over_seeds():
    x = _inputs()
    pairs = list(zip(x["rb"], x["rs"]))
    assert paired.paired_randomization(pairs[:1], "read", "f1", R=300) == PINNED["rand1"]
    assert paired.paired_randomization(pairs[:1], "read", "mean", R=300, seeds=[[0, 8]]) == PINNED["rand1s"]
    assert paired.paired_randomization(pairs, "read", "f1", R=300, seeds=DRAWS) == PINNED["rand3"]
    with pytest.raises(ValueError, match="2 draw seeds for 1"):
        paired.paired_randomization(pairs[:1], "read", "f1", R=10, seeds=[0, 1])


def test_paired_metric_test_over_seeds():
    x = _inputs()
    hits_b, hits_s = [f[:, 0] > 0 for f in x["rb"]], [f[:, 0] > 0 for f in x["rs"]]
    one = paired.paired_metric_test([x["sent"][0]], [x["sent"][1]], [x["base"][0][:36]], [x["after"][1][:36]],
                                    "sent", "accuracy")
    assert one == PINNED["pmt1_bin"]
    assert paired.paired_metric_test(x["rb"][:1], x["rs"][:1], hits_b[:1], hits_s[:1], "read", "f1", R=300,
                                     seeds=[[0, 8]]) == PINNED["pmt1"]
    assert paired.paired_metric_test(x["sent"], x["sent"][::-1], [b[:36] for b in x["base"]],
                                     [a[:36] for a in x["after"]][::-1], "sent", "accuracy",
                                     seeds=DRAWS) == PINNED["pmt3_bin"]
    assert paired.paired_metric_test(x["rb"], x["rs"], hits_b, hits_s, "read", "f1", R=300,
                                     seeds=DRAWS) == PINNED["pmt3"]


def test_gap_tests_over_seeds():
    x = _inputs()
    assert paired.gap_test(x["counts"][:1]) == PINNED["gap1"]
    assert paired.gap_test(x["counts"]) == PINNED["gap3"]
    assert paired.set_gap_test([x["sent"][0][:20]], [x["base"][0][:20]], [x["sent"][1]], [x["after"][1][:36]],
                               "sent", "accuracy") == PINNED["setgap1_bin"]
    chal_hits, orig_hits = [c[:, 0] > 0 for c in x["chal"]], [f[:, 0] > 0 for f in x["rb"]]
    assert paired.set_gap_test(x["chal"][:1], chal_hits[:1], x["rb"][:1], orig_hits[:1], "read", "f1", R=300,
                               seeds=[[0, 8]]) == PINNED["setgap1"]
    assert paired.set_gap_test(x["chal"], chal_hits, x["rb"], orig_hits, "read", "f1", R=300,
                               seeds=DRAWS) == PINNED["setgap3"]
    assert paired.unpaired_permutation([x["chal"][1]], [x["rs"][1]], "read", "mean", R=300,
                                       seeds=[4]) == PINNED["perm1"]


def test_intervals_over_seeds():
    x = _inputs()
    items = list(zip(x["passed"], x["scored"], x["rb"]))
    one = paired.score_intervals(items[:1], x["fi"], 4, "read", "mean", R=200, seeds=[[0, 8]])
    assert _plain(one) == PINNED["si1"]
    assert _plain(paired.score_intervals(items, x["fi"], 4, "read", "mean", R=200, seeds=DRAWS)) == PINNED["si3"]
    assert paired.metric_interval(x["rs"][2:], "read", "f1", R=200, seeds=[5]) == PINNED["mi1"]
    assert paired.metric_interval(x["rs"], "read", "f1", R=200, seeds=DRAWS) == PINNED["mi3"]
    outs = [Outcomes(p.astype(float), s.astype(float), f) for p, s, f in items]
    b1 = bootstrap.bootstrap_ci(outs[:1], x["fi"], 4, "read", "mean", R=150, seeds=[3], level=0.9)
    b3 = bootstrap.bootstrap_ci(outs, x["fi"], 4, "read", "mean", R=150, seeds=DRAWS, outer_seed=[1, 0, 0],
                                level=0.9)
    assert _plain(b1) == PINNED["boot1"] and _plain(b3) == PINNED["boot3"]


def test_dose_tests_over_seeds():
    x = _inputs()

    def read(i):
        return (x["cases0"][i], x["cases1"][i], x["rb"][i], x["rs"][i], x["rb"][i][:, 0] > 0, x["rs"][i][:, 0] > 0)

    def sent(i):
        return (x["cases0"][i], x["cases1"][i], x["sent"][i], x["sent"][(i + 1) % 3], x["base"][i][:36],
                x["after"][(i + 1) % 3][:36])

    assert dose_tests([read(0)], "read", "f1", R=300, seeds=[[0, 8]]) == PINNED["dose1"]
    assert dose_tests([read(i) for i in range(3)], "read", "f1", R=300, seeds=DRAWS) == PINNED["dose3"]
    assert dose_tests([sent(0)], "sent", "accuracy") == PINNED["dose1_bin"]
    assert dose_tests([sent(i) for i in range(3)], "sent", "accuracy", seeds=DRAWS) == PINNED["dose3_bin"]


def _seed_data(tmp_path):
    datas = []
    for s, p in ((1, 0.7), (2, 0.8)):
        d = tmp_path / f"seed{s}"
        d.mkdir()
        runs = write_runs(d, np.random.default_rng(10 + s), {("iid_to_t", "vanilla"): p})
        datas.append(run_stats.task_data(run_stats.outcomes_per_unit(runs, "sent"), FUNCS, "sent"))
    return datas


def test_run_statistics_over_seeds(tmp_path):
    datas = _seed_data(tmp_path)
    sig1 = run_stats.significance_table(datas[:1], R=300, seeds=[5])[0]
    sig2 = run_stats.significance_table(datas, R=300, seeds=[5, [5, 2]], training_seeds=[1, 2])[0]
    assert [tuple(r) for r in sig1[["column", "delta", "p_value"]].itertuples(index=False)] == SIG1
    assert [tuple(r) for r in sig2[["column", "delta", "p_value", "delta_sd"]].itertuples(index=False)] == SIG2
    assert set(sig1["n_seeds"]) == {1} and sig1["delta_sd"].isna().all()
    ci1 = run_stats.interval_table(datas[:1], R=200, seeds=[5])
    ci2 = run_stats.interval_table(datas, R=200, seeds=[5, [5, 2]], outer_seed=[5, 0, 0])
    assert [tuple(r) for r in ci1[["configuration", "quantity", "lo", "hi"]].itertuples(index=False)] == CI1
    assert [tuple(r) for r in ci2[["configuration", "quantity", "lo", "hi"]].itertuples(index=False)] == CI2
    assert list(ci1.columns) == list(ci2.columns) and set(ci1["n_seeds"]) == {1}
    assert list(sig1.columns) == list(sig2.columns)
