"""Pinning BLAS threads around one call, without changing the process's setting for long.

numpy's BLAS (OpenBLAS here) starts one thread per core by default.  For the
small matrix products of a sentence encoder that oversubscribes a loaded
2-core machine badly (measured: throughput fell from ~380 to ~22 chunks/s),
so the embedders limit the threads only while their own call runs, with
threadpoolctl, and restore the previous value afterwards.

threadpoolctl's limit is process-wide while it holds, so two threads that
limit and restore at the same time could leave the wrong value behind; one
lock serialises the pinned calls of the whole process.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["blas_threads", "default_blas_threads"]

_LOCK = threading.Lock()
_controller: Any = None


def default_blas_threads() -> int:
    """1 on machines of up to 3 cores, else 2: what held up best under load when measured."""
    cores = os.cpu_count() or 1
    return 1 if cores <= 3 else 2


def _get_controller() -> Any:
    # Scanning the loaded libraries costs milliseconds: do it once.
    global _controller
    if _controller is None:
        from threadpoolctl import ThreadpoolController

        _controller = ThreadpoolController()
    return _controller


@contextmanager
def blas_threads(limit: int | None) -> Iterator[None]:
    """Run the body with at most ``limit`` BLAS threads (``None``: leave BLAS alone).

    Pinned bodies are serialised by a process-wide lock (see the module docstring).
    """
    if limit is None:
        yield
        return
    with _LOCK:
        controller = _get_controller()
        with controller.limit(limits=limit, user_api="blas"):
            yield
