"""What every benchmark shares: the measurement's settings (set once by ``scripts/benchmark.py``'s ``main``,
or by a worker process from its spec), the table of figures (:func:`row`), the models it trains
(:func:`fresh_model`), the device's peak FLOP/s and memory, and the run every timed epoch starts from
(:func:`bench_run`). The settings are module attributes (``common.DEVICE``...): the other modules read them
through the module, at call time."""

from __future__ import annotations

import contextlib
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "benchmark.py"   # the command: worker processes are started as ``SCRIPT --worker ...``
#: the interpreter of worker processes: this one, with ``-S`` when it runs without site-packages (a bare
#: environment, scripts/bare_env.py)
PYTHON = [sys.executable, *(["-S"] if sys.flags.no_site else [])]

MAX_LENGTH, BATCH, MODEL = 48, 16, "default"   # --max-length, --batch-size, --model (CUDA: 128, 16, bert-base)
ROWS: list[dict] = []
DEVICE = None   # torch.device, set by main() (or a worker)
BUNDLE: dict | None = None   # --bundle: the bundle read (bench.bundle.load_bundle); None: the project's environment
RESULTS: dict = {}   # the JSON being written (main() keeps it; :func:`save` writes it after every block)
OUT_PATH: str | None = None


def save() -> None:
    """Write :data:`RESULTS` (with the rows so far) to ``--out`` now, atomically: a run stopped at a time limit
    keeps every block that ended (and the variants measured so far, ``partial``)."""
    if OUT_PATH is None:
        return
    from beluga.core.io import write_json

    write_json({**RESULTS, "rows": ROWS}, OUT_PATH)


def partial(key: str, value) -> None:
    """Record a block's results so far under ``partial.<key>`` and write the JSON (:func:`save`)."""
    RESULTS.setdefault("partial", {})[key] = value
    save()


def prec(name: str, fused: bool):
    """A Precision on the benchmark's device (TF32 with bf16 on CUDA, as the pipeline's jobs)."""
    from beluga.model.precision import Precision

    return Precision(name, DEVICE.type, fused, DEVICE.type == "cuda" and name != "fp32")


def sync():
    import torch

    if DEVICE.type == "cuda":
        torch.cuda.synchronize()


def row(figure: str, value: float, unit: str = "", baseline: float | None = None, target: str = "",
        ok: bool | None = None, note: str = "") -> None:
    ratio = None if baseline in (None, 0) else value / baseline
    ROWS.append({"figure": figure, "value": value, "unit": unit, "baseline": baseline, "ratio": ratio,
                 "target": target, "ok": ok, "note": note})
    b = "" if baseline is None else f"{baseline:10.3f}"
    r = "" if ratio is None else f"{ratio:6.2f}x"
    flag = "" if ok is None else ("ok" if ok else "MISSED")
    print(f"{figure:<58} {value:10.3f} {unit:<10} {b:>10} {r:>8}  {target:<10} {flag}", flush=True)


def median(xs):
    return float(statistics.median(xs))


def bench_run(method: str, precision: str):
    """The FoldRun (beluga/train/settings.py) of a timed epoch: the default config's
    settings, the method's defaults, lr 5e-5, one epoch, no checkpoints."""
    import dataclasses

    if BUNDLE is not None:   # the settings the bundle was made with (no config read, no snakemake)
        from beluga.train.settings import FoldRun

        run = FoldRun.from_dict(BUNDLE["run"])
        if run.method != method:
            raise SystemExit(f"benchmark --bundle: the bundle's run is {run.method}, not {method}")
        return dataclasses.replace(run, precision=precision, max_length=MAX_LENGTH, model=MODEL, start_label=MODEL,
                                   hparams={**run.hparams, "batch_size": BATCH})
    from beluga.methods import method_hparams
    from beluga.train.settings import fold_run
    from beluga.workflow.plan import load_config

    cfg = load_config(str(REPO / "config.yaml"))
    run = fold_run(cfg, cfg["training"], task="bench", task_type="sent", configuration="iid_to_iid_plus_t",
                   method=method, partition="seen", fold="all", held_out=(), functionalities=(), model=MODEL,
                   start_label=MODEL, hparams={"lr": 5e-5, "batch_size": BATCH, "epochs": 1, **method_hparams(method)},
                   seed=1, threads=1, checkpoint_dir=None)
    return dataclasses.replace(run, precision=precision, checkpoint_every_s=0.0,
                               max_length=MAX_LENGTH, iid_in_mix=None)


#: BERT sizes by name (``--model`` / ``--large-model``): the hub model when it is in the Hugging Face cache, else
#: its architecture built from its config (random weights; the default model's tokenizer: BERT's uncased
#: vocabulary); ``tiny``: the pipeline's ``tiny-random`` size (2 layers x 32), for dry runs
SIZED = {"bert-base": ("bert-base-uncased", {"hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12,
                                              "intermediate_size": 3072}),
         "bert-large": ("bert-large-uncased", {"hidden_size": 1024, "num_hidden_layers": 24,
                                                "num_attention_heads": 16, "intermediate_size": 4096}),
         "tiny": (None, {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2,
                         "intermediate_size": 64})}
