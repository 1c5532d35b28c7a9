"""What the adapters that run a model in this process share.

* :func:`model_folder` — the checks of a local model folder;
* :func:`import_backend` — the backend library, or a clear error naming the extra;
* :class:`LocalEncoder` — the two calls of a text embedder (``emb(text)``,
  ``emb.embed_batch(texts)``) over one model whose forward passes are
  serialised by a lock.
"""

from __future__ import annotations

import importlib
import threading
from abc import ABC, abstractmethod
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
from numpy.typing import NDArray

from zerda_async.embedders._protocol import as_texts
from zerda_async.errors import EmbedderLoadError

__all__ = ["LocalEncoder", "import_backend", "model_folder"]


def model_folder(path: str | Path, required: tuple[str, ...], backend: str) -> Path:
    """``path`` resolved, or :class:`EmbedderLoadError` naming what is missing.

    A local folder is required on purpose: given a hub name instead, the
    backends would try to download weights at run time, which this project
    never does.
    """
    folder = Path(path).expanduser()
    if not folder.is_dir():
        raise EmbedderLoadError(
            f"{backend}: model folder {str(folder)!r} does not exist or is not a directory "
            "(a local folder is required; nothing is downloaded)"
        )
    missing = [name for name in required if not (folder / name).is_file()]
    if missing:
        raise EmbedderLoadError(
            f"{backend}: model folder {str(folder)!r} has no {', '.join(missing)}"
        )
    return folder.resolve()


def import_backend(module: str, what: str, extra: str) -> ModuleType:
    """The backend ``module``, or :class:`EmbedderLoadError` saying which extra installs it.

    Imported when an adapter is built, not with the package: the backends are optional.
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise EmbedderLoadError(
            f"{what} is not installed: pip install 'zerda-async[{extra}]'"
        ) from exc


class LocalEncoder(ABC):
    """``emb(text)`` and ``emb.embed_batch(texts)`` over one in-process model.

    A subclass sets ``name`` and ``dim`` and implements :meth:`_forward`.  The
    forward passes are serialised: the model holds one set of weights, and
    its backend already uses the cores for one pass.
    """

    name: str
    dim: int | None

    def __init__(self) -> None:
        self._lock = threading.Lock()

    @abstractmethod
    def _forward(self, texts: list[str]) -> Any:
        """The model's rows for ``texts`` (at least one), as anything numpy reads as a matrix."""

    def _encode(self, texts: list[str]) -> NDArray[np.float32]:
        with self._lock:
            rows = self._forward(texts)
        matrix: NDArray[np.float32] = np.asarray(rows, dtype=np.float32).reshape(len(texts), -1)
        return matrix

    def __call__(self, text: Any) -> NDArray[np.float32]:
        """The vector of one text (``None`` embeds as ``""``)."""
        row: NDArray[np.float32] = self._encode(as_texts([text]))[0]
        return row

    def embed_batch(self, texts: Sequence[Any]) -> NDArray[np.float32]:
        """One row per text, in order (a ``(0, dim)`` array for none)."""
        items = as_texts(texts)
        if not items:
            return np.zeros((0, self.dim or 0), dtype=np.float32)
        return self._encode(items)
