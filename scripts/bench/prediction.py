"""The prediction figures: ``beluga.model.modeling.predict_probs`` against a raw ``inference_mode`` loop over the
same batches, in fp32 and bf16, and how often bf16 predicts fp32's class."""

from __future__ import annotations

import time

from bench import common
from bench.common import fresh_model, median, prec, row, sync


def bench_prediction(iid, reps: int, n: int) -> dict:
    import pandas as pd
    import torch

    from beluga.heads import get_head

    texts = list(pd.read_parquet(iid["pool"])["text"][:n])
    model, tok = fresh_model()
    model.eval()
    fp32, bf16 = prec("fp32", True), prec("bf16", True)

    def raw(prec):
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        sync()
        t = time.perf_counter()
        with torch.inference_mode():
            for s in range(0, len(order), 64):
                enc = tok([texts[i] for i in order[s:s + 64]], padding=True, truncation=True,
                          max_length=common.MAX_LENGTH, return_tensors="pt")
                with prec.autocast():
                    logits = model(**{k: v.to(common.DEVICE) for k, v in enc.items()}).logits
                torch.softmax(logits.float(), -1).cpu()
        sync()
        return time.perf_counter() - t

    def ours(prec):
        sync()
        t = time.perf_counter()
        get_head("classification").predict(model, tok, texts, None, 64, common.MAX_LENGTH, precision=prec)
        sync()
        return time.perf_counter() - t

    times = {k: [] for k in ("raw fp32", "ours fp32", "raw bf16", "ours bf16")}
    for _ in range(reps):
        for name, p in (("fp32", fp32), ("bf16", bf16)):
            times[f"raw {name}"].append(raw(p))
            times[f"ours {name}"].append(ours(p))
    ratio = [r / o for r, o in zip(times["raw bf16"], times["ours bf16"])]
    row("prediction / raw inference_mode loop (bf16)", median(ratio), "x", target=">= 0.95", ok=median(ratio) >= 0.95)
    rate = {k: len(texts) / median(v) for k, v in times.items()}
    row("prediction inputs/s fp32", rate["ours fp32"], "inputs/s")
    row("prediction inputs/s bf16", rate["ours bf16"], "inputs/s", baseline=rate["ours fp32"])
    p32 = get_head("classification").predict(model, tok, texts, None, 64, common.MAX_LENGTH, precision=fp32)
    p16 = get_head("classification").predict(model, tok, texts, None, 64, common.MAX_LENGTH, precision=bf16)
    same = float((p32.argmax(1) == p16.argmax(1)).mean())
    row("bf16 vs fp32: same predicted class", same, "share", note=f"max |dp| {abs(p32 - p16).max():.4f}")
    return {"predict_inputs_per_s": rate, "predict_seq_per_s": rate["ours bf16"], "bf16_same_class": same}
