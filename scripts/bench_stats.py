"""Benchmark of beluga.report.stats at the paper's scale (prints figures, asserts nothing).

Per task (SENT / PARA / READ sizes), synthetic outcomes for the IID baseline (S = 1) and `--pairs`
configuration-method pairs (S = 4 scenarios each), where a pair's system agrees with the baseline on 70-90 %
of the units (suite cases and i.i.d. examples; drawn per pair) and redraws the others per scenario. Timed:

- the randomization test of every pair against the baseline (R draws each, as Table 3 needs);
- the bootstrap intervals of the baseline and every pair (--boot-R draws each);
- a naive reference (per draw: a plain swap mask over all units, swapped arrays, scores() twice), timed on
  --naive-draws draws of one pair and extrapolated to R draws x pairs; the speed-up is the ratio.

Usage: .venv/bin/python scripts/bench_stats.py [--R 10000] [--pairs 24] [--boot-R 1000] [--quick]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from beluga.report.bootstrap import bootstrap_ci  # noqa: E402
from beluga.report.stats import Outcomes, randomization_test, scores  # noqa: E402

TASKS = {  # name: (task_type, suite cases, functionalities, i.i.d. test examples)
    "SENT": ("sent", 21_000, 45, 436),
    "PARA": ("para", 15_000, 40, 20_000),
    "READ": ("read", 5_000, 30, 1_000),
}
S = 4


def iid_draw(rng: np.random.Generator, task_type: str, shape, gold=None, skill: float = 0.85) -> np.ndarray:
    """Random per-example features (*shape, k); para uses the fixed gold labels."""
    if task_type == "sent":
        return (rng.random(shape) < skill).astype(float)[..., None]
    if task_type == "read":
        em = rng.random(shape) < skill - 0.05
        f1 = np.where(em, 1.0, rng.random(shape) * 0.9)
        return np.stack([em.astype(float), f1], axis=-1)
    right = rng.random(shape) < skill
    pred = np.where(right, gold, 1 - gold)
    return np.stack([right, (pred == 1) & (gold == 1), (pred == 1) & (gold == 0), (pred == 0) & (gold == 1)],
                    axis=-1).astype(float)


def make_task(rng: np.random.Generator, task_type: str, n: int, n_func: int, m: int, pairs: int):
    sizes = rng.dirichlet(np.full(n_func, 3.0))
    func_index = rng.choice(n_func, size=n, p=sizes)
    func_index[:n_func] = np.arange(n_func)  # every functionality present
    rng.shuffle(func_index)
    rate = rng.beta(2, 2, n_func)[func_index]
    scored = (rng.random(n) < 0.95).astype(float)
    passed = (rng.random(n) < rate) * scored
    gold = (rng.random(m) < 0.37).astype(int)
    base = Outcomes(passed, scored, iid_draw(rng, task_type, (m,), gold))
    systems = []
    for _ in range(pairs):
        agree = rng.uniform(0.7, 0.9)
        same_c = rng.random(n) < agree
        lift = rng.normal(0, 0.1)
        new_p = (rng.random((S, n)) < np.clip(rate + lift, 0, 1)) * scored
        new_s = np.where(rng.random((S, n)) < 0.01, 1 - scored, scored)  # a few cases filtered differently
        sys_scored = np.where(same_c, scored, new_s)
        sys_passed = np.where(same_c, passed, new_p) * sys_scored
        same_i = (rng.random(m) < agree)[None, :, None]
        sys_iid = np.where(same_i, base.iid, iid_draw(rng, task_type, (S, m), gold, 0.85 + rng.normal(0, 0.02)))
        systems.append(Outcomes(sys_passed, sys_scored, sys_iid))
    return func_index, base, systems


def naive_randomization(base: Outcomes, system: Outcomes, func_index, n_func, task_type, R: int, seed: int = 0):
    """Reference: one plain mask over every unit per draw, swapped copies, scores() recomputed for both."""
    rng = np.random.default_rng(seed)
    n, m = system.passed.shape[1], system.iid.shape[1]
    bp = np.broadcast_to(base.passed, system.passed.shape)
    bs = np.broadcast_to(base.scored, system.scored.shape)
    bi = np.broadcast_to(base.iid, system.iid.shape)
    obs = scores(system, func_index, n_func, task_type)["G"] - scores(base, func_index, n_func, task_type)["G"]
    count = np.zeros(len(obs))
    for _ in range(R):
        mc = rng.random(n) < 0.5
        mi = (rng.random(m) < 0.5)[None, :, None]
        x = Outcomes(np.where(mc, bp, system.passed), np.where(mc, bs, system.scored), np.where(mi, bi, system.iid))
        y = Outcomes(np.where(mc, system.passed, bp), np.where(mc, system.scored, bs), np.where(mi, system.iid, bi))
        d = scores(x, func_index, n_func, task_type)["G"] - scores(y, func_index, n_func, task_type)["G"]
        count += np.abs(d) >= np.abs(obs) - 1e-12
    return (count + 1) / (R + 1)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--R", type=int, default=10_000, help="randomization draws per pair (default 10000)")
    ap.add_argument("--pairs", type=int, default=24, help="configuration-method pairs per task (default 24)")
    ap.add_argument("--boot-R", type=int, default=1000, help="bootstrap draws per system (default 1000)")
    ap.add_argument("--naive-draws", type=int, default=20, help="draws timed for the naive reference (default 20)")
    ap.add_argument("--tasks", default="SENT,PARA,READ", help="comma-separated subset of SENT,PARA,READ")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--quick", action="store_true", help="R=1000, 4 pairs, boot-R=200, 5 naive draws")
    args = ap.parse_args(argv)
    if args.quick:
        args.R, args.pairs, args.boot_R, args.naive_draws = 1000, 4, 200, 5
    print(f"beluga.report.stats benchmark: R={args.R}, pairs={args.pairs}, scenarios={S}, bootstrap R={args.boot_R}, "
          f"cpus={os.cpu_count()}, load average {os.getloadavg()[0]:.2f} (a shared machine inflates the times)")
    rng = np.random.default_rng(args.seed)
    for name in args.tasks.split(","):
        task_type, n, n_func, m = TASKS[name]
        fi, base, systems = make_task(rng, task_type, n, n_func, m, args.pairs)
        t0 = time.perf_counter()
        results = [randomization_test(base, s, fi, n_func, task_type, R=args.R, seed=i)
                   for i, s in enumerate(systems)]
        t_rand = time.perf_counter() - t0
        units = np.array([r["n_units"] for r in results])
        t0 = time.perf_counter()
        for o in [base, *systems]:
            bootstrap_ci([o], fi, n_func, task_type, R=args.boot_R, seeds=[1])
        t_boot = time.perf_counter() - t0
        t0 = time.perf_counter()
        naive_randomization(base, systems[0], fi, n_func, task_type, args.naive_draws)
        t_naive = (time.perf_counter() - t0) / args.naive_draws * args.R * args.pairs
        p_avg = np.array([r["p_avg"] for r in results])
        print(f"{name}: {n} cases / {n_func} functionalities, {m} i.i.d. examples ({task_type}); differing units per "
              f"pair {units.min()}-{units.max()} of {n + m} (mean {units.mean():.0f}); "
              f"p_avg < 0.05 for {(p_avg < 0.05).sum()}/{len(p_avg)} pairs")
        print(f"  randomization, {args.pairs} pairs x R={args.R}: {t_rand:.1f} s ({t_rand / args.pairs:.2f} s/pair)")
        print(f"  bootstrap, {args.pairs + 1} systems x R={args.boot_R}: {t_boot:.1f} s")
        print(f"  naive reference: {args.naive_draws} draws timed, extrapolated to {args.pairs} pairs x R={args.R}: "
              f"{t_naive:.0f} s; speed-up x{t_naive / t_rand:.0f}", flush=True)


if __name__ == "__main__":
    main()
