#!/usr/bin/env bash
# The peers' own environment (Model2Vec distill and tokenlearn 0.2.1), apart from ctx2static's:
# model2vec[distill] 0.10 pins transformers < 5.4 and skeletoken 0.6 (requirements-peers.txt).
# Idempotent: a second run only checks that everything imports.
#   bash bench/peers/setup_peers.sh            # venv at /root/peers-venv
#   PEERS_VENV=/some/dir bash bench/peers/setup_peers.sh
set -euo pipefail
VENV=${PEERS_VENV:-/root/peers-venv}
# The CPU torch wheel shipped on this machine; an unpinned torch from the registry pulls the CUDA
# build (gigabytes).
TORCH_WHEEL=${TORCH_WHEEL:-/opt/wheels/torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl}

if [ ! -x "$VENV/bin/python" ]; then
    python3.11 -m venv "$VENV" 2>/dev/null || python -m venv "$VENV"
fi
PY="$VENV/bin/python"
if ! "$PY" -c "import tokenlearn, model2vec.distill, skeletoken" 2>/dev/null; then
    "$PY" -m pip install -q --upgrade pip
    if [ -f "$TORCH_WHEEL" ]; then
        "$PY" -m pip install -q "$TORCH_WHEEL"
    else
        "$PY" -m pip install -q "torch==2.13.0"
    fi
    "$PY" -m pip install -q -r "$(dirname "$0")/requirements-peers.txt"
fi
"$PY" -c "import torch, transformers, sentence_transformers, model2vec, tokenlearn; \
print('peers venv:', '$VENV', 'torch', torch.__version__, 'transformers', transformers.__version__, \
'sentence-transformers', sentence_transformers.__version__, 'model2vec', model2vec.__version__)"
