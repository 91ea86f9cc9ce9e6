"""tokenlearn 0.2.1 (featurize, then train) from a teacher on our corpus files, at its defaults;
writes a Model2Vec folder and ``<out>.timings.json`` (wall time and peak RSS of each step).

Runs in the peers' venv (``bash bench/peers/setup_peers.sh``). The teacher is a sentence-transformers
folder; ours is the packaged MiniLM:

    T=$(python -c "from ctx2static.pipeline.models import resolve; print(resolve('minilm'))")
    "$PEERS_VENV"/bin/python bench/peers/tokenlearn_peer.py --teacher "$T" \\
        --corpus "$CTX2STATIC_SHARED"/corpus/brown.txt.xz --out runs/peers/tokenlearn-minilm-brown

On Brown (57,340 non-empty lines) it took 20 min on a quiet 2-core machine (featurize 5.6, train 13.6); on the
first 2,000 lines of Brown on a loaded one, featurize 139 s (848 MiB peak RSS) and train 682 s (1,387
MiB, early stop after 52 epochs; most of it distill's pass over MiniLM's 30k tokens).

Nothing of tokenlearn is reimplemented; the steps call its functions with the arguments its own
command lines pass:
- featurize: ``tokenlearn.featurize.featurize`` with ``SentenceTransformer(teacher)`` and the
  defaults of ``featurize.main`` (``max_means`` 1,000,000, ``batch_size`` 32, key ``text``). It
  normally reads a Hugging Face dataset; here it gets the corpus's non-empty lines as
  ``{"text": line}`` records, which is all it reads from a dataset.
- train: the body of ``tokenlearn.train.main`` at its defaults: ``collect_means_and_texts``,
  ``create_vocab(vocab_size=56_000)``, ``model2vec.distill.distill(quantize_to="float32",
  vocabulary=..., pca_dims=256)``, ``train.train_model(device="cpu", pca_dims=256)``, then
  ``save_pretrained``.

Quirks of tokenlearn 0.2.1, read in its source:
- Early stopping keeps the last model, not the best: ``pretrain.train_supervised`` saves
  ``param_dict = trainable_model.state_dict()`` at each improvement, but ``state_dict()`` returns
  tensors that share storage with the live parameters, so the optimiser's later steps change them
  too and the final ``load_state_dict(param_dict)`` restores the last step's weights. Patience (5)
  counts validations (every 1,000 steps and at each epoch's end), not epochs.
- Unseeded: ``pretrain.TextDataset.to_dataloader`` shuffles with no generator and
  ``pretrain.StaticModelFineTuner`` initialises its output layer from torch's global state; nothing
  seeds either, so two runs differ. ``--seed`` (off by default) seeds torch before training.
- ``train.train_model`` holds out the *last* 10% of the texts (at most 10,000) in file order for
  validation, so on a corpus read in order the validation set is its final documents; the PCA of
  the targets is fitted before that split, on all of them.
- ``distill`` takes each added word's mask from its tokenized length: a teacher folder whose
  ``tokenizer.json`` saves a fixed padding (MiniLM's and MPNet's do) would give every corpus word
  the mean of 128 mostly-padding positions; ``train`` hands it a linked copy without the padding
  (:func:`unpadded`). Runs before 2026-11-27 lacked this: their corpus-word rows started from
  padding means.
- ``featurize`` drops the first and last token vector of each text (CLS and SEP) and stores the text
  cut at the tokenizer's ``model_max_length`` (512 for MiniLM) while the model embeds at most its
  ``max_seq_length`` (256): a text longer than 256 tokens is trained on more words than its target saw.
- ``featurize`` resumes from the highest ``feature_N.json`` in its folder; this script keeps the
  features in ``<out>.features`` so an interrupted run resumes there (the timings then cover only
  the resumed part, and the JSON says so).
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

from peerrun import corpus_texts, refuse_existing, run_step, write_timings

# The defaults of tokenlearn 0.2.1's command lines (featurize.main, train.main).
MAX_MEANS = 1_000_000
BATCH_SIZE = 32
VOCAB_SIZE = 56_000
PCA_DIMS = 256


def featurize(teacher: str, corpus: list[str], limit: int | None, features: Path) -> None:
    """tokenlearn's featurize on the corpus lines: the teacher's mean token vector per text."""
    from sentence_transformers import SentenceTransformer
    from tokenlearn.featurize import featurize as tokenlearn_featurize

    model = SentenceTransformer(teacher)
    records = ({"text": text} for text in corpus_texts(corpus, limit))
    tokenlearn_featurize(records, model, str(features), MAX_MEANS, BATCH_SIZE, "text")


def unpadded(teacher: str, scratch: Path) -> str:
    """``teacher`` itself, or a linked copy in ``scratch`` whose ``tokenizer.json`` pads no input.

    sentence-transformers folders often save a fixed padding (MiniLM's and MPNet's: 128 tokens).
    ``distill`` tokenizes each corpus word it adds and takes the mask from the padded length, so every
    such word's row would be the mean of 128 positions, mostly padding (and 40x the compute).
    sentence-transformers pads per batch whatever the file says, so the copy changes nothing else.
    """
    folder = Path(teacher)
    tok = folder / "tokenizer.json"
    if not tok.is_file() or json.loads(tok.read_text(encoding="utf-8")).get("padding") is None:
        return teacher
    scratch.mkdir(parents=True, exist_ok=True)
    for item in folder.iterdir():
        if item.name != "tokenizer.json":
            (scratch / item.name).symlink_to(item.resolve())
    spec = json.loads(tok.read_text(encoding="utf-8"))
    spec["padding"] = None
    (scratch / "tokenizer.json").write_text(json.dumps(spec, ensure_ascii=False), encoding="utf-8")
    return str(scratch)


def train(teacher: str, features: Path, out: Path, seed: int | None) -> None:
    """tokenlearn's train at its defaults: distill on the corpus vocabulary, then fit the rows."""
    import tempfile

    import torch
    from model2vec.distill import distill
    from tokenlearn.train import train_model
    from tokenlearn.utils import collect_means_and_texts, create_vocab

    if seed is not None:
        torch.manual_seed(seed)
    train_txt, train_vec = collect_means_and_texts(sorted(features.glob("*.json")))
    vocab = create_vocab(texts=train_txt, vocab_size=VOCAB_SIZE)
    with tempfile.TemporaryDirectory() as tmp:
        model = distill(
            model_name=unpadded(teacher, Path(tmp) / "teacher"),
            quantize_to="float32",
            vocabulary=vocab,
            pca_dims=PCA_DIMS,
            trust_remote_code=True,
        )
    model = train_model(model, train_txt, train_vec, device="cpu", pca_dims=PCA_DIMS)
    model.save_pretrained(str(out))


