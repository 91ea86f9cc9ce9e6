"""Tiny random teachers and tokenizers of each kind, built offline (imported by the teacher tests)."""

from __future__ import annotations

import json
from pathlib import Path

from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
from transformers import PreTrainedTokenizerFast

SENTENCES = [
    "the cat sat on the mat .",
    "the dog chased the cat around the garden .",
    "a bird sang in the old tree near the river .",
    "students read long books about distant stars and planets .",
    "the river flows past the quiet village every morning .",
    "unbelievably , the tiny mouse outran the sleepy cat .",
]
WORDS = sorted({w for s in SENTENCES for w in s.split()})


def wordpiece_tokenizer() -> PreTrainedTokenizerFast:
    """A BERT-style WordPiece tokenizer (lowercasing, ## continuations) with a tiny vocabulary."""
    pieces = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "un", "##believ", "##ably", "##s", "##ed"]
    vocab = {t: i for i, t in enumerate(dict.fromkeys(pieces + [w for w in WORDS if w != "unbelievably"]))}
    tok = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])]
    )
    tok.decoder = decoders.WordPiece()
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        unk_token="[UNK]",
        pad_token="[PAD]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
    )


def bpe_tokenizer(roberta: bool) -> PreTrainedTokenizerFast:
    """A byte-level BPE (Ġ) trained on the tiny sentences: RoBERTa-style (<s> </s>) or GPT-2-style."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    specials = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"] if roberta else ["<|endoftext|>"]
    trainer = trainers.BpeTrainer(
        vocab_size=300, special_tokens=specials, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    tok.train_from_iterator(SENTENCES, trainer)
    if roberta:
        tok.post_processor = processors.RobertaProcessing(("</s>", 2), ("<s>", 0), trim_offsets=True)
        return PreTrainedTokenizerFast(
            tokenizer_object=tok,
            bos_token="<s>",
            eos_token="</s>",
            sep_token="</s>",
            cls_token="<s>",
            unk_token="<unk>",
            pad_token="<pad>",
            mask_token="<mask>",
        )
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token="<|endoftext|>", eos_token="<|endoftext|>", unk_token="<|endoftext|>"
    )


def unigram_tokenizer(bos: bool = False) -> PreTrainedTokenizerFast:
    """A SentencePiece-style unigram tokenizer (▁ word starts); with ``bos`` it adds <s> (Llama-style)."""
    tok = Tokenizer(models.Unigram())
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    tok.decoder = decoders.Metaspace()
    specials = ["<pad>", "<unk>", "<s>"]
    trainer = trainers.UnigramTrainer(vocab_size=80, special_tokens=specials, unk_token="<unk>")
    tok.train_from_iterator(SENTENCES * 5, trainer)
    if bos:
        tok.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 2)])
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, unk_token="<unk>", pad_token="<pad>", bos_token="<s>"
    )


def mpnet_tokenizer() -> PreTrainedTokenizerFast:
    """MPNet's own tokenizer class (lowercasing WordPiece, <s> ... </s>) over a tiny vocabulary."""
    from transformers import MPNetTokenizerFast

    pieces = ["<s>", "<pad>", "</s>", "[UNK]", "<mask>", "un", "##believ", "##ably", "##s", "##ed"]
    vocab = {t: i for i, t in enumerate(dict.fromkeys(pieces + [w for w in WORDS if w != "unbelievably"]))}
    return MPNetTokenizerFast(vocab=vocab)


def gemma_tokenizer() -> PreTrainedTokenizerFast:
    """Gemma's own tokenizer class (SentencePiece-style BPE: ▁ word starts, <bos> added) over pieces
    trained on the tiny sentences."""
    from transformers import GemmaTokenizerFast

    specials = ["<pad>", "<eos>", "<bos>", "<unk>", "<mask>"]  # Gemma's ids 0-4
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.Metaspace(prepend_scheme="never")
    bpe.train_from_iterator(SENTENCES * 5, trainers.BpeTrainer(vocab_size=150, special_tokens=specials))
    trained = json.loads(bpe.to_str())["model"]
    merges = [tuple(m) for m in trained["merges"]]
    return GemmaTokenizerFast(vocab=trained["vocab"], merges=merges, add_bos_token=True)


def save_tiny_bert(path: Path) -> Path:
    """A random 2-layer BertForMaskedLM with the WordPiece tokenizer, saved to ``path``."""
    from transformers import BertConfig, BertForMaskedLM

    tok = wordpiece_tokenizer()
    cfg = BertConfig(
        vocab_size=len(tok),
        hidden_size=16,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=64,
        pad_token_id=tok.pad_token_id,
    )
    return save_model(BertForMaskedLM(cfg), tok, path)


