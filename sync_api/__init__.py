"""Drop-in synchronous API: the documented ``context`` package on the zerda-async core.

Switch ``from context import ContextEngine`` to ``from sync_api import
ContextEngine`` and keep working: names, module paths, defaults, scores,
context strings, warnings and documented quirks are the same.  One deliberate
difference: the five legacy helpers (``validate_chunk``,
``PrefixDeduplication``, ``HashDeduplication``, ``GreedyCompression``,
``ScoreRanking``) are the real objects at the package root, not ``None``; as
documented they are still not part of ``__all__``.
"""

# Each submodule lists its names once, in its __all__: the root binds them all
# and lists them again only where it exports part of a submodule (``pipeline``
# keeps ``ContextTemplate``, ``retriever`` keeps ``RRF_K``).  The legacy helpers
# are bound but, as documented, left out of the root's __all__ (named, not
# star-imported, so that type checkers keep them private too).
from . import config, engine, guard_and_learning, models, query_analyzer, strategy
from .config import *  # noqa: F403
from .engine import *  # noqa: F403
from .guard_and_learning import *  # noqa: F403
from .legacy_compat import (
    GreedyCompression,
    HashDeduplication,
    PrefixDeduplication,
    ScoreRanking,
    validate_chunk,
)
from .models import *  # noqa: F403
from .pipeline import (
    ChunkFilter,
    CompositeRanker,
    SmartContextComposer,
    char_counter,
    make_token_counter,
)
from .query_analyzer import *  # noqa: F403
from .retriever import HybridRetriever, KeywordRetriever, MetadataRetriever, VectorRetriever
from .strategy import *  # noqa: F403

_LEGACY_ROOT_NAMES = (
    GreedyCompression,
    HashDeduplication,
    PrefixDeduplication,
    ScoreRanking,
    validate_chunk,
)

__all__ = [
    "ChunkFilter",
    "CompositeRanker",
    "HybridRetriever",
    "KeywordRetriever",
    "MetadataRetriever",
    "SmartContextComposer",
    "VectorRetriever",
    "char_counter",
    "make_token_counter",
]
__all__ += config.__all__
__all__ += engine.__all__
__all__ += guard_and_learning.__all__
__all__ += models.__all__
__all__ += query_analyzer.__all__
__all__ += strategy.__all__
