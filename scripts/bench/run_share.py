"""A finished run's job-seconds (the ``BELUGA_TIMING`` line of every job's log): the share that is fixed
per-process cost, in all and per rule."""

from __future__ import annotations

import json
from pathlib import Path

from bench.common import row


def run_share(run_dir: Path) -> dict:
    """Job-seconds of the run whose logs are under ``run_dir/logs`` (the last
    run of each job), split into science and fixed per-process cost."""
    from beluga.workflow.smk import SCIENCE_PARTS, TIMING_TAG

    jobs = []
    for log in sorted((run_dir / "logs").rglob("*.log")):
        lines = [ln for ln in log.read_text(errors="replace").splitlines() if ln.startswith(TIMING_TAG)]
        if lines:
            jobs.append(json.loads(lines[-1][len(TIMING_TAG):]))
    if not jobs:
        print(f"(no finished run under {run_dir}/logs: run the README's first command, then this benchmark)")
        return {}
    total = fixed = 0.0
    per_rule: dict[str, list[float]] = {}
    for j in jobs:
        wall = j["call_end"] - j["process_start"]
        sci = sum(j["science"].get(k, 0.0) for k in SCIENCE_PARTS) if j["science"] else j["call_end"] - j["call_start"]
        total += wall
        fixed += wall - sci
        r = per_rule.setdefault(j["rule"], [0, 0.0, 0.0])
        r[0] += 1
        r[1] += wall
        r[2] += wall - sci
    share = fixed / total
    row(f"run {run_dir.name or '.'}: job-seconds ({len(jobs)} jobs)", total, "s")
    row("run: fixed per-process share of job-seconds", share, "share", target="<= 0.15", ok=share <= 0.15)
    for rule, (n, w, f) in sorted(per_rule.items(), key=lambda kv: -kv[1][1]):
        if w / total >= 0.01:
            row(f"  {rule}: {n} jobs, fixed share", f / w, "share", note=f"{w:.0f} job-s")
    return {"run": {"jobs": len(jobs), "job_seconds": total, "fixed_seconds": fixed, "fixed_share": share,
                    "per_rule": {k: {"jobs": v[0], "job_seconds": v[1], "fixed_seconds": v[2]}
                                 for k, v in per_rule.items()}}}
