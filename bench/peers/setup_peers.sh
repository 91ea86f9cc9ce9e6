#!/usr/bin/env bash
# The peers' own environment (Model2Vec distill and tokenlearn 0.2.1), apart from ctx2static's:
# model2vec[distill] 0.10 pins transformers < 5.4 and skeletoken 0.6 (requirements-peers.txt).
# The venv goes where you say, outside the repository; the peer scripts then run with its python
# ("$PEERS_VENV"/bin/python) and race.py takes it as --peers-venv (default $PEERS_VENV).
# Idempotent: a second run only checks that everything imports.
#   bash bench/peers/setup_peers.sh VENV
#   PEERS_VENV=VENV bash bench/peers/setup_peers.sh
#   TORCH_WHEEL=path/to/torch-...+cpu-....whl bash bench/peers/setup_peers.sh VENV   # a local CPU wheel
set -euo pipefail
VENV=${1:-${PEERS_VENV:-}}
if [ -z "$VENV" ]; then
    echo "usage: bash bench/peers/setup_peers.sh VENV (or set PEERS_VENV): the folder for the peers' venv" >&2
    exit 2
fi
# Without a local wheel, torch comes from PyTorch's CPU index: the registry's default build is the
# CUDA one (gigabytes).
TORCH_WHEEL=${TORCH_WHEEL:-}

if [ ! -x "$VENV/bin/python" ]; then
    python3.11 -m venv "$VENV" 2>/dev/null || python -m venv "$VENV"
fi
PY="$VENV/bin/python"
if ! "$PY" -c "import tokenlearn, model2vec.distill, skeletoken" 2>/dev/null; then
    "$PY" -m pip install -q --upgrade pip
    if [ -n "$TORCH_WHEEL" ]; then
        "$PY" -m pip install -q "$TORCH_WHEEL"
    else
        "$PY" -m pip install -q "torch==2.13.0" --index-url https://download.pytorch.org/whl/cpu
    fi
    "$PY" -m pip install -q -r "$(dirname "$0")/requirements-peers.txt"
fi
"$PY" -c "import torch, transformers, sentence_transformers, model2vec, tokenlearn; \
print('peers venv:', '$VENV', 'torch', torch.__version__, 'transformers', transformers.__version__, \
'sentence-transformers', sentence_transformers.__version__, 'model2vec', model2vec.__version__)"
