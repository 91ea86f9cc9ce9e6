"""A folder that encodes texts itself, as word vectors over a study's vocabulary (``[references.NAME]``).

Such a folder is a Model2Vec model (``model.safetensors``: a peer's, or our Model2Vec export) or a
sentence-transformers model (``modules.json``: the teacher itself, with its transformer and
pooling). Every word of the corpus vocabulary (built as a study builds it: the same files and
min_count) is encoded alone (a Model2Vec folder pools its tokens' rows; the teacher reads the word
without context, the decontextualised baseline), so the folder is evaluated on the study's
vocabulary. Runs in ctx2static's environment (model2vec loads a folder without its distill extra):

    S="$CTX2STATIC_SHARED"/corpus
    python bench/peers/words.py --model runs/peers/model2vec-minilm --min-count 5 \\
        --corpus $S/brown.txt.xz --corpus $S/sotu.txt.xz --corpus $S/gcide.txt.xz \\
        --out runs/peers/model2vec-minilm.bin

The recipe's wall time from ``<model>.timings.json`` becomes ``train_seconds``, which the study's
timings table shows.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from ctx2static.errors import UserError
from ctx2static.fileio.outputs import check_writable
from ctx2static.text.corpus import Corpus
from ctx2static.text.vocab import Vocab, VocabConfig
from ctx2static.vectors import Vectors


def encodes_itself(folder: Path) -> bool:
    """Whether ``folder`` is a model that encodes texts with its own tokenizer and pooling."""
    return (folder / "modules.json").is_file() or (folder / "model.safetensors").is_file()


def folder_encoder(folder: Path) -> Callable[[Sequence[str]], np.ndarray]:
    """``folder``'s own ``encode``: sentence-transformers when it has ``modules.json``, else Model2Vec."""
    if (folder / "modules.json").is_file():
        from sentence_transformers import SentenceTransformer

        model = SentenceTransformer(str(folder), device="cpu")
        return lambda texts: model.encode(list(texts), batch_size=64, convert_to_numpy=True)
    from model2vec import StaticModel

    static = StaticModel.from_pretrained(str(folder))
    return lambda texts: static.encode(list(texts), batch_size=4096)


def vocab_words(model: Path, vocab: Vocab) -> Vectors:
    """Each word of ``vocab`` as the folder ``model`` encodes it alone (:func:`folder_encoder`)."""
    words = list(vocab.words)
    matrix = np.asarray(folder_encoder(model)(words), np.float32)
    meta = {"student": model.name, "source": str(model)}
    timings = model.with_name(model.name + ".timings.json")
    if timings.exists():
        record = json.loads(timings.read_text())
        meta |= {"peer": record["peer"], "train_seconds": record["total_wall_s"]}
    return Vectors(words, matrix, vocab.counts.copy(), meta)


def study_vocab(corpus: list[str], min_count: int) -> Vocab:
    """The vocabulary a study builds from ``corpus`` at ``min_count``."""
    return Vocab.build(Corpus(corpus), VocabConfig(min_count=min_count))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True, type=Path, help="a Model2Vec or sentence-transformers folder")
    ap.add_argument("--corpus", action="append", required=True, help="the study's corpus files")
    ap.add_argument("--min-count", type=int, default=VocabConfig().min_count)
    ap.add_argument("--out", required=True, type=Path)
    args = ap.parse_args()
    check_writable(args.out, inputs=[args.model, *args.corpus])  # before the encoding, not after it
    vectors = vocab_words(args.model, study_vocab(args.corpus, args.min_count))
    vectors.save(args.out)
    print(f"{args.model.name}: {len(vectors):,} words -> {args.out}")


if __name__ == "__main__":
    try:
        main()
    except UserError as e:
        raise SystemExit(f"error: {e}") from None
