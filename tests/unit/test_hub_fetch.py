"""Which files of a hub repository a model's task loads (tasks/models/scripts/hub_fetch.py's lean_files), on the
file lists of repositories as the hub lists them."""

from __future__ import annotations

import remote

hub_fetch = remote.load("hub_fetch.py")

# distilbert/distilbert-base-uncased-finetuned-sst-2-english as the hub lists it (2026): every framework.
SST2 = [
    ".gitattributes",
    "README.md",
    "config.json",
    "flax_model.msgpack",
    "map.jpeg",
    "model.safetensors",
    "onnx/added_tokens.json",
    "onnx/config.json",
    "onnx/model.onnx",
    "onnx/special_tokens_map.json",
    "onnx/tokenizer.json",
    "onnx/tokenizer_config.json",
    "onnx/vocab.txt",
    "pytorch_model.bin",
    "rust_model.ot",
    "tf_model.h5",
    "tokenizer_config.json",
    "vocab.txt",
]


def test_safetensors_and_the_tokenizer_only() -> None:
    assert hub_fetch.lean_files(SST2) == ["config.json", "model.safetensors", "tokenizer_config.json", "vocab.txt"]


def test_pytorch_weights_where_there_are_no_safetensors_with_their_index() -> None:
    names = [
        "config.json",
        "pytorch_model-00001-of-00002.bin",
        "pytorch_model-00002-of-00002.bin",
        "pytorch_model.bin.index.json",
        "tf_model.h5",
        "tf_model.h5.index.json",
        "tokenizer.json",
        "spiece.model",
    ]
    assert hub_fetch.lean_files(names) == [
        "config.json",
        "pytorch_model-00001-of-00002.bin",
        "pytorch_model-00002-of-00002.bin",
        "pytorch_model.bin.index.json",
        "spiece.model",
        "tokenizer.json",
    ]


def test_sharded_safetensors_keep_their_index_and_drop_the_pytorch_one() -> None:
    names = [
        "config.json",
        "generation_config.json",
        "model-00001-of-00002.safetensors",
        "model-00002-of-00002.safetensors",
        "model.safetensors.index.json",
        "pytorch_model.bin.index.json",
        "pytorch_model-00001-of-00002.bin",
        "merges.txt",
        "vocab.json",
    ]
    assert hub_fetch.lean_files(names) == [
        "config.json",
        "generation_config.json",
        "merges.txt",
        "model-00001-of-00002.safetensors",
        "model-00002-of-00002.safetensors",
        "model.safetensors.index.json",
        "vocab.json",
    ]
