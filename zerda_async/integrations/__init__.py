"""Adapters for the frameworks people already use: zerda as their retriever.

* :class:`ZerdaRetriever` and :func:`zerda_context_runnable` — LangChain
  (``pip install 'zerda-async[langchain]'``);
* :class:`ZerdaLlamaIndexRetriever` — LlamaIndex (``[llamaindex]``);
* :class:`ZerdaHaystackRetriever` — Haystack 2 (``[haystack]``);
* :class:`ZerdaBackend` — what they share: sync and async calls on either engine;
* :func:`to_zerda_filters` — a framework's filter objects (Haystack dicts,
  LlamaIndex ``MetadataFilters``, LangChain ``Comparison``/``Operation``) in
  zerda's filter language, or a ``ConfigError`` naming what cannot be translated.

The names are imported lazily, so ``import zerda_async`` never imports a
framework; using one whose package is missing raises an ``ImportError``
naming the extra to install.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = [
    "ZerdaBackend",
    "ZerdaHaystackRetriever",
    "ZerdaLlamaIndexRetriever",
    "ZerdaRetriever",
    "to_zerda_filters",
    "zerda_context_runnable",
]

# name -> (private module, extra that installs its framework)
_LAZY = {
    "ZerdaBackend": ("_backend", None),
    "to_zerda_filters": ("_filters", None),
    "ZerdaRetriever": ("_langchain", "langchain"),
    "zerda_context_runnable": ("_langchain", "langchain"),
    "ZerdaLlamaIndexRetriever": ("_llamaindex", "llamaindex"),
    "ZerdaHaystackRetriever": ("_haystack", "haystack"),
}


def __getattr__(name: str) -> Any:
    try:
        module_name, extra = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    try:
        module = importlib.import_module(f"{__name__}.{module_name}")
    except ImportError as exc:
        raise ImportError(
            f"{name} needs the {extra!r} extra: pip install 'zerda-async[{extra}]' ({exc})"
        ) from exc
    value = getattr(module, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