def save_tiny_roberta(path: Path) -> Path:
    """A random 2-layer RobertaForMaskedLM with a byte-level BPE tokenizer, saved to ``path``."""
    from transformers import RobertaConfig, RobertaForMaskedLM

    tok = bpe_tokenizer(roberta=True)
    cfg = RobertaConfig(
        vocab_size=len(tok),
        hidden_size=16,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=66,
        pad_token_id=tok.pad_token_id,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
    )
    return save_model(RobertaForMaskedLM(cfg), tok, path)


def save_tiny_gpt2(path: Path) -> Path:
    """A random 2-layer GPT2LMHeadModel with a byte-level BPE tokenizer, saved to ``path``."""
    from transformers import GPT2Config, GPT2LMHeadModel

    tok = bpe_tokenizer(roberta=False)
    cfg = GPT2Config(
        vocab_size=len(tok),
        n_embd=16,
        n_layer=2,
        n_head=2,
        n_positions=64,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
    )
    return save_model(GPT2LMHeadModel(cfg), tok, path)


def save_tiny_llama(path: Path) -> Path:
    """A random 2-layer LlamaForCausalLM whose SentencePiece-style tokenizer adds <s> itself."""
    from transformers import LlamaConfig, LlamaForCausalLM

    tok = unigram_tokenizer(bos=True)
    cfg = LlamaConfig(
        vocab_size=len(tok),
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=64,
        pad_token_id=tok.pad_token_id,
        bos_token_id=tok.bos_token_id,
    )
    return save_model(LlamaForCausalLM(cfg), tok, path)


def save_tiny_encoder(path: Path) -> Path:
    """A random BertModel without an MLM head (the tied-input-embedding decoder path)."""
    from transformers import BertConfig, BertModel

    tok = wordpiece_tokenizer()
    cfg = BertConfig(
        vocab_size=len(tok),
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=64,
        pad_token_id=tok.pad_token_id,
    )
    return save_model(BertModel(cfg, add_pooling_layer=False), tok, path)


def save_tiny_mpnet(path: Path) -> Path:
    """A random 2-layer MPNetModel (relative position buckets) with MPNet's tokenizer, saved as
    all-mpnet-base-v2 is: its config names MPNetForMaskedLM, its weights hold no MLM head."""
    from transformers import MPNetConfig, MPNetModel

    tok = mpnet_tokenizer()
    cfg = MPNetConfig(
        vocab_size=len(tok),
        hidden_size=16,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=66,
        relative_attention_num_buckets=32,  # MPNet's bucketing assumes 32
        pad_token_id=tok.pad_token_id,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
    )
    save_model(MPNetModel(cfg, add_pooling_layer=False), tok, path)
    saved = json.loads((path / "config.json").read_text())
    (path / "config.json").write_text(json.dumps({**saved, "architectures": ["MPNetForMaskedLM"]}))
    return path


def _gemma_config(tok: PreTrainedTokenizerFast, **extra: object) -> object:
    """A 2-layer Gemma 3 text config (one sliding-window layer of 4 tokens, one global) for ``tok``."""
    from transformers import Gemma3TextConfig

    return Gemma3TextConfig(
        vocab_size=len(tok),
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=8,
        query_pre_attn_scalar=8,
        sliding_window=4,
        layer_types=["sliding_attention", "full_attention"],
        max_position_embeddings=64,
        pad_token_id=tok.pad_token_id,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        **extra,
    )


def save_tiny_gemma3(path: Path) -> Path:
    """A random 2-layer Gemma3ForCausalLM (one sliding-window layer of 4 tokens, one global) with Gemma's
    tokenizer; the LM head is tied to the scaled input embeddings, as in Gemma 3 270M."""
    from transformers import Gemma3ForCausalLM

    tok = gemma_tokenizer()
    return save_model(Gemma3ForCausalLM(_gemma_config(tok, tie_word_embeddings=True)), tok, path)


STS_PROMPT = "task: sentence similarity | query: "


