"""Tiny models with random weights, written to a folder as each backend saves them.

Model hubs are unreachable here, so the adapter tests build what they load:

* :func:`build_onnx_model` — a fastembed folder: ``model.onnx`` (token states are
  rows of a random embedding table, masked by the attention mask), a word-level
  ``tokenizer.json`` and ``tokenizer_config.json``;
* :func:`build_sentence_transformer` — a one-layer BERT (hidden size 16) with
  mean pooling, saved by sentence-transformers itself.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = ["VOCAB", "build_onnx_model", "build_sentence_transformer", "onnx_reference"]

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
_TEXT = (
    "the mechanic repaired engine of my automobile yesterday knead dough let it rise for an "
    "hour then bake loaf coffee beans are roasted before they ground and brewed striker "
    "scored twice team won championship who fixes broken cars a recipe baking"
)
WORDS = _TEXT.split()
VOCAB = SPECIALS + sorted(set(WORDS))
DIM = 16


def _word_tokenizer(folder: Path) -> Any:
    """A lower-casing, whitespace, word-level tokenizer with BERT's specials, saved."""
    from tokenizers import Tokenizer, normalizers, pre_tokenizers, processors
    from tokenizers.models import WordLevel

    tok = Tokenizer(WordLevel({w: i for i, w in enumerate(VOCAB)}, unk_token="[UNK]"))
    tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 2), ("[SEP]", 3)]
    )
    tok.save(str(folder / "tokenizer.json"))
    config = {"model_max_length": 64, "pad_token": "[PAD]", "unk_token": "[UNK]"}
    (folder / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    (folder / "config.json").write_text(
        json.dumps({"hidden_size": DIM, "pad_token_id": 0}), encoding="utf-8"
    )
    return tok


def build_onnx_model(folder: Path, seed: int = 0) -> NDArray[np.float32]:
    """Write the fastembed folder; returns the embedding table (the model's weights)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    folder.mkdir(parents=True, exist_ok=True)
    _word_tokenizer(folder)
    table = np.random.default_rng(seed).normal(size=(len(VOCAB), DIM)).astype(np.float32)
    nodes = [
        helper.make_node("Gather", ["table", "input_ids"], ["rows"], axis=0),
        helper.make_node("Cast", ["attention_mask"], ["mask_f"], to=TensorProto.FLOAT),
        helper.make_node("Unsqueeze", ["mask_f", "last_axis"], ["mask_3d"]),
        helper.make_node("Mul", ["rows", "mask_3d"], ["last_hidden_state"]),
    ]
    graph = helper.make_graph(
        nodes,
        "tiny-encoder",
        inputs=[
            helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"]),
            helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "seq"]),
        ],
        outputs=[
            helper.make_tensor_value_info(
                "last_hidden_state", TensorProto.FLOAT, ["batch", "seq", DIM]
            )
        ],
        initializer=[
            numpy_helper.from_array(table, "table"),
            numpy_helper.from_array(np.array([-1], dtype=np.int64), "last_axis"),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8  # readable by every onnxruntime of the last years
    onnx.checker.check_model(model)
    onnx.save(model, str(folder / "model.onnx"))
    return table


def onnx_reference(folder: Path, table: NDArray[np.float32], text: str) -> NDArray[np.float64]:
    """What the ONNX model with mean pooling and normalisation must give for ``text``."""
    from tokenizers import Tokenizer

    ids = Tokenizer.from_file(str(folder / "tokenizer.json")).encode(text).ids
    mean = table[ids].astype(np.float64).mean(axis=0)
    result: NDArray[np.float64] = mean / np.linalg.norm(mean)
    return result


def build_sentence_transformer(folder: Path, seed: int = 0) -> Path:
    """Write a tiny BERT + mean pooling as a sentence-transformers folder; returns it."""
    import torch
    from sentence_transformers import SentenceTransformer

    try:  # sentence-transformers >= 6 moved the modules (the old path warns)
        from sentence_transformers.sentence_transformer.modules import Pooling, Transformer
    except ImportError:
        from sentence_transformers.models import Pooling, Transformer
    from transformers import BertConfig, BertModel, BertTokenizerFast

    raw = folder / "bert"
    raw.mkdir(parents=True, exist_ok=True)
    (raw / "vocab.txt").write_text("\n".join(VOCAB) + "\n", encoding="utf-8")
    torch.manual_seed(seed)
    config = BertConfig(
        vocab_size=len(VOCAB),
        hidden_size=DIM,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=64,
    )
    BertModel(config).save_pretrained(str(raw))
    BertTokenizerFast(vocab_file=str(raw / "vocab.txt"), model_max_length=64).save_pretrained(
        str(raw)
    )
    transformer = Transformer(str(raw), max_seq_length=64)
    pooling = Pooling(DIM, pooling_mode="mean")
    out = folder / "st"
    SentenceTransformer(modules=[transformer, pooling], device="cpu").save(str(out))
    return out