MODEL_SOURCE: dict[str, str] = {}   # spec -> where its weights came from (printed, in the JSON)


def tokenizer_source() -> str:
    """The tokenizer of the models built from a config: the bundle's, else the default model's."""
    if BUNDLE is not None:
        return BUNDLE["tokenizer"]
    from beluga.model.modeling import default_model_path

    return default_model_path()


def load_bench_model(spec: str, overrides: dict | None = None, head: str = "classification"):
    """(model, tokenizer) of a model spec (see :data:`SIZED`), with a classification head (two labels) or a
    span (``qa``) head: loaded on the CPU, or built from its config on the benchmark's device (random
    weights). With a bundle only the sizes of :data:`SIZED`."""
    from beluga.core.errors import ModelError

    if spec not in SIZED:
        if BUNDLE is not None:
            raise SystemExit(f"benchmark --bundle: model {spec!r}: a bundle runs the sizes {', '.join(SIZED)} "
                             "(random weights, the bundle's tokenizer)")
        from beluga.model.modeling import load_model

        MODEL_SOURCE.setdefault(spec, spec)
        return load_model(spec, 2, config_overrides=overrides or None, head=head)
    hub, size = SIZED[spec]
    if hub is not None and BUNDLE is None:
        from beluga.model.modeling import load_model

        try:
            out = load_model(hub, 2, config_overrides=overrides or None, head=head)
            MODEL_SOURCE.setdefault(spec, f"{hub} (Hugging Face cache)")
            return out
        except ModelError:
            pass
    from transformers import (
        AutoModelForQuestionAnswering,
        AutoModelForSequenceClassification,
        AutoTokenizer,
        BertConfig,
    )

    tok = AutoTokenizer.from_pretrained(tokenizer_source())
    config = BertConfig(vocab_size=tok.vocab_size, max_position_embeddings=512, **size,
                        **{"num_labels": 2, **(overrides or {})})
    why = "a dry-run size" if hub is None else ("the bundle's run builds it" if BUNDLE is not None else
                                                f"{hub} is not in the cache")
    MODEL_SOURCE.setdefault(spec, f"{hub or spec} architecture from its config, random weights ({why})")
    auto = AutoModelForQuestionAnswering if head == "qa" else AutoModelForSequenceClassification
    with DEVICE if DEVICE is not None else contextlib.nullcontext():   # initialised where it trains: fast on a GPU
        return auto.from_config(config), tok


def fresh_model(spec: str | None = None, head: str = "classification", **overrides):
    """The model ``spec`` (default ``--model``) on the benchmark's device, from the same start every time."""
    from beluga.model.modeling import set_seed

    set_seed(1)
    model, tok = load_bench_model(spec or MODEL, overrides, head)
    return model.to(DEVICE), tok


def non_embedding_params(model) -> int:
    return sum(p.numel() for n, p in model.named_parameters() if "embeddings" not in n)


#: dense bf16 peak FLOP/s by device name (the first key the name contains); MFU's denominator
PEAK_BF16 = (("H100 PCIe", 756e12), ("H100 NVL", 835e12), ("H100", 989e12), ("H200", 989e12), ("A100", 312e12),
             ("L40S", 362e12), ("A10G", 70e12), ("L4", 121e12))
PEAK_OVERRIDE: float | None = None   # --peak-flops


def peak_flops() -> tuple[float | None, str]:
    """(dense bf16 peak FLOP/s or None, device name) of the benchmark's device (None on the CPU)."""
    if DEVICE.type != "cuda":
        return None, "CPU"
    import torch

    name = torch.cuda.get_device_name(DEVICE)
    if PEAK_OVERRIDE:
        return PEAK_OVERRIDE, name
    return next((v for k, v in PEAK_BF16 if k in name), None), name


def subset(streams, n_items: int) -> dict:
    """The first items of every stream, ``n_items`` in all (proportionally)."""
    total = sum(len(v) for v in streams.values())
    return {k: v[:max(1, round(len(v) * n_items / total))] for k, v in streams.items()}


WORKER_TAG = "BENCH_WORKER "   # starts the one line of results a worker process prints (jobs, fixed_cost)


def setup_torch(device: str) -> None:
    """As the pipeline's jobs (beluga.model.modeling.configure_torch): one intra-op thread, deterministic
    algorithms on the CPU only."""
    import torch

    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(device == "cpu", warn_only=True)


def free() -> None:
    import gc

    import torch

    gc.collect()
    if DEVICE.type == "cuda":
        torch.cuda.empty_cache()


def peak_mem_mib() -> float:
    """CUDA: the peak of allocated memory since the last reset; CPU: the process's max RSS so far (VmHWM:
    getrusage's ru_maxrss would carry the parent's over exec)."""
    import torch

    if DEVICE.type == "cuda":
        return torch.cuda.max_memory_allocated(DEVICE) / 2**20
    with contextlib.suppress(OSError, StopIteration, ValueError):
        with open("/proc/self/status") as fh:
            return int(next(ln.split()[1] for ln in fh if ln.startswith("VmHWM:"))) / 1024   # kB
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
