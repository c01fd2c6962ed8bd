#!/usr/bin/env bash
# The GPU measurement in one command, on a bare GPU machine (python3 with torch, transformers, numpy, pandas,
# pyarrow, pyyaml, safetensors, scipy; no network, no project venv):
#
#     bash scripts/gpu_session.sh OUT_DIR
#     bash scripts/gpu_session.sh --cpu-dry-run OUT_DIR    # the same stages on the CPU, tiny model, < 2 min
#
# Bundle: .bench-bundle (the repository's root; git ignores it). Make it first, where the project's
# environment is, and carry it to the GPU machine with the repository:
#     .venv/bin/python scripts/benchmark.py --make-bundle .bench-bundle
# (device tool: carry [".bench-bundle"]). BUNDLE=DIR names another one.
#
# Stages, each under its own `timeout` (all within 9 minutes), each writing its JSON into OUT_DIR as it goes
# ("complete": false and the running "block" until it ends; a stage stopped at its limit keeps what it measured,
# the variants so far under "partial"), the log of all of them in OUT_DIR/session.log (4 files in all). With
# --warm-round (on a GPU) every process, the K-jobs workers too, trains one untimed round before it is timed:
# the first session's cold first rounds were up to 2.8x slower (per-shape kernel choice). Exit status: 0, or 1
# when a stage broke (not when one stopped at its limit), 2 for bad arguments.
#   a_eager.json    (a) eager, BERT-base size, 128 tokens, batch 16, the default fold: the current loop, host
#                   hygiene, the profile (GPU busy fraction, kernels and syncs per step), K = 2 / 4 / 8 jobs per
#                   GPU, a job's fixed cost
#   d_read.json     (d) READ: BERT-large size at 384 tokens, batch 3, SQuAD questions with the span loss: current
#                   loop, host hygiene, K = 2 jobs per GPU (the plan's READ row)
#   b_graphs.json   full 128-token windows (MFU): eager, and CUDA graphs (training.compile: graphs) with every
#                   shape compiled in the warm-up (compile time reported apart)
# Not in the 9 minutes (compiling BERT-base took over 100 s on the H200): compile default on the fold and K jobs
# compiled, `scripts/benchmark.py --bundle .bench-bundle --device cuda --compile-variants default
# --compile-warmup 30 --jobs-per-gpu 4 --jobs-compile default`.
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
    timeout 40 "${pyrun[@]}" -c 'import platform, torch, transformers, numpy, pandas; print("python", platform.python_version(), "torch", torch.__version__, "cuda", torch.version.cuda, "transformers", transformers.__version__, "numpy", numpy.__version__, "pandas", pandas.__version__); print("gpu:", torch.cuda.get_device_name(0) if torch.cuda.is_available() else None)'
    "${pyrun[@]}" -c 'import json, sys; b = json.load(open(sys.argv[1])); print("bundle made", b["made"], "at commit", b["commit"])' "$bundle/bundle.json"
} >>"$log" 2>&1

if [ $dry -eq 1 ]; then
    common=(--bundle "$bundle" --device cpu --model tiny --max-length 128 --batch-size 16 --reps 1 --warm-round --warmup 2 --steps 4)
    jobs_a=2; jobs_d=2; jobs_b=""
    large=(--large-model tiny)
    limits=(90 60 60)   # generous: the dry run checks the plumbing, not the speed
    modes=graphs        # CUDA graphs need a GPU: skipped on the CPU with a note
else
    # sized from the first session (benchmarks/gpu/2026-11-27-h200-session.log): a process start and its
    # imports ~15 s, a BERT-base eager round ~5 s, a K-jobs round 20-40 s, compiling BERT-base > 100 s
    common=(--bundle "$bundle" --device cuda --model bert-base --max-length 128 --batch-size 16 --reps 1 --warm-round --warmup 10 --steps 60)
    jobs_a=2,4,8; jobs_d=2; jobs_b=""
    large=(--large-model bert-large)
    limits=(180 100 200)   # + 5 s grace each and the 60 s preamble at most: within 9 minutes
    modes=graphs
fi

stage() {   # stage NAME LIMIT_S ARGS...: one benchmark run under its own time limit, JSON to OUT/NAME.json
    local name=$1 limit=$2
    shift 2
    limit=$(awk -v l="$limit" -v s="$scale" 'BEGIN { printf "%d", l * s }')
    echo "== stage $name (limit ${limit} s): benchmark.py $*" >>"$log"
    local t0=$SECONDS
    timeout --kill-after=5 "$limit" "${pyrun[@]}" "$root/scripts/benchmark.py" "$@" --out "$out/$name.json" >>"$log" 2>&1
    local rc=$?
    local why=""
    [ $rc -eq 124 ] || [ $rc -eq 137 ] && why=" (stopped at its time limit: the JSON keeps what ended)"
    echo "== stage $name: exit $rc after $((SECONDS - t0)) s$why" >>"$log"
    echo "stage $name: exit $rc after $((SECONDS - t0)) s$why"
    if [ $rc -ne 0 ] && [ $rc -ne 124 ] && [ $rc -ne 137 ]; then
        failed=1
    fi
}
failed=0

# (a) eager: current loop, host hygiene, profile, K jobs per GPU, fixed cost
stage a_eager "${limits[0]}" "${common[@]}" --profile --profile-steps 10 --variants --no-large \
    --compile-variants none --jobs-per-gpu "$jobs_a" --jobs-reps 1 --fixed-cost
# (d) READ: BERT-large, 384 tokens, batch 3, span loss
stage d_read "${limits[1]}" "${common[@]}" --no-profile --no-variants --large "${large[@]}" --large-data qa \
    --large-max-length 384 --large-batch-size 3 --compile-variants none --jobs-per-gpu "$jobs_d" --jobs-reps 1 \
    --no-fixed-cost
# full 128-token windows (MFU) and CUDA graphs: the current loop, host hygiene and compile graphs, every
# shape compiled in the warm-up (compile time reported apart); last: compiling may not end within its limit
stage b_graphs "${limits[2]}" "${common[@]}" --base-data long --no-profile --variants --no-large \
    --compile-variants "$modes" --compile-warmup 20 --jobs-per-gpu "$jobs_b" --no-fixed-cost
echo "== gpu_session done $(date -u '+%H:%M:%S') UTC" >>"$log"
ls -l "$out" >>"$log"
# a stage stopped at its limit is not a failure (its JSON keeps what ended); one that broke is
[ $failed -eq 0 ] || echo "gpu_session: a stage failed (see $log)" >&2
exit $failed
