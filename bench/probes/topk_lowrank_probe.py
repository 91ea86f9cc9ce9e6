"""Can a low-rank candidate search make the exact top-k substitutes cheaper? (MiniLM: no.)

Candidates come from the top-r SVD directions of the output embedding matrix (cost r/d of the full
product), then exact rescoring of the C best; recall@10 against the exact top-10, and the share of
rows the residual bound |x_perp| max_j |w_j perp| proves exact.

    python bench/probes/topk_lowrank_probe.py --teacher minilm --n 300
"""

from __future__ import annotations

import argparse
import itertools

import torch

from ctx2static.pipeline.teacher import Teacher
from ctx2static.text.corpus import Corpus

CORPUS = "../shared/corpus/brown.txt.xz"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--teacher", default="minilm")
    ap.add_argument("--n", type=int, default=300, help="sentences")
    ap.add_argument("--corpus", default=CORPUS)
    args = ap.parse_args()
    t = Teacher.load(args.teacher)
    sents = [toks for _, toks in itertools.islice(Corpus([args.corpus]).sentences(), args.n)]
    with torch.inference_mode():
        runs = [
            t.model(input_ids=torch.from_numpy(e.ids)[None], output_hidden_states=True)
            for e in t.encode(sents)
        ]
        h = torch.cat([out.hidden_states[-1][0] for out in runs]).float()
        w = t.model.get_input_embeddings().weight.float()
        logits = h @ w.T
        exact = logits.topk(10, dim=1).indices
        _, _, vt = torch.linalg.svd(w, full_matrices=False)
        print(f"{args.teacher}: {len(h)} hidden states, vocabulary {len(w)} x {w.shape[1]}")
        for r in (32, 64, 96, 128):
            v = vt[:r].T
            wr = w @ v
            approx = (h @ v) @ wr.T
            x_perp = (h - (h @ v) @ v.T).norm(dim=1)
            w_perp = (w - wr @ v.T).norm(dim=1).max()
            for c in (64, 256):
                low, cand = approx.topk(c, dim=1)
                hits = (cand.unsqueeze(2) == exact.unsqueeze(1)).any(1).float().mean()
                kth = logits.gather(1, cand).topk(10, dim=1).values[:, -1]
                proven = (kth > low[:, -1] + x_perp * w_perp).float().mean()
                share = (x_perp / h.norm(dim=1)).mean()
                print(
                    f"r={r} C={c}: recall@10 {hits:.3f}, proven exact {proven:.3f}, |x_perp|/|x| {share:.2f}"
                )


if __name__ == "__main__":
    main()
