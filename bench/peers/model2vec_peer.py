"""Model2Vec ``distill`` from a teacher at its defaults (PCA 256, no corpus); writes a Model2Vec
folder and ``<out>.timings.json`` (wall time and peak RSS of the step).

Runs in the peers' venv (``bash bench/peers/setup_peers.sh``), like ``tokenlearn_peer.py``; the
teacher is a sentence-transformers folder, ours the packaged MiniLM:

    T=$(python -c "from ctx2static.pipeline.models import resolve; print(resolve('minilm'))")
    "$PEERS_VENV"/bin/python bench/peers/model2vec_peer.py --teacher "$T" \\
        --out runs/peers/model2vec-minilm

``distill`` reads no corpus: it embeds each token of the teacher's vocabulary alone, so the same
folder serves every corpus. ``words.py`` turns a peer folder into a vectors file over a study's
vocabulary for its ``[references.NAME]``. Distilling MiniLM takes 4-7 min on 2 CPU cores (model2vec
0.10: 233 s on a quiet machine; 385 s and 954 MiB peak RSS on a loaded one, load average ~12).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from peerrun import refuse_existing, run_step, write_timings


def distill(teacher: str, pca_dims: int, out: Path) -> None:
    """model2vec's distill at its defaults, saved as a Model2Vec folder."""
    from model2vec.distill import distill as model2vec_distill

    model2vec_distill(model_name=teacher, pca_dims=pca_dims).save_pretrained(str(out))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--teacher", required=True, help="a sentence-transformers folder (or hub name)")
    ap.add_argument("--pca-dims", type=int, default=256, help="distill's default")
    ap.add_argument("--out", required=True, type=Path, help="the Model2Vec folder to write")
    ap.add_argument("--step", choices=("distill",), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.step == "distill":
        distill(args.teacher, args.pca_dims, args.out)
        return

    refuse_existing(args.out)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    argv = [__file__, "--step", "distill", "--teacher", args.teacher, "--pca-dims", str(args.pca_dims)]
    steps = {"distill": run_step("distill", [*argv, "--out", str(args.out)])}
    recorded = {"teacher": args.teacher, "pca_dims": args.pca_dims, "out": str(args.out)}
    path = write_timings(args.out, "model2vec", recorded, steps)
    print(f"model2vec: {args.out} ({path})")


if __name__ == "__main__":
    main()
