"""The E5 encoder's 12 layers in plain numpy (BLAS), for :class:`~._e5_engine.E5Engine`.

The same computation as the ONNX graph of :mod:`._e5_graph` on the same
float32 weights, with numpy's matrix products (OpenBLAS here, its threads
limited per call with threadpoolctl).  numpy has no ``erf``: GELU uses the
Abramowitz-Stegun 7.1.26 approximation (error below 1.5e-7, under float32's
own rounding).  No dependency beyond numpy, but each element-wise step is a
pass over memory: ``bench/bench_e5.py`` measures it well behind ONNX Runtime,
which fuses them.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from zerda_async.embedders._blas import blas_threads
from zerda_async.embedders._e5_file import E5File

__all__ = ["NumpyEncoder"]

Array = NDArray[np.float32]


def _erf(x: Array) -> Array:
    sign = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = (
        (((1.061405429 * t - 1.453152027) * t + 1.421413741) * t - 0.284496736) * t + 0.254829592
    ) * t
    out: Array = sign * (1.0 - poly * np.exp(-a * a))
    return out


class NumpyEncoder:
    """The layers of ``model`` as numpy arrays; :meth:`with_threads` gives a runner."""

    def __init__(self, model: E5File) -> None:
        H, FF = model.hidden, model.ffn
        self.heads, self.eps = model.heads, float(model.eps)
        self.norm = (model.floats("emb.ln.w"), model.floats("emb.ln.b"))
        self.layers: list[tuple[Array, ...]] = []
        for layer in range(model.layers):
            p = f"l{layer}"
            qkv = np.concatenate([model.matrix(f"{p}.{n}.w", H) for n in "qkv"])
            self.layers.append(
                (
                    np.ascontiguousarray(qkv.T),
                    np.concatenate([model.floats(f"{p}.{n}.b") for n in "qkv"]),
                    np.ascontiguousarray(model.matrix(f"{p}.ao.w", H).T),
                    model.floats(f"{p}.ao.b"),
                    model.floats(f"{p}.aln.w"),
                    model.floats(f"{p}.aln.b"),
                    np.ascontiguousarray(model.matrix(f"{p}.fi.w", H).T),
                    model.floats(f"{p}.fi.b"),
                    np.ascontiguousarray(model.matrix(f"{p}.fo.w", FF).T),
                    model.floats(f"{p}.fo.b"),
                    model.floats(f"{p}.oln.w"),
                    model.floats(f"{p}.oln.b"),
                )
            )

    def with_threads(self, threads: int) -> Any:
        """An object with ONNX Runtime's ``run(outputs, feeds)``, on ``threads`` BLAS threads."""
        encoder = self

        class _Runner:
            def run(self, _outputs: list[str], feeds: dict[str, Array]) -> list[Array]:
                with blas_threads(threads):
                    return [encoder.forward(feeds["embeddings"], feeds["mask"])]

        return _Runner()

    def _norm(self, x: Array, w: Array, b: Array) -> Array:
        x = x - x.mean(axis=-1, keepdims=True)
        var = (x * x).mean(axis=-1, keepdims=True)
        out: Array = x / np.sqrt(var + self.eps) * w + b
        return out

    def forward(self, embeddings: Array, mask: Array) -> Array:
        """The last layer's states ``[batch, tokens, hidden]``."""
        B, L, H = embeddings.shape
        NH = self.heads
        hd = H // NH
        x = self._norm(embeddings, *self.norm)
        bias = ((1.0 - mask) * -1e4).astype(np.float32)[:, None, None, :]
        scale = np.float32(1.0 / np.sqrt(hd))
        for qkv_w, qkv_b, ao_w, ao_b, a_w, a_b, fi_w, fi_b, fo_w, fo_b, o_w, o_b in self.layers:
            qkv = (x.reshape(B * L, H) @ qkv_w + qkv_b).reshape(B, L, 3, NH, hd)
            q, k, v = qkv.transpose(2, 0, 3, 1, 4)
            scores = (q * scale) @ k.transpose(0, 1, 3, 2) + bias
            scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
            scores /= scores.sum(axis=-1, keepdims=True)
            ctx = (scores @ v).transpose(0, 2, 1, 3).reshape(B * L, H)
            x = self._norm(x + (ctx @ ao_w + ao_b).reshape(B, L, H), a_w, a_b)
            mid = x.reshape(B * L, H) @ fi_w + fi_b
            gate = np.float32(0.5) * (np.float32(1.0) + _erf(mid * np.float32(0.70710678)))
            out: Array = (mid * gate) @ fo_w + fo_b
            x = self._norm(x + out.reshape(B, L, H), o_w, o_b)
        return x
