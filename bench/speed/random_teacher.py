"""Write a randomly initialised teacher with a real model's shape, for speed benchmarks offline.

bert-base-uncased cannot be downloaded here, but its cost depends only on its shape: this writes a
BertForMaskedLM with bert-base's config (12 layers, 768 hidden, 12 heads, MLM head) and random
weights, with MiniLM's tokenizer (the same 30,522-token bert-base-uncased WordPiece vocabulary).
Its outputs are meaningless; its speed is bert-base's. ``--layers/--hidden`` make a smaller one
(e.g. 2 x 64: a teacher that costs next to nothing, so that a memory bench of extract's driver
can run a whole corpus).

    python bench/speed/random_teacher.py --out runs/bert-base-shape
    python bench/speed/bench_extract.py --teacher runs/bert-base-shape \
        --out bench/results/extract_bert_base_shape.md
"""

from __future__ import annotations

import argparse
from pathlib import Path

import torch
from transformers import AutoTokenizer, BertConfig, BertForMaskedLM

from ctx2static.pipeline.models import resolve


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--layers", type=int, default=12, help="hidden layers (bert-base: 12)")
    ap.add_argument("--hidden", type=int, default=768, help="hidden size (bert-base: 768; 64 per head)")
    args = ap.parse_args()
    torch.manual_seed(0)
    tokenizer = AutoTokenizer.from_pretrained(resolve("minilm"))
    config = BertConfig(  # BertConfig's defaults are bert-base's
        vocab_size=tokenizer.vocab_size,
        num_hidden_layers=args.layers,
        hidden_size=args.hidden,
        num_attention_heads=max(1, args.hidden // 64),
        intermediate_size=4 * args.hidden,
    )
    BertForMaskedLM(config).save_pretrained(args.out)
    tokenizer.save_pretrained(args.out)
    print(f"random BERT teacher ({args.layers} x {args.hidden}) -> {args.out}")


if __name__ == "__main__":
    main()
