"""The metadata filter language, which lives in :mod:`zerda_async.core.filter_language`.

The in-process retrievers use it too, and core may not import stores; this
module keeps the stores' imports where they were.
"""

from __future__ import annotations

from ..core.filter_language import Condition, Filters, matches, parse_filters

__all__ = ["Condition", "Filters", "matches", "parse_filters"]