def save_tiny_embeddinggemma(path: Path) -> Path:
    """A random 2-layer Gemma3TextModel with bidirectional attention, saved as EmbeddingGemma's
    sentence-transformers folder is: mean pooling, two dense layers without bias (16 -> 32 -> 16),
    normalisation, and task prompts."""
    from safetensors.torch import save_file
    from transformers import Gemma3TextModel

    tok = gemma_tokenizer()
    save_model(Gemma3TextModel(_gemma_config(tok, use_bidirectional_attention=True)), tok, path)
    import torch

    modules = [("0", "", "Transformer"), ("1", "1_Pooling", "Pooling"), ("2", "2_Dense", "Dense"),
               ("3", "3_Dense", "Dense"), ("4", "4_Normalize", "Normalize")]  # fmt: skip
    (path / "modules.json").write_text(
        json.dumps(
            [
                {"idx": int(i), "name": i, "path": p, "type": f"sentence_transformers.models.{t}"}
                for i, p, t in modules
            ]
        )
    )
    (path / "1_Pooling").mkdir()
    (path / "1_Pooling" / "config.json").write_text(
        json.dumps({"word_embedding_dimension": 16, "pooling_mode_mean_tokens": True, "include_prompt": True})
    )
    gen = torch.Generator().manual_seed(1)
    for folder, (n_in, n_out) in (("2_Dense", (16, 32)), ("3_Dense", (32, 16))):
        (path / folder).mkdir()
        (path / folder / "config.json").write_text(
            json.dumps(
                {
                    "in_features": n_in,
                    "out_features": n_out,
                    "bias": False,
                    "activation_function": "torch.nn.modules.linear.Identity",
                }
            )
        )
        save_file(
            {"linear.weight": torch.randn(n_out, n_in, generator=gen)}, path / folder / "model.safetensors"
        )
    (path / "config_sentence_transformers.json").write_text(
        json.dumps(
            {"prompts": {"STS": STS_PROMPT, "document": "title: none | text: "}, "default_prompt_name": None}
        )
    )
    return path


def save_model(model: object, tok: PreTrainedTokenizerFast, path: Path) -> Path:
    """Save ``model`` (its weights drawn from a fixed seed) and ``tok`` to ``path``, as a hub folder is."""
    import torch

    torch.manual_seed(0)
    for p in model.parameters():  # type: ignore[attr-defined]
        torch.nn.init.normal_(p, std=0.5)
    model.save_pretrained(path)  # type: ignore[attr-defined]
    tok.save_pretrained(path)
    return path


def save_tiny_nomic_gguf(path: Path, n_layers: int = 2) -> Path:
    """A random nomic-bert GGUF as GPT4All ships nomic-embed-text-v1.5 (f16 matrices, f32 norms, the
    WordPiece vocabulary in llama.cpp's form: ``▁`` word starts, continuations without ``##``)."""
    import numpy as np
    from gguf import GGUFWriter

    pieces = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "un", "##believ", "##ably", "##s", "##ed"]
    vocab = list(dict.fromkeys(pieces + [w for w in WORDS if w != "unbelievably"]))
    tokens = [t if t.startswith("[") else t[2:] if t.startswith("##") else "\u2581" + t for t in vocab]
    d, ff, heads = 16, 24, 2
    rng = np.random.default_rng(0)

    def mat(rows: int, cols: int) -> np.ndarray:
        return (rng.normal(size=(rows, cols)) / np.sqrt(cols)).astype(np.float16)

    def norm(bias: bool) -> np.ndarray:
        return (rng.normal(size=d) * 0.1 + (0.0 if bias else 1.0)).astype(np.float32)

    w = GGUFWriter(path, "nomic-bert")
    w.add_block_count(n_layers)
    w.add_context_length(64)
    w.add_embedding_length(d)
    w.add_feed_forward_length(ff)
    w.add_head_count(heads)
    w.add_layer_norm_eps(1e-12)
    w.add_rope_freq_base(1000.0)
    w.add_causal_attention(False)
    w.add_tokenizer_model("bert")
    w.add_token_list(tokens)
    w.add_pad_token_id(0)
    w.add_tensor("token_embd.weight", mat(len(tokens), d) * 8)
    w.add_tensor("token_types.weight", rng.normal(size=(2, d)).astype(np.float32))
    w.add_tensor("token_embd_norm.weight", norm(False))
    w.add_tensor("token_embd_norm.bias", norm(True))
    for i in range(n_layers):
        w.add_tensor(f"blk.{i}.attn_qkv.weight", mat(3 * d, d) * 4)  # sharp attention: positions matter
        w.add_tensor(f"blk.{i}.attn_output.weight", mat(d, d))
        w.add_tensor(f"blk.{i}.ffn_up.weight", mat(ff, d))
        w.add_tensor(f"blk.{i}.ffn_gate.weight", mat(ff, d))
        w.add_tensor(f"blk.{i}.ffn_down.weight", mat(d, ff))
        for name in ("attn_output_norm", "layer_output_norm"):
            w.add_tensor(f"blk.{i}.{name}.weight", norm(False))
            w.add_tensor(f"blk.{i}.{name}.bias", norm(True))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def save_tiny_nomic(path: Path) -> Path:
    """The tiny nomic-bert GGUF written as the model folder ``--teacher nomic`` assembles."""
    from ctx2static.pipeline.nomic import save_folder

    path.mkdir(parents=True, exist_ok=True)
    save_folder(save_tiny_nomic_gguf(path.parent / f"{path.name}.gguf"), path)
    return path
