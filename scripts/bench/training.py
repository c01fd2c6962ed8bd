"""The training figures: ``beluga.train.loop.train`` against a raw PyTorch loop over the same minibatches, in
fp32, bf16 autocast and bf16 + fused AdamW (and the model FLOP utilisation on CUDA)."""

from __future__ import annotations

import time

from bench import common
from bench.common import bench_run, fresh_model, median, non_embedding_params, peak_flops, prec, row, subset, sync


def raw_loop(model, tokenizer, batches, precision, lr=5e-5):
    """The reference: a plain PyTorch loop over the same minibatches (same loss
    code, AdamW, clipping at 1.0, linear decay), nothing else."""
    import torch

    from beluga.train.loop import LossFn

    loss_fn = LossFn(tokenizer, common.MAX_LENGTH, precision=precision)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=lr, weight_decay=0.0, fused=precision.fused_optimizer or None)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: max(0.0, 1 - s / len(batches)))
    model.train()
    sync()
    t = time.perf_counter()
    for b in batches:
        loss = loss_fn(model, b).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        sched.step()
    sync()
    return time.perf_counter() - t



def bench_training(streams, reps: int, n_items: int) -> dict:
    import numpy as np

    from beluga.model.precision import resolve
    from beluga.train.batches import epoch_batches
    from beluga.train.loop import train

    small = subset(streams, n_items)
    items = sum(len(v) for v in small.values())
    fp32, bf16, bf16f = prec("fp32", False), prec("bf16", False), prec("bf16", True)
    times = {k: [] for k in ("raw fp32", "loop fp32", "raw bf16", "raw bf16+fused", "loop bf16+fused")}
    for _ in range(reps):
        for name, p in (("fp32", fp32), ("bf16+fused", bf16f)):
            model, tok = fresh_model()
            batches = epoch_batches(small, common.BATCH, np.random.default_rng([1, 0]))  # train()'s epoch-0 batches
            times[f"raw {name}"].append(raw_loop(model, tok, batches, p))
            model, tok = fresh_model()
            summary = train(model, tok, small, bench_run("vanilla", p.name), precision=resolve(p.name, common.DEVICE))
            times[f"loop {name}"].append(summary["wall_time_s"])
        model, tok = fresh_model()
        batches = epoch_batches(small, common.BATCH, np.random.default_rng([1, 0]))
        times["raw bf16"].append(raw_loop(model, tok, batches, bf16))
    rate = {k: items / median(v) for k, v in times.items()}
    ratio = [r / lp for r, lp in zip(times["raw bf16+fused"], times["loop bf16+fused"])]
    row("training loop / raw PyTorch loop (bf16+fused)", median(ratio), "x", target=">= 0.95",
        ok=median(ratio) >= 0.95, note="speed of beluga.train.loop.train relative to the raw loop")
    ratio32 = [r / lp for r, lp in zip(times["raw fp32"], times["loop fp32"])]
    row("training loop / raw PyTorch loop (fp32)", median(ratio32), "x", target=">= 0.95",
        ok=median(ratio32) >= 0.95)
    row("training items/s fp32 (raw loop)", rate["raw fp32"], "items/s")
    row("training items/s bf16 autocast", rate["raw bf16"], "items/s", baseline=rate["raw fp32"])
    row("training items/s bf16 + fused AdamW", rate["raw bf16+fused"], "items/s", baseline=rate["raw fp32"])
    row("training items/s, the loop as the pipeline runs it", rate["loop bf16+fused"], "items/s",
        baseline=rate["loop fp32"])
    seqs = sum(len(v) * (1 if k in ("MFT", "iid") else 2) for k, v in small.items())
    out = {"train_items_per_s": rate, "train_items": items, "train_seq_per_s": rate["loop bf16+fused"] * seqs / items}
    if common.DEVICE.type == "cuda":
        model, tok = fresh_model()
        n_params = non_embedding_params(model)
        texts = [t for v in small.values() for it in v for t in it.inputs[:2]]
        tokens = sum(len(x) for x in tok(texts, truncation=True, max_length=common.MAX_LENGTH)["input_ids"])
        achieved = 6 * n_params * tokens / (items / rate["loop bf16+fused"])
        peak, name = peak_flops()
        if peak:
            out["mfu"] = achieved / peak
            row("training model FLOP utilisation (CUDA, bf16)", out["mfu"], "share",
                note=f"6 x {n_params / 1e6:.1f}M non-embedding params x real tokens / {name} dense bf16 peak")
    return out
