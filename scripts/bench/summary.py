"""What the JSON holds beside the figures: the machine measured on, and the throughput table that
``python -m beluga plan`` reads (sequences/s of the model at its length, one job)."""

from __future__ import annotations

import contextlib
import os
import platform

from bench import common


def machine_info() -> dict:
    """The CPU (its model name from /proc/cpuinfo where there is one), cores, torch and the first GPU."""
    import torch

    machine = {"cpu": platform.processor() or platform.machine(), "cores": os.cpu_count(),
               "torch": torch.__version__, "threads": 1, "cpu_capability": torch.backends.cpu.get_cpu_capability(),
               "cuda": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None}
    with contextlib.suppress(OSError):
        with open("/proc/cpuinfo") as fh:
            machine["cpu"] = next(ln.split(":", 1)[1].strip() for ln in fh if ln.startswith("model name"))
    return machine


#: the base block's data whose rates are the table's: sentences at their real lengths (the default fold, the
#: paper's SST-2 or QQP sample), not the full windows of ``long``
REAL_LENGTH_DATA = ("fold", "sst2", "qqp")


def throughput_table(results: dict, machine: dict, device: str) -> dict:
    """``throughput.<device>``: the reference model's size and length, training and prediction rates, the fixed
    seconds per job and the methods' costs; with the variants on real-length data (:data:`REAL_LENGTH_DATA`),
    their steady-state figures (``train_data``: which);
    a bundle run's launch -> first step (``fixed_s_launch_to_first_step``: not a whole job's fixed seconds);
    with READ's block (``--large-data qa``), READ's own row ``read`` (``train_seq_per_s``: questions, i.e.
    training examples, per second; each has one or more windows: ``train_windows_per_s``,
    ``windows_per_question``)."""
    fixed = results.get("fold_job", {}).get("fast exit")
    fixed_s = None if fixed is None else fixed["wall_s"] * fixed["fixed_share"]
    versions = results.get("versions", {})
    table = {
        "machine": f"{machine['cuda'] if device == 'cuda' else machine['cpu']}, measured {results['when']} "
                   f"(torch {versions.get('torch')}, transformers {versions.get('transformers')})",
        "train_seq_per_s": results.get("train_seq_per_s"), "predict_seq_per_s": results.get("predict_seq_per_s"),
        "fixed_s_per_job": fixed_s,
        # a bundle run's fixed cost: launch -> first step with a model built on the device (no weights loaded,
        # no config, data staging or outputs): not a job's fixed seconds, so not given as fixed_s_per_job
        "fixed_s_launch_to_first_step": (results["fixed_cost"]["parts_s"]["total_s"] if results.get("fixed_cost")
                                         else None),
        "method_cost": results.get("method_cost", {})}
    chosen = results.get("variants", {}).get("base")
    if chosen and chosen["data"] in REAL_LENGTH_DATA:
        # the steady-state figures of the variants (same model, length and batch as the table's reference) on
        # sentences of real lengths (not full windows)
        v = chosen["variants"]
        jobs = {k: x for k, x in v.items() if k.startswith("jobs_")}
        best = max(jobs.values(), key=lambda x: x["seq_per_s"]) if jobs else None
        table.update({"train_seq_per_s": v["host_hygiene"]["seq_per_s"], "train_loop": "host hygiene, one job",
                      "train_data": chosen["data"],
                      "train_seq_per_s_current_loop": v["current"]["seq_per_s"],
                      "jobs_per_gpu": None if best is None else best["jobs"],
                      "train_seq_per_s_per_gpu": None if best is None else best["seq_per_s"],
                      "mfu": (best or v["host_hygiene"])["mfu"], "mfu_one_job": v["host_hygiene"]["mfu"]})
    if table["train_seq_per_s"] is not None:   # the row's size, length and batch are those of its rate
        table.update({"ref_size": list(size_of(common.MODEL)), "ref_length": common.MAX_LENGTH,
                      "batch_size": common.BATCH})
    large = results.get("variants", {}).get("large")
    if large and large.get("task") == "read":
        # READ's own rate: its model, length and batch, its span loss; the plan counts questions (training
        # examples: steps/s x batch), each of one or more windows (train_windows_per_s)
        v = large["variants"]
        jobs = {k: x for k, x in v.items() if k.startswith("jobs_")}
        best = max(jobs.values(), key=lambda x: x["seq_per_s"]) if jobs else None
        one = v["host_hygiene"]
        table["read"] = {
            "model": large["model"], "size": list(size_of(large["model"])), "max_length": large["max_length"],
            "batch_size": large["batch_size"], "train_seq_per_s": one["steps_per_s"] * large["batch_size"],
            "train_windows_per_s": one["seq_per_s"],
            "train_questions_per_s": one["steps_per_s"] * large["batch_size"],
            "train_questions_per_s_current_loop": v["current"]["steps_per_s"] * large["batch_size"],
            "windows_per_question": large["seq_per_step"] / large["batch_size"],
            "jobs_per_gpu": None if best is None else best["jobs"],
            "train_questions_per_s_per_gpu": None if best is None else best["steps_per_s"] * large["batch_size"],
            "train_seq_per_s_per_gpu": None if best is None else best["steps_per_s"] * large["batch_size"],
            "machine": table["machine"],
            "mfu": (best or one)["mfu"], "mfu_one_job": one["mfu"], "train_loop": "host hygiene, one job"}
    return table


def size_of(spec: str) -> tuple[int, int, int]:
    """(layers, hidden, intermediate) of a model spec: the benchmark's sizes, else the plan's table."""
    if spec in common.SIZED:
        size = common.SIZED[spec][1]
        return size["num_hidden_layers"], size["hidden_size"], size["intermediate_size"]
    from beluga.workflow.cost import model_size

    return model_size(spec)
