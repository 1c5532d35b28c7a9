"""Composition of ranked chunks into one context string within a length budget.

The layout is ``header + sep + chunk_1 + sep + ... + chunk_n + sep + footer``
using the template chosen at construction (or, for ``"auto"``, per query from
its language).  With the default ``composer.packing = "documented"`` the budget
accounting reproduces the documented package exactly, including its surprises
(the first chunk is always included, packing stops at the first chunk that does
not fit, and a final clamp may cut into the footer); ``"fit"`` packs as
:func:`~zerda_async.core.packing.pack_fit` describes.  :meth:`compose_cited`
also says where each chunk's text sits in the context.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from .config import ContextEngineConfig, LengthCounter
from .counters import char_counter
from .models import Composition, QueryAnalysis, ScoredChunk
from .packing import Piece, origin_of, pack_documented, pack_fit
from .strategy import ContextComposerStrategy
from .templates import (
    ARABIC_PLACEHOLDER,
    AUTO_TEMPLATE,
    DEFAULT_TEMPLATE,
    ENGLISH_PLACEHOLDER,
    TEMPLATES,
    ContextTemplate,
)
from .truncation import truncate
from .validation import check_packing_fields
from .vector_floor import Floor, covers_query

__all__ = ["SmartContextComposer", "compose_with_citations"]

logger = logging.getLogger(__name__)

_TRUNCATE_BACKOFF = 0.7
_MAX_METADATA_ITEMS = 5
# Marks where the chunk text goes when a chunk layout is split into prefix and suffix.
_SLOT = "\x00"


def _rerank_scores(chunks: list[ScoredChunk]) -> list[float]:
    """The reranker's scores among ``chunks`` (those it scored)."""
    found = (getattr(sc, "rerank_score", None) for sc in chunks)
    return [value for value in found if value is not None]


