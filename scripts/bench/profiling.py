"""The profile (``--profile``): the current loop and the one with host hygiene under ``torch.profiler``, per
step: wall and host time, aten ops; on CUDA the GPU busy fraction, kernels, copies and syncs; the device time of
an update and of its optimizer step (CUDA events: :class:`bench.loop.StepClock`). One profile per workload
(``--profile-data`` x ``--profile-batches``)."""

from __future__ import annotations

from bench import common
from bench.common import free, fresh_model, peak_flops, row
from bench.loop import timed_train
from bench.workloads import Workload


def profile_summary(prof, steps: int, wall_s: float, host_s: float) -> dict:
    from collections import Counter

    from torch.autograd import DeviceType

    events = list(prof.events())
    cpu = [e for e in events if e.device_type == DeviceType.CPU]
    aten = [e for e in cpu if e.name.startswith("aten::")]
    top = [e for e in aten if e.cpu_parent is None]
    out = {"steps": steps, "wall_ms_per_step": 1e3 * wall_s / steps, "host_ms_per_step": 1e3 * host_s,
           "aten_ops_per_step": len(aten) / steps, "top_level_ops_per_step": len(top) / steps,
           "most_called_ops_per_step": {k: c / steps for k, c in Counter(e.name for e in top).most_common(8)}}
    if common.DEVICE.type == "cuda":
        # the device's activities: kernels, copies, sets (not the GPU-side ranges of annotations such as
        # "Optimizer.step#AdamW.step", which span kernels already counted)
        dev = [e for e in events if e.device_type == DeviceType.CUDA and not getattr(e, "is_user_annotation", False)
               and "#" not in e.name]
        kernels = [e for e in dev if not e.name.lower().startswith(("memcpy", "memset"))]
        kernel_s = sum(e.time_range.elapsed_us() for e in kernels) / 1e6
        spans, busy, end = sorted((e.time_range.start, e.time_range.end) for e in dev), 0.0, float("-inf")
        for a, b in spans:   # the union of the device's busy intervals (streams may overlap)
            if b > end:
                busy += b - max(a, end)
                end = b
        runtime = Counter(e.name for e in cpu if e.name.startswith("cu"))
        syncs = sum(c for k, c in runtime.items() if "Synchronize" in k) - 1   # less the window's closing sync
        out.update(gpu_busy_fraction=kernel_s / wall_s, gpu_busy_fraction_incl_copies=busy / 1e6 / wall_s,
                   kernels_per_step=len(kernels) / steps, kernel_ms_per_step=1e3 * kernel_s / steps,
                   copies_per_step=(len(dev) - len(kernels)) / steps, syncs_per_step=max(0, syncs) / steps,
                   runtime_calls_per_step={k: c / steps for k, c in runtime.most_common(8)})
    return out


def bench_profile(wl: Workload, warmup: int, steps: int, warm_round: bool = False) -> dict:
    """``warm_round``: one untimed run of the current loop first (the process's one-time costs, e.g. kernel
    choice per shape, are not profiled in the first loop)."""
    from torch.profiler import ProfilerActivity, profile

    if warm_round:
        model, tok = fresh_model(wl.model, wl.head)
        timed_train(wl, model, tok, False, "off", warmup, steps)
        del model
        free()

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if common.DEVICE.type == "cuda" else [])
    print(f"\nprofile: {steps} steps of each loop after {warmup} warm-up steps, {wl.model} at {wl.max_length} "
          f"tokens, batch {wl.batch}, data {wl.data} (torch.profiler: {', '.join(a.name for a in activities)})",
          flush=True)
    out: dict = {"model": wl.model, "max_length": wl.max_length, "batch_size": wl.batch, "data": wl.data,
                 "task": wl.task, "warmup": warmup, "steps": steps, "device": peak_flops()[1]}
    for key, hygiene in (("current", False), ("host_hygiene", True)):
        model, tok = fresh_model(wl.model, wl.head)
        prof = profile(activities=activities)
        r = timed_train(wl, model, tok, hygiene, "off", warmup, steps, profiler=prof)
        out[key] = {**profile_summary(prof, steps, r["elapsed_s"], r["host_s_per_step"]),
                    **{k: r[k] for k in ("device_ms_per_step", "optimizer_ms_per_step", "clock")}}
        del model, prof
        free()
    head = (f"{'loop':<26} {'wall ms/step':>12} {'host ms/step':>12} {'device ms':>9} {'optim ms':>9} "
            f"{'aten ops':>9} {'top ops':>8}")
    if common.DEVICE.type == "cuda":
        head += f" {'GPU busy':>9} {'kernels':>8} {'kernel ms':>9} {'copies':>7} {'syncs':>6}"
    print(head)
    for key, label in (("current", "(a) current loop"), ("host_hygiene", "(b) host hygiene")):
        p = out[key]
        line = (f"{label:<26} {p['wall_ms_per_step']:12.2f} {p['host_ms_per_step']:12.2f} "
                f"{_ms(p['device_ms_per_step']):>9} {_ms(p['optimizer_ms_per_step']):>9} "
                f"{p['aten_ops_per_step']:9.0f} {p['top_level_ops_per_step']:8.0f}")
        if common.DEVICE.type == "cuda":
            line += (f" {p['gpu_busy_fraction']:9.1%} {p['kernels_per_step']:8.0f} {p['kernel_ms_per_step']:9.2f} "
                     f"{p['copies_per_step']:7.1f} {p['syncs_per_step']:6.1f}")
        print(line, flush=True)
    if common.DEVICE.type != "cuda":
        print("(CPU: no GPU figures; per step: host time, aten ops in all and at top level: not inside another op)")
    ops = ", ".join(f"{k} {v:.0f}" for k, v in out["host_hygiene"]["most_called_ops_per_step"].items())
    print(f"most called top-level ops per step (host hygiene): {ops}")
    tag = f" [{key_of(wl)}]"
    row(f"profile{tag}: host ms per step, host hygiene", out["host_hygiene"]["host_ms_per_step"], "ms",
        baseline=out["current"]["host_ms_per_step"], note="baseline: the current loop; under the profiler")
    if common.DEVICE.type == "cuda":
        row(f"profile{tag}: GPU busy fraction, host hygiene", out["host_hygiene"]["gpu_busy_fraction"], "share",
            baseline=out["current"]["gpu_busy_fraction"], note="sum of kernel time / wall time of the steps")
    return out


def _ms(v) -> str:
    return "n/a" if v is None else f"{v:.2f}"


def key_of(wl: Workload) -> str:
    """The profile's name in ``profiles``: its model, data and batch (``bert-base sst2 b16``)."""
    return f"{wl.model} {wl.data} b{wl.batch}"


def bench_profiles(workloads: list[Workload], warmup: int, steps: int, warm_round: bool = False) -> dict:
    """One profile per workload (the first one's process warm-up round only: the later ones share the process):
    ``profile`` is the first's (the keys the plan and the summaries read), ``profiles`` all of them by
    :func:`key_of`."""
    profiles = {}
    for i, wl in enumerate(workloads):
        profiles[key_of(wl)] = bench_profile(wl, warmup, steps, warm_round and i == 0)
        common.partial("profiles", profiles)
    common.RESULTS.get("partial", {}).pop("profiles", None)
    return {"profile": next(iter(profiles.values())), "profiles": profiles}
