#!/usr/bin/env bash
# The GPU measurement in one command, on a bare GPU machine (python3 with torch, transformers, numpy, pandas,
# pyarrow, pyyaml, safetensors, scipy; no network, no project venv):
#
#     bash scripts/gpu_session.sh OUT_DIR
#     bash scripts/gpu_session.sh --cpu-dry-run OUT_DIR    # the same stages on the CPU, tiny model
#
# Bundle: .bench-bundle (the repository's root; git ignores it). Make it first, where the project's
# environment and the paper data (../shared/data/iid: sst2/, qqp/, squad/) are, and carry it to the GPU
# machine with the repository:
#     .venv/bin/python scripts/benchmark.py --make-bundle .bench-bundle
# (device tool: carry [".bench-bundle"]). BUNDLE=DIR names another one.
#
# Time budget: 9 minutes on an H100 in all. Each stage runs under its own `timeout` (+ 5 s grace), the sum of
# the limits 500 s (S0 30, S1 110, S2 2 x 75, S3 95, S4 115), the rest for the machine's preamble (the bare
# interpreter's first imports). Every stage writes its JSON into OUT_DIR as it goes ("complete": false and
# the running "block" until it ends; a stage stopped at its limit keeps what it measured, the variants so far
# under "partial"); the log of all of them is OUT_DIR/session.log. Every process, the K-jobs workers too,
# trains one untimed round before it is timed (--warm-round: cold first rounds were up to 2.8x slower; in the
# dry run only S2's).
# The GPU plan's table: commit OUT_DIR as benchmarks/gpu/<date>-<machine>/ (beluga/workflow/gpu_files.py reads
# it; a --cpu-dry-run's folder is refused there).
# Exit status: 0, or 1 when a stage broke (not when one stopped at its limit), 2 for bad arguments.
#   s0_env.json      S0: versions, the GPU (torch, nvidia-smi), and a user-level MPS daemon tried in a
#                    temporary pipe directory (CUDA_MPS_PIPE_DIRECTORY / CUDA_MPS_LOG_DIRECTORY,
#                    nvidia-cuda-mps-control -d, one CUDA client, quit): "mps.status" works / failed /
#                    unavailable. S2 runs under MPS only where it worked.
#   s1_eager.json    S1: eager BERT-base at 128 tokens on the paper's SST-2 sentences and QQP pairs (real
#                    lengths, the bundle's samples), profiled at batch 8 and 16 ("profiles": torch.profiler's
#                    kernel time and GPU busy fraction; CUDA events: the device time of a step and of its
#                    optimizer step), the current loop and host hygiene at batch 16 on SST-2 (the plan's
#                    table: throughput.cuda), a job's launch -> first step
#   s2_jobs_mps_off.json, s2_jobs_mps_on.json
#                    S2: K = 2 / 4 / 8 processes of BERT-base on SST-2, batch 16, without and with the MPS
#                    daemon: aggregate throughput, and the GPU's utilisation in the timed window (nvidia-smi
#                    every 200 ms) per K
#   s3_read.json     S3: READ, BERT-large at 384 tokens on SQuAD questions with the span loss: profiled at
#                    batch 2 and 3; the loops and K = 2 / 4 at batch 3 (the plan's READ row)
#   s4_graphs.json   S4: training.compile: graphs (CUDA only) for BERT-base (SST-2, batch 16) and READ on
#                    BERT-large (SQuAD questions with the span loss, 384 tokens, batch 3: the plan's READ row):
#                    capture time (compile_s), steps/s, drift against the eager loop after 40 updates (20
#                    warm-up + 20 timed: weight_drift, loss_drift, drift_after_steps), graphed x K = 2 / 4
# On the CPU (--cpu-dry-run) the GPU figures read n/a, MPS is unavailable (s2_jobs_mps_on.json is not
# written: S2 without MPS only) and graphs are skipped ("CUDA only"); the stages check the plumbing.
# Environment: PYTHON (default python3), BUNDLE (default .bench-bundle), STAGE_SCALE (multiplies every stage's
# time limit; default 1).
set -u
dry=0
if [ "${1:-}" = "--cpu-dry-run" ]; then
    dry=1
    shift
