"""Counters, filter, ranker, templates and composer (re-exported from the core).

``ContextTemplate`` lives here only: the package root does not export it.
"""

from zerda_async.core.composer import SmartContextComposer
from zerda_async.core.counters import char_counter, make_token_counter
from zerda_async.core.filtering import ChunkFilter
from zerda_async.core.ranking import CompositeRanker
from zerda_async.core.templates import TEMPLATES as _TEMPLATES
from zerda_async.core.templates import ContextTemplate

__all__ = [
    "ChunkFilter",
    "CompositeRanker",
    "ContextTemplate",
    "SmartContextComposer",
    "char_counter",
    "make_token_counter",
]

_ = _TEMPLATES  # documented module-private name, kept importable
