"""The training variants side by side (``--variants``, ``--large``): (a) the current loop, (b) host hygiene,
(c) K jobs per GPU, (d) / (e) compile default / graphs, on the same seeded batches of a workload."""

from __future__ import annotations

from pathlib import Path

from bench import common
from bench.common import free, fresh_model, median, non_embedding_params, peak_flops, row
from bench.jobs import GpuSampler, run_jobs
from bench.loop import compile_field, heldout_loss, max_diff, timed_train, variant_run, weights_of, window_counts
from bench.workloads import Workload


def bench_variants(wl: Workload, args, tmp: Path) -> dict:
    """(a) current loop, (b) host hygiene, (c) K jobs per GPU, (d) / (e) compile default / graphs on the same
    seeded batches of ``wl``; see ``scripts/benchmark.py``'s docstring."""
    import torch

    warmup, steps, reps = args.warmup, args.steps, args.reps
    model, tok = fresh_model(wl.model, wl.head)
    n_params = non_embedding_params(model)
    del model
    seqs, real, padded = window_counts(wl, tok, warmup, steps)
    # compiled variants time the steps after --compile-warmup: their own window (the same on full windows)
    counts_compiled = window_counts(wl, tok, args.compile_warmup, steps) if args.compile_warmup != warmup else None
    peak, gpu = peak_flops()
    per_gpu = "per GPU" if common.DEVICE.type == "cuda" else "on the CPU"
    data = {"fold": "the default suite's seen fold of IID->(IID+T)",
            "long": "i.i.d. sentences joined into full windows, trained as classification",
            "sst2": "the paper's SST-2 sentences (a seeded sample, real lengths)",
            "qqp": "the paper's QQP question pairs (a seeded sample, real lengths)",
            "qa": "SQuAD questions (every window of each), trained with READ's span loss"}[wl.data]
    print(f"\nvariants [{wl.name}]: {wl.model} ({common.MODEL_SOURCE.get(wl.model)}; {n_params / 1e6:.1f}M "
          f"non-embedding parameters) at {wl.max_length} tokens, batch {wl.batch}, on {gpu}; data: {data}; "
          f"{warmup} warm-up + {steps} timed steps ({seqs / steps:.1f} sequences, {real / steps:.0f} real tokens "
          f"per step, {1 - real / padded:.0%} padding), median of {reps}", flush=True)
    variants = [("current", "(a) current loop", False, "off"), ("host_hygiene", "(b) host hygiene", True, "off")]
    skipped = {}
    for mode, letter in (("default", "d"), ("graphs", "e")):
        key = f"compile_{mode}"
        if mode not in args.compile_variants:
            skipped[key] = "not asked for (--compile-variants)"
        elif not compile_field():
            skipped[key] = "FoldRun has no 'compile' setting in this checkout"
        elif mode == "graphs" and common.DEVICE.type != "cuda":
            skipped[key] = "CUDA only"
        elif wl.task == "read" and mode != "graphs":   # whole-step graphs capture READ's span batches too
            skipped[key] = "training.compile: default compiles classification batches; READ's span batches run eagerly"
        else:
            variants.append((key, f"({letter}) compile {mode} + host hygiene", True, mode))
    for key, why in skipped.items():
        print(f"  ({key}: skipped: {why})")
    elapsed: dict[str, list] = {k: [] for k, *_ in variants}
    records: dict[str, list] = {k: [] for k, *_ in variants}
    drift: dict[str, tuple] = {}
    ref_w = ref_loss = None
    if args.warm_round:   # the process's one-time costs (library handles, allocator, per-shape kernel choice)
        model, tok = fresh_model(wl.model, wl.head)
        r = timed_train(wl, model, tok, False, "off", warmup, steps)
        print(f"  warm-up round (not counted): {steps / r['elapsed_s']:.2f} steps/s", flush=True)
        del model
        free()
    for rep in range(reps):
        for key, label, hygiene, mode in variants:
            model, tok = fresh_model(wl.model, wl.head)
            # compile: every shape compiles in the warm-up (--compile-warmup), compile time reported apart
            r = timed_train(wl, model, tok, hygiene, mode, args.compile_warmup if mode != "off" else warmup, steps)
            elapsed[key].append(r["elapsed_s"])
            records[key].append(r)
            if rep == 0:
                w, loss = weights_of(model), heldout_loss(model, tok, wl)
                if key == "current":
                    ref_w, ref_loss = w, loss
                # against (a) after the same updates only (a compiled variant with another warm-up: none)
                same = mode == "off" or args.compile_warmup == warmup
                drift[key] = (max_diff(w, ref_w), abs(loss - ref_loss)) if same else (None, None)
                del w
            del model
            free()
            comp = f" (compiling {r['compile_s']:.1f} s, {r['compiles']} graph(s))" if r.get("compiles") else ""
            if r["compiles_in_timed_steps"]:
                comp += f"; {r['compiles_in_timed_steps']} compiled in the timed steps: raise --warmup"
            print(f"  {label}, round {rep + 1}: {steps / r['elapsed_s']:.2f} steps/s, warm-up {r['warmup_s']:.1f} s"
                  f"{comp}", flush=True)
            common.partial(wl.name, {"seq_per_step": seqs / steps, "real_tokens_per_step": real / steps,
                                     "padding_share": 1 - real / padded, "params_non_embedding": n_params,
                                     "records": records, "drift": drift})

    def rates(seconds: float, k: int = 1, compiled: bool = False) -> dict:
        n_seq, n_real = (counts_compiled[:2] if compiled and counts_compiled else (seqs, real))
        return {"steps_per_s": k * steps / seconds, "seq_per_s": k * n_seq / seconds,
                "tokens_per_s": k * n_real / seconds,
                "mfu": None if peak is None else 6 * n_params * k * n_real / seconds / peak}

    out: dict = {}
    for key, label, _, mode in variants:
        t = median(elapsed[key])
        out[key] = {"label": label, "jobs": 1, **rates(t, compiled=mode != "off"), "elapsed_s": elapsed[key],
                    "warmup_s": median([r["warmup_s"] for r in records[key]]),
                    "host_ms_per_step": 1e3 * median([r["host_s_per_step"] for r in records[key]]),
                    "peak_mem_mib": max(r["peak_mem_mib"] for r in records[key]),
                    "weight_drift": drift[key][0], "loss_drift": drift[key][1],
                    "drift_after_steps": (args.compile_warmup if mode != "off" else warmup) + steps,
                    "tokenize_s": records[key][0]["tokenize_s"],
                    "compile_s": median([r["compile_s"] or 0.0 for r in records[key]]),
                    "compiles_in_timed_steps": max(r["compiles_in_timed_steps"] for r in records[key])}
    if any(mode != "off" for *_, mode in variants):
        torch._dynamo.reset()   # compiled code and CUDA graph pools: not kept while the workers run
    free()
    jobs_compile = args.jobs_compile if wl.task != "read" or args.jobs_compile == "graphs" else "off"
    jobs_ks = args.jobs_per_gpu
    if jobs_compile == "graphs" and common.DEVICE.type != "cuda" and jobs_ks:
        skipped["jobs_compile_graphs"] = "CUDA only"   # the K jobs' training.compile: graphs
        print("  (jobs with compile graphs: skipped: CUDA only)")
        jobs_ks = []
    for K in jobs_ks:
        key = f"jobs_{K}"
        comp = "" if jobs_compile == "off" else f", compile {jobs_compile}"
        print(f"  (c) {K} job{'s' if K > 1 else ''} {per_gpu}{comp}: {K} worker process{'es' if K > 1 else ''}, "
              f"{args.jobs_reps or reps} round(s)", flush=True)
        jreps = args.jobs_reps or reps
        with GpuSampler() as sampler:
            res = run_jobs(wl.save(tmp / f"workload-{wl.name}.json"), K, jreps,
                           args.compile_warmup if jobs_compile != "off" else warmup, steps, tmp, save_weights=True,
                           compile_mode=jobs_compile, warm_round=bool(args.warm_round))
        spans, sums = [], []
        n_seq = counts_compiled[0] if jobs_compile != "off" and counts_compiled else seqs
        for rep, start in enumerate(res["starts"]):
            recs = [r for r in res["records"] if r["rep"] == rep]
            spans.append(max(r["wall_end"] for r in recs) - start)
            sums.append(sum(n_seq / r["elapsed_s"] for r in recs))
        first = [r for r in res["records"] if r["rep"] == 0 and "heldout_loss" in r]
        w = torch.load(res["weights"], weights_only=True)
        label = f"(c) {K} job{'s' if K > 1 else ''} {per_gpu}{comp}, aggregate"
        out[key] = {"label": label, "jobs": K, "compile": jobs_compile,
                    **rates(median(spans), K, compiled=jobs_compile != "off"),
                    "elapsed_s": spans, "seq_per_s_sum_of_jobs": median(sums),
                    "warmup_s": median([r["warmup_s"] for r in res["records"]]),
                    "host_ms_per_step": 1e3 * median([r["host_s_per_step"] for r in res["records"]]),
                    "peak_mem_mib": max(r["peak_mem_mib"] for r in res["records"]),
                    "peak_mem_mib_all_jobs": median([sum(r["peak_mem_mib"] for r in res["records"] if r["rep"] == i)
                                                     for i in range(jreps)]),
                    **({"weight_drift": max_diff(w, ref_w), "loss_drift": abs(first[0]["heldout_loss"] - ref_loss)}
                       if jobs_compile == "off" or args.compile_warmup == warmup else
                       {"weight_drift": None, "loss_drift": None}),
                    "drift_after_steps": (args.compile_warmup if jobs_compile != "off" else warmup) + steps,
                    # the GPU's utilisation in the timed windows (each round: its common start -> its last end)
                    "gpu_utilisation": sampler.summary([(start, start + span) for start, span
                                                        in zip(res["starts"], spans)])}
        del w
        res["weights"].unlink()
        common.partial(wl.name, {"seq_per_step": seqs / steps, "real_tokens_per_step": real / steps,
                                 "padding_share": 1 - real / padded, "params_non_embedding": n_params,
                                 "variants": out})
    base = out["current"]["seq_per_s"]
    head = (f"{'variant':<40} {'steps/s':>8} {'seq/s':>9} {'tokens/s':>10} {'MFU':>7} {'peak MiB':>9} "
            f"{'max|dW|':>9} {'|dloss|':>9} {'x (a)':>7}")
    print(head)
    for v in out.values():
        v["ratio"] = v["seq_per_s"] / base
        mfu = "n/a" if v["mfu"] is None else f"{v['mfu']:.2%}"
        print(f"{v['label']:<40} {v['steps_per_s']:8.2f} {v['seq_per_s']:9.1f} {v['tokens_per_s']:10.0f} {mfu:>7} "
              f"{v['peak_mem_mib']:9.0f} {_e(v['weight_drift']):>9} {_e(v['loss_drift']):>9} {v['ratio']:6.2f}x",
              flush=True)
    if common.DEVICE.type != "cuda":
        print("(CPU: MFU n/a; peak memory: the process's max RSS so far; jobs: 1 thread each, sharing the cores)")
    best = max(out, key=lambda k: out[k]["seq_per_s"])
    speedup = out[best]["seq_per_s"] / base
    cuda = common.DEVICE.type == "cuda"
    row(f"[{wl.name}] training seq/s{' per GPU' if cuda else ''}, {best} vs (a) current loop", out[best]["seq_per_s"],
        "seq/s", baseline=base, target=">= 10x" if wl.name == "base" else "",
        ok=(speedup >= 10) if cuda and wl.name == "base" else None, note="target on an H100, at 128 tokens")
    mfus = {k: v["mfu"] for k, v in out.items() if v["mfu"] is not None}
    if mfus:
        top = max(mfus, key=mfus.get)
        row(f"[{wl.name}] training MFU on real tokens, best ({top})", mfus[top], "share", target=">= 0.25",
            ok=mfus[top] >= 0.25, note=f"6 x {n_params / 1e6:.1f}M x real tokens/s / {gpu} dense bf16 peak")
    common.RESULTS.get("partial", {}).pop(wl.name, None)
    return {"model": wl.model, "model_source": common.MODEL_SOURCE.get(wl.model), "max_length": wl.max_length,
            "batch_size": wl.batch, "data": wl.data, "params_non_embedding": n_params, "warmup": warmup,
            "steps": steps, "reps": reps, "device": gpu, "task": wl.task, "compile_warmup": args.compile_warmup,
            "warm_round": bool(args.warm_round), "peak_flops": peak, "seq_per_step": seqs / steps,
            "real_tokens_per_step": real / steps, "padding_share": 1 - real / padded,
            "precision": variant_run(wl, 1, "off").precision, "best": best, "variants": out, "skipped": skipped}


def _e(v) -> str:
    return "n/a" if v is None else f"{v:9.2e}"
