"""Rule-based query analysis of the documented package (re-exported from the core)."""

from zerda_async.core.query_analyzer import RuleBasedQueryAnalyzer, build_query_analyzer

__all__ = ["RuleBasedQueryAnalyzer", "build_query_analyzer"]