class SmartContextComposer(ContextComposerStrategy):
    """Formats chunks with a template and packs them into a budget.

    ``counter`` measures lengths in the budget's unit (code points by
    default).  The template is resolved once, here; unknown names use the
    Arabic template, and ``"auto"`` picks the Arabic or English one from each
    query's analysis.  Every other documented ``config.composer`` field is read
    live; ``packing`` and ``relevance_floor`` are checked here (a bad value
    raises :class:`ConfigError` naming the field) and then read live too.
    """

    def __init__(self, config: ContextEngineConfig, counter: LengthCounter | None = None) -> None:
        self.cfg = config.composer
        self._retriever_cfg = config.retriever
        self._counter: LengthCounter = counter or char_counter
        self._tmpl = TEMPLATES.get(self.cfg.template, TEMPLATES[DEFAULT_TEMPLATE])
        check_packing_fields(
            self.cfg.packing,
            self.cfg.relevance_floor,
            self.cfg.min_query_coverage,
            self.cfg.min_vector_margin,
        )

    def compose(self, chunks: list[ScoredChunk], analysis: QueryAnalysis, budget: int) -> str:
        """Build the context for ``chunks`` (already in the desired order).

        ``analysis`` is read only by the ``"auto"`` template.  An empty chunk
        list yields the placeholder context, whatever the budget.
        """
        return self.compose_cited(chunks, analysis, budget).context

    def compose_cited(
        self,
        chunks: list[ScoredChunk],
        analysis: QueryAnalysis | None,
        budget: int,
        template: str | None = None,
        vector_floor: Floor | None = None,
        query: str | None = None,
    ) -> Composition:
        """:meth:`compose`, with the citations of the chunks in the context, in order.

        Chunks scoring below ``relevance_floor`` are left out first; when the
        opt-in packing settings leave no chunk, the result says so
        (``nothing_relevant``).  Chunks a reranker scored (``rerank_score``)
        are judged by ``composer.rerank_floor`` instead of the coverage checks.
        ``template`` (a template name or ``"auto"``) replaces the configured
        template for this call only; ``None`` keeps it.
        ``vector_floor`` is the embedder's calibration of the relevance floor
        (:mod:`zerda_async.core.vector_floor`), used when
        ``composer.embedder_floor`` is on; ``query`` is the question the chunks
        were retrieved for (a fitted floor reads its script), by default the
        analysed question (``analysis.original_query``; pass the user's own
        question when that one was enriched with history).  A fitted floor
        with neither is a ``ValueError``.
        """
        if query is None and analysis is not None:
            query = str(analysis.original_query)
        name, tmpl = self._template_for(analysis, template)
        floor = self.cfg.relevance_floor
        if floor > 0:
            chunks = [sc for sc in chunks if sc.composite_score >= floor]
        rerank_floor = self.cfg.rerank_floor
        judged = [] if rerank_floor is None or not chunks else _rerank_scores(chunks)
        if judged and rerank_floor is not None:
            # A reranker read the question with the chunks: its verdict replaces
            # the coverage and vector checks (composer.rerank_floor).
            relevant = max(judged) >= rerank_floor
        else:
            relevant = covers_query(
                chunks,
                self.cfg.min_query_coverage,
                self.cfg.min_vector_margin,
                self._usable_floor(vector_floor),
                query,
            )
        if not relevant:
            chunks = []
        if not chunks:
            opted_in = floor > 0 or self.cfg.packing != "documented"
            return Composition(self._empty_context(name, tmpl), (), nothing_relevant=opted_in)
        if self.cfg.group_by_source:
            chunks = self._group_by_source(chunks)
        pieces = [self._piece(sc, idx, tmpl) for idx, sc in enumerate(chunks)]
        if self.cfg.packing == "fit":
            context, citations = pack_fit(
                pieces, tmpl, self.cfg.separator, budget, self._counter, self._word_truncate
            )
        else:
            context, citations = pack_documented(
                pieces, tmpl, self.cfg.separator, budget, self._counter, self._hard_truncate
            )
        if logger.isEnabledFor(logging.DEBUG):
            # The documented message says "chars" even when counting tokens.
            logger.debug(
                "SmartContextComposer: %d chunks → %d chars (budget=%d)",
                len(chunks),
                self._counter(context),
                budget,
            )
        return Composition(context, tuple(citations))

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

    def _usable_floor(self, vector_floor: Floor | None) -> Floor | None:
        """``vector_floor`` when the configuration lets it decide, else ``None``.

        It needs ``composer.embedder_floor``, convex fusion (the only one that
        sets ``vector_margin``) and the ``fusion_depth`` it was calibrated at.
        """
        retriever = self._retriever_cfg
        if (
            vector_floor is None
            or not self.cfg.embedder_floor
            or retriever.fusion != "convex"
            or retriever.fusion_depth != vector_floor.depth
        ):
            return None
        return vector_floor

    def _template_for(
        self, analysis: QueryAnalysis | None, template: str | None = None
    ) -> tuple[str, ContextTemplate]:
        """The template name and record for this query (``"auto"`` resolved by language).

        ``template`` is a per-call choice; an unknown one takes the Arabic
        record, as an unknown configured name does.
        """
        if template is not None and template != AUTO_TEMPLATE:
            return template, TEMPLATES.get(template, TEMPLATES[DEFAULT_TEMPLATE])
        if template is None and self.cfg.template != AUTO_TEMPLATE:
            return self.cfg.template, self._tmpl
        name = "arabic" if analysis is not None and analysis.is_arabic else "english"
        return name, TEMPLATES[name]

    def _format_chunk(self, sc: ScoredChunk, idx: int) -> str:
        """Render one chunk with the template resolved at construction."""
        return self._piece(sc, idx, self._tmpl).formatted

    def _piece(self, sc: ScoredChunk, idx: int, tmpl: ContextTemplate) -> Piece:
        """Render one chunk; ``idx`` is its 0-based position after grouping.

        The fallback source label uses the 0-based position while the
        template's ``{idx}`` field shows the 1-based one.
        """
        cfg = self.cfg
        fmt = tmpl.chunk_fmt_score if cfg.include_scores else tmpl.chunk_fmt
        # Each property reads through the caller's chunk: read each once.
        doc_id = sc.doc_id
        source = sc.source or doc_id or f"doc-{idx}"
        layout = fmt.format(source=source, text=_SLOT, score=sc.composite_score, idx=idx + 1)
        prefix, _, suffix = layout.partition(_SLOT)
        metadata = sc.metadata
        if cfg.include_metadata and metadata:
            items = list(metadata.items())[:_MAX_METADATA_ITEMS]
            suffix += "\n[" + " | ".join(f"{k}: {v}" for k, v in items) + "]"
        raw = sc.text
        text = raw.strip()
        origin = origin_of(metadata) if metadata else None
        if origin is not None and origin[2] is not None:
            # The span in the document is of the stripped text.
            skipped = len(raw) - len(raw.lstrip())
            origin = (origin[0], origin[1], origin[2] + skipped)
        return Piece(str(doc_id or ""), str(source), prefix, text, suffix, origin)

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

    def _empty_context(self, name: str | None = None, tmpl: ContextTemplate | None = None) -> str:
        """The placeholder context used when there are no chunks.

        The message language follows the live template name (``name`` is the
        one ``"auto"`` resolved to) while the frame comes from the template
        resolved at construction, so an unknown name gives an Arabic frame
        around the English message.
        """
        name = self.cfg.template if name is None else name
        tmpl = self._tmpl if tmpl is None else tmpl
        msg = ARABIC_PLACEHOLDER if name == "arabic" else ENGLISH_PLACEHOLDER
        pieces = (tmpl.header.strip(), msg, tmpl.footer.strip())
        return self.cfg.separator.join(p for p in pieces if p)

    def _hard_truncate(self, text: str, max_len: int) -> str:
        """Cut ``text`` to ``max_len`` units plus ``"..."``, preferring a word boundary."""
        return truncate(text, max_len, self._counter, _TRUNCATE_BACKOFF)

    def _word_truncate(self, text: str, max_len: int) -> str:
        """Cut ``text`` at a word boundary with ``"..."`` (the fit packer's last resort)."""
        return truncate(text, max_len, self._counter, _TRUNCATE_BACKOFF)


def compose_with_citations(
    composer: Any,
    chunks: list[ScoredChunk],
    analysis: QueryAnalysis | None,
    budget: int,
    *,
    template: str | None = None,
    vector_floor: Floor | None = None,
    query: str | None = None,
) -> Composition:
    """Compose with any composer; citations come only from one whose ``compose`` is ours.

    ``template`` (a per-request template name or ``"auto"``; ``None`` for the
    configured one) and ``vector_floor`` (the embedder's calibration of the
    relevance floor) and ``query`` (the retrieved-for question, which a fitted
    floor reads; ``None``: the analysed one, see
    :meth:`SmartContextComposer.compose_cited`) reach only this package's composer.  An injected
    composer, a wrapper that delegates attributes, or a subclass that overrides
    :meth:`SmartContextComposer.compose` is called through its documented
    ``compose`` (so its own behaviour wins, with its own template) and cites
    nothing.
    """
    if (
        isinstance(composer, SmartContextComposer)
        and type(composer).compose is SmartContextComposer.compose
    ):
        return composer.compose_cited(chunks, analysis, budget, template, vector_floor, query)
    return Composition(composer.compose(chunks, analysis, budget))
