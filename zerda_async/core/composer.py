"""Composition of ranked chunks into one context string within a length budget.

The layout is ``header + sep + chunk_1 + sep + ... + chunk_n + sep + footer``
using the template chosen at construction.  The budget accounting reproduces
the documented package exactly, including its surprises (the first chunk is
always included, packing stops at the first chunk that does not fit, and a
final clamp may cut into the footer).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from .config import ContextEngineConfig, LengthCounter
from .counters import char_counter
from .models import QueryAnalysis, ScoredChunk
from .strategy import ContextComposerStrategy
from .templates import (
    ARABIC_PLACEHOLDER,
    DEFAULT_TEMPLATE,
    ENGLISH_PLACEHOLDER,
    TEMPLATES,
)
from .truncation import truncate

__all__ = ["SmartContextComposer"]

logger = logging.getLogger(__name__)

_TRUNCATE_BACKOFF = 0.7
_MAX_METADATA_ITEMS = 5


class SmartContextComposer(ContextComposerStrategy):
    """Formats chunks with a template and packs them into a budget.

    ``counter`` measures lengths in the budget's unit (code points by
    default).  The template is resolved once, here; unknown names use the
    Arabic template.  Every other ``config.composer`` field is read live.
    """

    def __init__(self, config: ContextEngineConfig, counter: LengthCounter | None = None) -> None:
        self.cfg = config.composer
        self._counter: LengthCounter = counter or char_counter
        self._tmpl = TEMPLATES.get(self.cfg.template, TEMPLATES[DEFAULT_TEMPLATE])

    def compose(self, chunks: list[ScoredChunk], analysis: QueryAnalysis, budget: int) -> str:
        """Build the context for ``chunks`` (already in the desired order).

        ``analysis`` is accepted for the interface but never read.  An empty
        chunk list yields the placeholder context, whatever the budget.
        """
        if not chunks:
            return self._empty_context()
        if self.cfg.group_by_source:
            chunks = self._group_by_source(chunks)
        formatted = [(self._format_chunk(sc, idx), sc) for idx, sc in enumerate(chunks)]
        context = self._assemble(formatted, budget)
        if logger.isEnabledFor(logging.DEBUG):
            # The documented message says "chars" even when counting tokens.
            logger.debug(
                "SmartContextComposer: %d chunks → %d chars (budget=%d)",
                len(chunks),
                self._counter(context),
                budget,
            )
        return context

    def get_stats(self, context: str) -> dict[str, Any]:
        """Length statistics of the separator-delimited parts of ``context``.

        Header and footer count as parts.  ``length_unit`` is ``"chars"`` only
        when the counter is the :func:`char_counter` object itself.
        """
        parts = [p for p in context.split(self.cfg.separator) if p.strip()]
        lengths = [self._counter(p) for p in parts]
        return {
            "total_length": self._counter(context),
            "chunk_count": len(parts),
            "avg_chunk_length": sum(lengths) // len(lengths) if lengths else 0,
            "min_chunk_length": min(lengths) if lengths else 0,
            "max_chunk_length": max(lengths) if lengths else 0,
            "template": self.cfg.template,
            "length_unit": "tokens" if self._counter is not char_counter else "chars",
        }

    def _format_chunk(self, sc: ScoredChunk, idx: int) -> str:
        """Render one chunk; ``idx`` is its 0-based position after grouping.

        The fallback source label uses the 0-based position while the
        template's ``{idx}`` field shows the 1-based one.
        """
        fmt = self._tmpl.chunk_fmt_score if self.cfg.include_scores else self._tmpl.chunk_fmt
        text = fmt.format(
            source=sc.source or sc.doc_id or f"doc-{idx}",
            text=sc.text.strip(),
            score=sc.composite_score,
            idx=idx + 1,
        )
        if self.cfg.include_metadata and sc.metadata:
            items = list(sc.metadata.items())[:_MAX_METADATA_ITEMS]
            text += "\n[" + " | ".join(f"{k}: {v}" for k, v in items) + "]"
        return text

    def _group_by_source(self, chunks: Sequence[ScoredChunk]) -> list[ScoredChunk]:
        """Group chunks by source, best group (by its top score) first.

        Groups keep their first-appearance order on ties and their members
        keep input order.
        """
        groups: dict[Any, list[ScoredChunk]] = {}
        for sc in chunks:
            groups.setdefault(sc.source, []).append(sc)
        ordered = sorted(
            groups.values(),
            key=lambda members: max(sc.composite_score for sc in members),
            reverse=True,
        )
        return [sc for members in ordered for sc in members]

    def _assemble(self, formatted: Sequence[tuple[str, ScoredChunk]], budget: int) -> str:
        """Pack formatted chunks between header and footer within ``budget``."""
        sep = self.cfg.separator
        count = self._counter
        tmpl = self._tmpl

        parts: list[str] = []
        if tmpl.header:
            parts.append(tmpl.header.rstrip())
        # The footer is charged with its leading newline plus one separator;
        # the header is charged without the separator that follows it.
        footer_cost = count(tmpl.footer) + count(sep) if tmpl.footer else 0
        header_parts = [tmpl.header.rstrip()] if tmpl.header else []
        available = budget - count(sep.join(header_parts)) - footer_cost

        included = 0
        for chunk_text, _ in formatted:
            chunk_len = count(chunk_text) + count(sep)
            if available - chunk_len < 0:
                if included == 0:
                    # The first chunk always goes in, cut to what is left
                    # (ignoring its separator); the final clamp fixes the rest.
                    parts.append(self._hard_truncate(chunk_text, available))
                    included += 1
                break
            parts.append(chunk_text)
            available -= chunk_len
            included += 1

        if tmpl.footer:
            parts.append(tmpl.footer.lstrip())
        context = sep.join(parts)
        if count(context) > budget:
            context = self._hard_truncate(context, budget)
        return context

    def _empty_context(self) -> str:
        """The placeholder context used when there are no chunks.

        The message language follows the live template name while the frame
        comes from the template resolved at construction, so an unknown name
        gives an Arabic frame around the English message.
        """
        msg = ARABIC_PLACEHOLDER if self.cfg.template == "arabic" else ENGLISH_PLACEHOLDER
        pieces = (self._tmpl.header.strip(), msg, self._tmpl.footer.strip())
        return self.cfg.separator.join(p for p in pieces if p)

    def _hard_truncate(self, text: str, max_len: int) -> str:
        """Cut ``text`` to ``max_len`` units plus ``"..."``, preferring a word boundary."""
        return truncate(text, max_len, self._counter, _TRUNCATE_BACKOFF)
