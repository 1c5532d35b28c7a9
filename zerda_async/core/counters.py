"""Length counters: the unit in which budgets are measured."""

from __future__ import annotations

from typing import Any, Protocol

from .config import LengthCounter

__all__ = ["Tokenizer", "char_counter", "make_token_counter"]


class Tokenizer(Protocol):
    """Anything with ``encode(text)`` returning a sized sequence (tiktoken, HF tokenizers)."""

    def encode(self, text: str, /) -> Any: ...


def char_counter(text: str) -> int:
    """Length in Unicode code points; ``0`` for ``None`` or ``""``.

    This exact function object is the default counter: the composer reports
    ``"chars"`` only when its counter *is* this function.
    """
    return len(text) if text else 0


def make_token_counter(tokenizer: Tokenizer) -> LengthCounter:
    """A counter returning ``len(tokenizer.encode(text))``; errors from ``encode`` propagate."""

    def count(text: str) -> int:
        return len(tokenizer.encode(text))

    return count
