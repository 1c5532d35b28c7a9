"""Context templates: the header, chunk layouts and footer of a composed context.

The four built-in templates are part of the output contract, so their strings
are byte-for-byte those of the documented package.  ``TEMPLATES`` is a
read-only mapping; the composer resolves a template name against it once, at
construction, falling back to ``"arabic"`` for unknown names.  The name
``"auto"`` (:data:`AUTO_TEMPLATE`) is not a template but a choice: the
composer takes ``"arabic"`` for an Arabic query and ``"english"`` otherwise.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

__all__ = [
    "ARABIC_PLACEHOLDER",
    "AUTO_TEMPLATE",
    "DEFAULT_TEMPLATE",
    "ENGLISH_PLACEHOLDER",
    "TEMPLATES",
    "TEMPLATE_NAMES",
    "ContextTemplate",
]


@dataclass(frozen=True, slots=True)
class ContextTemplate:
    """The four format strings of one template.

    ``chunk_fmt`` and ``chunk_fmt_score`` are :meth:`str.format` patterns that
    may use the named fields ``source``, ``text``, ``score`` and ``idx``;
    ``chunk_fmt_score`` is used when the composer is asked to show scores.
    """

    header: str
    chunk_fmt: str
    chunk_fmt_score: str
    footer: str


DEFAULT_TEMPLATE: Final = "arabic"
"""Name of the template used when the configured name is unknown."""

ARABIC_PLACEHOLDER: Final = "لا تتوفر معلومات."
"""Body of the empty context when the configured template is literally ``"arabic"``."""

ENGLISH_PLACEHOLDER: Final = "No information available."
"""Body of the empty context for every other template name."""

TEMPLATES: Final[Mapping[str, ContextTemplate]] = MappingProxyType(
    {
        "arabic": ContextTemplate(
            header="📚 المعلومات المسترجعة:\n",
            chunk_fmt="[المصدر: {source}]\n{text}",
            chunk_fmt_score="[المصدر: {source} | الدرجة: {score:.3f}]\n{text}",
            footer="\n─── نهاية السياق ───",
        ),
        "english": ContextTemplate(
            header="📚 Retrieved Information:\n",
            chunk_fmt="[Source: {source}]\n{text}",
            chunk_fmt_score="[Source: {source} | Score: {score:.3f}]\n{text}",
            footer="\n─── End of Context ───",
        ),
        "minimal": ContextTemplate(
            header="",
            chunk_fmt="{text}",
            chunk_fmt_score="{text}",
            footer="",
        ),
        "structured": ContextTemplate(
            header="=== CONTEXT START ===\n",
            chunk_fmt="--- [{idx}] {source} ---\n{text}",
            chunk_fmt_score="--- [{idx}] {source} (score={score:.3f}) ---\n{text}",
            footer="\n=== CONTEXT END ===",
        ),
    }
)
"""Built-in templates by name, in the documented order."""

AUTO_TEMPLATE: Final = "auto"
"""Template name that picks ``"arabic"`` or ``"english"`` from each query's language."""

TEMPLATE_NAMES: Final[frozenset[str]] = frozenset({*TEMPLATES, AUTO_TEMPLATE})
"""Every name ``composer.template`` accepts under :meth:`ContextEngineConfig.validate`."""
