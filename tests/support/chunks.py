"""The chunk type of the tests, and bare objects for the duck-typing rules.

The engine reads chunks by attribute (``text``/``page_content``, ``doc_id``/``id``,
``metadata``, ``source``): any object works.  :class:`Chunk` is what a user's
chunk usually looks like.  A field left at its default is falsy, which the
engine resolves exactly like a missing attribute, so one type fits the tests
that give only some fields.  Tests about *missing* attributes or the fallback
names (``page_content``, ``id``) use :func:`bare_chunk` instead.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

__all__ = ["Chunk", "bare_chunk"]


# eq=False: chunks compare (and hash) by identity, like the user objects they
# stand for; the engine never relies on chunk equality.
@dataclass(frozen=True, eq=False)
class Chunk:
    """A plain chunk: ``doc_id``, ``text``, ``metadata`` and an optional ``source``.

    ``timestamp`` is carried because the golden cases give it (nothing reads it).
    Hostile tests put wrong types in these fields on purpose.
    """

    doc_id: str = ""
    text: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)
    source: str | None = None
    timestamp: float | None = None


def bare_chunk(**attrs: Any) -> SimpleNamespace:
    """An object carrying exactly ``attrs`` (no other chunk attribute exists)."""
    return SimpleNamespace(**attrs)