fi
if [ $# -ne 1 ]; then
    echo "usage: bash scripts/gpu_session.sh [--cpu-dry-run] OUT_DIR" >&2
    exit 2
fi
out=$1
root=$(cd "$(dirname "$0")/.." && pwd)
bundle=${BUNDLE:-$root/.bench-bundle}
py=${PYTHON:-python3}
scale=${STAGE_SCALE:-1}
if ! awk -v s="$scale" 'BEGIN { exit !(s > 0) }'; then
    echo "gpu_session: STAGE_SCALE=$scale: a positive number is needed" >&2
    exit 2
fi
mkdir -p "$out" || exit 2
log=$out/session.log
if [ ! -f "$bundle/bundle.json" ]; then
    echo "gpu_session: $bundle/bundle.json not found: make the bundle first (.venv/bin/python scripts/benchmark.py --make-bundle .bench-bundle) and carry it" | tee -a "$log" >&2
    exit 2
fi
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_VERBOSITY=error TOKENIZERS_PARALLELISM=false
pyrun=("$py")
bare=""
if [ $dry -eq 1 ]; then
    # a bare environment: only the GPU machine's packages import (scripts/bare_env.py), as there
    bare=$(mktemp -d)
    trap 'rm -rf "$bare"' EXIT
    "$py" "$root/scripts/bare_env.py" "$bare/site" >>"$log" 2>&1 || { echo "gpu_session: bare_env failed (see $log)" >&2; exit 2; }
    export PYTHONPATH=$bare/site
    pyrun=("$py" -S)
fi

{
    echo "== gpu_session $(date -u '+%Y-%m-%d %H:%M:%S') UTC; dry run: $dry; bundle: $bundle"
    uname -srm
    nproc
    command -v nvidia-smi >/dev/null && timeout 20 nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv
    "${pyrun[@]}" -c 'import json, sys; b = json.load(open(sys.argv[1])); print("bundle made", b["made"], "at commit", b["commit"])' "$bundle/bundle.json"
} >>"$log" 2>&1

if [ $dry -eq 1 ]; then
    # no warm round but in S2 (its workers'): the dry run checks the plumbing, not the speed
    common=(--bundle "$bundle" --device cpu --max-length 128 --reps 1 --warmup 2 --steps 3)
    warm_s2=(--warm-round)
    base=tiny; large=tiny; jobs_k=2; jobs_read=2; jobs_graphs=2
    limits=(60 120 90 90 90)   # generous: the dry run checks the plumbing, not the speed
else
    # sized from the first session (benchmarks/gpu/2026-11-27-h200-session.log): a process start and its
    # imports ~15 s, a BERT-base eager step ~70 ms, a K-jobs round 20-40 s
    common=(--bundle "$bundle" --device cuda --max-length 128 --reps 1 --warm-round --warmup 10 --steps 40)
    warm_s2=()
    base=bert-base; large=bert-large; jobs_k=2,4,8; jobs_read=2,4; jobs_graphs=2,4
    limits=(30 110 75 95 115)
fi

failed=0
stage() {   # stage NAME LIMIT_S COMMAND...: one process under its own time limit
    local name=$1 limit=$2
    shift 2
    limit=$(awk -v l="$limit" -v s="$scale" 'BEGIN { printf "%d", l * s }')
    echo "== stage $name (limit ${limit} s): $*" >>"$log"
    local t0=$SECONDS
    timeout --kill-after=5 "$limit" "$@" >>"$log" 2>&1
    local rc=$?
    local why=""
    [ $rc -eq 124 ] || [ $rc -eq 137 ] && why=" (stopped at its time limit: the JSON keeps what ended)"
    echo "== stage $name: exit $rc after $((SECONDS - t0)) s$why" >>"$log"
    echo "stage $name: exit $rc after $((SECONDS - t0)) s$why"
    if [ $rc -ne 0 ] && [ $rc -ne 124 ] && [ $rc -ne 137 ]; then
        failed=1
    fi
}
bench() {   # bench NAME LIMIT_S ARGS...: scripts/benchmark.py, its JSON OUT/NAME.json
    local name=$1 limit=$2
    shift 2
    stage "$name" "$limit" "${pyrun[@]}" "$root/scripts/benchmark.py" "$@" --out "$out/$name.json"
}

# the user-level MPS daemon: its pipe and log directories in a temporary folder; clients find it through
# CUDA_MPS_PIPE_DIRECTORY (exported only while it runs)
mps_dir=$(mktemp -d)
mps_on=0
mps_start() {
    mkdir -p "$mps_dir/pipe" "$mps_dir/log"
    CUDA_MPS_PIPE_DIRECTORY=$mps_dir/pipe CUDA_MPS_LOG_DIRECTORY=$mps_dir/log timeout 20 nvidia-cuda-mps-control -d \
        >>"$log" 2>&1 || return 1
    export CUDA_MPS_PIPE_DIRECTORY=$mps_dir/pipe CUDA_MPS_LOG_DIRECTORY=$mps_dir/log
    mps_on=1
}
mps_stop() {
    [ $mps_on -eq 1 ] || return 0
    echo quit | timeout 20 nvidia-cuda-mps-control >>"$log" 2>&1
    sleep 1
    unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
    mps_on=0
}
cleanup() {
    mps_stop
    rm -rf "$mps_dir" ${bare:+"$bare"}
}
trap cleanup EXIT

# S0: versions, GPU, the MPS daemon tried once (a CUDA client must reach a server through it)
mps_status=unavailable
mps_detail="nvidia-cuda-mps-control not found"
if [ $dry -eq 1 ]; then
    mps_detail="CPU dry run: no GPU"
elif command -v nvidia-cuda-mps-control >/dev/null; then
    if ! mps_start; then
        mps_status=failed
        mps_detail="nvidia-cuda-mps-control -d failed (see session.log)"
    elif timeout 60 "${pyrun[@]}" -c 'import torch; torch.zeros(1, device="cuda").add_(1); torch.cuda.synchronize()' >>"$log" 2>&1 \
            && echo get_server_list | timeout 10 nvidia-cuda-mps-control 2>>"$log" | grep -q '[0-9]'; then
        mps_status=works
        mps_detail="user-level daemon in a temporary pipe directory; a CUDA client ran through its server"
    else
        mps_status=failed
        mps_detail="the daemon started but no CUDA client reached an MPS server (see session.log)"
    fi
    mps_stop
fi
stage s0_env "${limits[0]}" "${pyrun[@]}" "$root/scripts/bench/session_env.py" "$out/s0_env.json" "$mps_status" \
    "$mps_detail"

# S1: eager BERT-base on SST-2 and QQP at batch 8 and 16, profiled; the loops on SST-2 at 16; the fixed cost
bench s1_eager "${limits[1]}" "${common[@]}" --model "$base" --base-data sst2 --batch-size 16 --profile \
    --profile-data sst2,qqp --profile-batches 8,16 --profile-steps 10 --variants --no-large \
    --compile-variants none --jobs-per-gpu "" --fixed-cost

# S2: K jobs per GPU, without and with MPS
s2=(--model "$base" --base-data sst2 --batch-size 16 --no-profile --variants --no-large --compile-variants none
    --jobs-per-gpu "$jobs_k" --jobs-reps 1 --no-fixed-cost "${warm_s2[@]}")
bench s2_jobs_mps_off "${limits[2]}" "${common[@]}" "${s2[@]}"
if [ "$mps_status" = works ] && mps_start; then
    bench s2_jobs_mps_on "${limits[2]}" "${common[@]}" "${s2[@]}"
    mps_stop
else
    echo "== stage s2_jobs_mps_on: not run (MPS $mps_status: $mps_detail)" >>"$log"
    echo "stage s2_jobs_mps_on: not run (MPS $mps_status)"
fi

# S3: READ on BERT-large, 384 tokens, span loss: profiled at batch 2 and 3, K jobs at 3
bench s3_read "${limits[3]}" "${common[@]}" --model "$base" --no-variants --large --large-model "$large" \
    --large-data qa --large-max-length 384 --large-batch-size 3 --profile --profile-block large \
    --profile-batches 2,3 --profile-steps 10 --compile-variants none --jobs-per-gpu "$jobs_read" --jobs-reps 1 \
    --no-fixed-cost

# S4: whole-step CUDA graphs, BERT-base and READ on BERT-large; drift after 40 updates (warm-up = compile warm-up)
bench s4_graphs "${limits[4]}" "${common[@]}" --model "$base" --base-data sst2 --batch-size 16 --no-profile \
    --variants --large --large-model "$large" --large-data qa --large-max-length 384 --large-batch-size 3 \
    --warmup 20 --compile-warmup 20 --steps 20 --compile-variants graphs --jobs-compile graphs \
    --jobs-per-gpu "$jobs_graphs" --jobs-reps 1 --no-fixed-cost

echo "== gpu_session done $(date -u '+%H:%M:%S') UTC" >>"$log"
ls -l "$out" >>"$log"
# a stage stopped at its limit is not a failure (its JSON keeps what ended); one that broke is
[ $failed -eq 0 ] || echo "gpu_session: a stage failed (see $log)" >&2
exit $failed
