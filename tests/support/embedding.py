"""The golden cases' deterministic embedder (``DETERMINISTIC_EMBED``) and its batch form."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["EMBED_DIM", "batch_of", "hashed_embedding"]

EMBED_DIM = 64
_WORD = re.compile(r"\w+")


def hashed_embedding(text: Any) -> np.ndarray:
    """The cases' deterministic 64-dim embedder (signed, weighted md5 feature hashing)."""
    vec = np.zeros(EMBED_DIM, dtype=np.float64)
    for token in _WORD.findall(str(text or "").lower()):
        digest = hashlib.md5(token.encode("utf-8")).digest()
        bucket = int.from_bytes(digest[0:4], "little") % EMBED_DIM
        weight = 0.5 + int.from_bytes(digest[4:6], "little") / 65535.0
        vec[bucket] += -weight if digest[6] & 1 else weight
    length = float(np.linalg.norm(vec))
    return vec / length if length > 0 else vec


def batch_of(embed: Callable[[Any], Any]) -> Callable[[list[Any]], np.ndarray]:
    """The batch form of a single-text embedder."""

    def batch(texts: list[Any]) -> np.ndarray:
        return np.stack([np.asarray(embed(t), dtype=np.float64) for t in texts])

    return batch
