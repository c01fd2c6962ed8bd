"""The methods' figures: each method's cost per epoch relative to vanilla on the default fold."""

from __future__ import annotations

from bench import common
from bench.common import bench_run, fresh_model, median, prec, row, subset


def bench_methods(streams, reps: int, n_items: int) -> dict:
    from beluga.methods import PUBLIC_METHODS, get_algorithm, method_hparams
    from beluga.model.precision import resolve
    from beluga.train.loop import train

    small = subset(streams, n_items)
    p = prec("bf16", True)
    per_epoch = {}
    # lp_ft's cost is full fine-tuning (its start model, an LP model, is another job)
    for method in ["vanilla"] + sorted(m for m in PUBLIC_METHODS if m != "vanilla"):
        ts = []
        for _ in range(reps):
            model, tok = fresh_model(**get_algorithm(method).config_overrides(method_hparams(method)))
            ts.append(train(model, tok, small, bench_run(method, p.name),
                           precision=resolve(p.name, common.DEVICE))["wall_time_s"])
        per_epoch[method] = median(ts)
    for method, t in per_epoch.items():
        rel = t / per_epoch["vanilla"]
        row(f"method cost per epoch: {method}", rel, "x vanilla", target="<= 1.5", ok=rel <= 1.5,
            note=f"{t:.1f} s per epoch of {sum(len(v) for v in small.values())} items")
    return {"method_cost": {m: t / per_epoch["vanilla"] for m, t in per_epoch.items()}}
