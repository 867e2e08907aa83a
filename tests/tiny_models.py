"""Small real HuggingFace models made on the spot (random weights, a real tokenizer), since no
model hub is reachable where the tests run. Each is what `save_pretrained` writes."""

from __future__ import annotations

from pathlib import Path

WORDS = [
    "a",
    "fine",
    "day",
    "terrible",
    "awful",
    "ok",
    "triton",
    "without",
    "docker",
    "the",
    "quick",
    "brown",
    "fox",
    "one",
    "more",
    "sentence",
    "to",
    "make",
    "eight",
    "good",
    "bad",
    "great",
    "movie",
    "film",
]


def _tokenizer(tmp: Path):
    from transformers import BertTokenizerFast

    vocab = tmp / "vocab.txt"
    tokens = [
        "[PAD]",
        "[UNK]",
        "[CLS]",
        "[SEP]",
        "[MASK]",
        *"abcdefghijklmnopqrstuvwxyz",
        *(f"##{c}" for c in "abcdefghijklmnopqrstuvwxyz"),
        *sorted(set(WORDS)),
    ]
    vocab.write_text("\n".join(dict.fromkeys(tokens)) + "\n")
    return BertTokenizerFast(vocab_file=str(vocab), do_lower_case=True)


def make(kind: str, dest: Path, seed: int = 0, vocab_rows: int = 0) -> Path:
    """kind: classifier (DistilBERT, 2 labels), small-classifier (the same at DistilBERT-base size),
    embedder (BERT), generator (GPT-2). vocab_rows: an embedding table this large (rows the tokenizer
    never uses), for weights of a given size. Returns dest."""
    import torch
    from transformers import (
        BertConfig,
        BertModel,
        DistilBertConfig,
        DistilBertForSequenceClassification,
        GPT2Config,
        GPT2LMHeadModel,
    )

    dest.mkdir(parents=True, exist_ok=True)
    tok = _tokenizer(dest)
    torch.manual_seed(seed)
    size = max(len(tok), vocab_rows)
    if kind in ("classifier", "small-classifier"):
        # small-classifier: distilbert-base-uncased-finetuned-sst-2's shape (6 x 768), for benchmarks
        big = kind == "small-classifier"
        model = DistilBertForSequenceClassification(
            DistilBertConfig(
                vocab_size=size,
                dim=768 if big else 32,
                n_layers=6 if big else 2,
                n_heads=12 if big else 2,
                hidden_dim=3072 if big else 64,
                max_position_embeddings=128,
                num_labels=2,
                id2label={0: "NEGATIVE", 1: "POSITIVE"},
                label2id={"NEGATIVE": 0, "POSITIVE": 1},
            )
        )
    elif kind == "embedder":
        model = BertModel(
            BertConfig(
                vocab_size=size,
                hidden_size=32,
                num_hidden_layers=2,
                num_attention_heads=2,
                intermediate_size=64,
                max_position_embeddings=128,
            )
        )
    elif kind == "generator":
        model = GPT2LMHeadModel(
            GPT2Config(
                vocab_size=size,
                n_embd=32,
                n_layer=2,
                n_head=2,
                n_positions=128,
                bos_token_id=tok.cls_token_id,
                eos_token_id=tok.sep_token_id,
            )
        )
    else:
        raise ValueError(kind)
    model.save_pretrained(dest)
    tok.save_pretrained(dest)
    return dest
