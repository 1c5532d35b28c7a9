"""Which configuration and embedder the command line, the demo and the service use.

Two profiles: ``recommended`` (:meth:`ContextEngineConfig.recommended`, the
default) and ``documented`` (``ContextEngineConfig()``, the documented package's
behaviour).  The embedder of an index follows the profile unless named:

* ``recommended``: the default embedder
  (:func:`zerda_async.embedders.default_embedder`: multilingual E5 small with
  the ``embed`` extra), keyword search only when none is installed.  E5 is what
  finds an English chunk for an Arabic question (and the reverse), which no
  keyword can (issue 19); ``--embedder none`` builds a keyword-only index,
  ``--embedder use-multilingual-v3`` the older Universal Sentence Encoder one,
  ``--embedder e5-small+use-v3`` both side by side (``E5UseEmbedder``);
* ``documented``: the lexical :class:`HashingEmbedder` (what ``zerda index``
  always used).

A saved index records its profile, its text analyser and its embedder
(:class:`~zerda_async.apps._saved_index.IndexManifest`), so ``query`` and
``serve`` use the same ones; :func:`check_requested` turns a request for
another one into a one-line :class:`UsageError`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from zerda_async.core.config import ContextEngineConfig
from zerda_async.embedders import (
    E5Embedder,
    E5UseEmbedder,
    HashingEmbedder,
    UniversalSentenceEncoder,
    default_embedder,
    e5_available,
    use_available,
)
from zerda_async.errors import UsageError

__all__ = [
    "DEFAULT_PROFILE",
    "EMBEDDER_CHOICES",
    "KEYWORD_ONLY",
    "PROFILES",
    "EmbedderChoice",
    "check_requested",
    "choose_embedder",
    "embedder_kind",
    "profile_config",
]

PROFILES = ("recommended", "documented")
"""Profile names the applications accept (``--profile``)."""

DEFAULT_PROFILE = "recommended"
"""The profile of ``zerda index`` and ``zerda demo`` when none is named."""

KEYWORD_ONLY = "none"
"""``--embedder`` value (and manifest record) of an index without vectors."""

EMBEDDER_CHOICES = (
    "auto",
    KEYWORD_ONLY,
    E5Embedder.name,
    HashingEmbedder.name,
    UniversalSentenceEncoder.name,
    E5UseEmbedder.name,
)
"""``--embedder`` values: ``auto`` follows the profile (see the module docstring)."""

EF_SEARCH = 400
"""HNSW candidate list size when serving ``--search hnsw`` (``--ef-search``): recall@20
0.94–0.95 on ``bench/bench_scaleout.py``'s 64-dim hashing vectors (close to random, the hard
case), 0.98 on its USE v3 vectors reduced to 64 dimensions."""


def profile_config(name: str) -> ContextEngineConfig:
    """A fresh configuration of the profile ``name`` (``UsageError`` for an unknown name)."""
    if name == "recommended":
        return ContextEngineConfig.recommended()
    if name == "documented":
        return ContextEngineConfig()
    raise UsageError(f"unknown profile {name!r}; expected one of {', '.join(PROFILES)}")


@dataclass(frozen=True)
class EmbedderChoice:
    """The embedder an index is built with (``None``: keyword only) and its record name."""

    embedder: Any
    name: str


def choose_embedder(profile: str, requested: str = "auto", dim: int = 256) -> EmbedderChoice:
    """The embedder ``zerda index --profile P --embedder E`` builds with.

    ``auto`` follows the profile (module docstring); ``dim`` sizes a
    :class:`HashingEmbedder`.  Asking for a model that is not installed is a
    :class:`UsageError`.
    """
    if requested == "auto":
        if profile != "recommended":
            requested = HashingEmbedder.name
        else:
            found = default_embedder()
            return (
                EmbedderChoice(None, KEYWORD_ONLY)
                if found is None
                else EmbedderChoice(found, found.name)
            )
    if requested == KEYWORD_ONLY:
        return EmbedderChoice(None, KEYWORD_ONLY)
    if requested == HashingEmbedder.name:
        return EmbedderChoice(HashingEmbedder(dim=dim), requested)
    models: dict[str, tuple[Any, Any]] = {
        E5Embedder.name: (e5_available, E5Embedder),
        UniversalSentenceEncoder.name: (use_available, UniversalSentenceEncoder),
        E5UseEmbedder.name: (lambda: e5_available() and use_available(), E5UseEmbedder),
    }
    if requested in models:
        available, build = models[requested]
        if not available():
            raise UsageError(
                f"--embedder {requested} needs the 'embed' extra (pip install 'zerda-async[embed]')"
            )
        return EmbedderChoice(build(), requested)
    raise UsageError(
        f"unknown embedder {requested!r}; expected one of {', '.join(EMBEDDER_CHOICES)}"
    )


def embedder_kind(params: dict[str, Any]) -> str:
    """The embedder name an embedder's ``params()`` record (older records: hashing)."""
    return str(params.get("kind", HashingEmbedder.name))


def check_requested(
    directory: Any,
    recorded_profile: str,
    recorded_embedder: str,
    profile: str | None,
    embedder: str | None,
) -> None:
    """Refuse a ``--profile`` or ``--embedder`` other than the one the index was built with.

    The profile fixes the text analyser of the keyword index and the embedder
    the vectors: querying with other ones would compare tokens or vectors made
    differently, so it is a one-line :class:`UsageError` naming both.
    ``None`` (and ``auto``) means "as recorded".
    """
    if profile is not None and profile != recorded_profile:
        analyser = profile_config(recorded_profile).retriever.text_analyzer
        raise UsageError(
            f"{directory} was indexed with the {recorded_profile} profile (text analyser "
            f"{analyser!r}); --profile {profile} needs an index built with it "
            f"(zerda index --profile {profile})"
        )
    if embedder not in (None, "auto") and embedder != recorded_embedder:
        raise UsageError(
            f"{directory} was indexed with the {recorded_embedder} embedder; --embedder "
            f"{embedder} needs an index built with it (zerda index --embedder {embedder})"
        )