def _count_texts(features: Path) -> int:
    """How many texts featurize stored (the training set before the validation split)."""
    return sum(len(json.loads(p.read_text())) for p in features.glob("*.json"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--teacher", required=True, help="a sentence-transformers folder (or hub name)")
    ap.add_argument(
        "--corpus", action="append", required=True, help="text files, one text a line (.xz/.gz ok)"
    )
    ap.add_argument("--limit", type=int, help="featurize only the first N texts (smoke runs)")
    ap.add_argument("--seed", type=int, help="seed torch before training (tokenlearn seeds nothing)")
    ap.add_argument("--out", required=True, type=Path, help="the Model2Vec folder to write")
    ap.add_argument("--keep-features", action="store_true", help="keep <out>.features after training")
    ap.add_argument("--step", choices=("featurize", "train"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    features = args.out.with_name(args.out.name + ".features")
    if args.step == "featurize":
        featurize(args.teacher, args.corpus, args.limit, features)
        return
    if args.step == "train":
        train(args.teacher, features, args.out, args.seed)
        return

    refuse_existing(args.out)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    resumed = features.exists()
    common = ["--teacher", args.teacher, "--out", str(args.out)]
    common += [x for c in args.corpus for x in ("--corpus", c)]
    limit = ["--limit", str(args.limit)] if args.limit is not None else []
    seed = ["--seed", str(args.seed)] if args.seed is not None else []
    steps = {
        "featurize": run_step("featurize", [__file__, "--step", "featurize", *common, *limit]),
        "train": run_step("train", [__file__, "--step", "train", *common, *seed]),
    }
    recorded = {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items() if k != "step"}
    recorded |= {"featurize_resumed": resumed, "texts": _count_texts(features)}
    path = write_timings(args.out, "tokenlearn", recorded, steps)
    if not args.keep_features:
        shutil.rmtree(features)
    print(f"tokenlearn: {args.out} ({path})")


if __name__ == "__main__":
    main()
