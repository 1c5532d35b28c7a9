"""The per-request record that flows through the stages, and the one way to make it."""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import msgspec

from zerda_async.core.filter_language import conditions_key, parse_filters
from zerda_async.core.models import Citation, ContextResult, QueryAnalysis, ScoredChunk
from zerda_async.core.templates import TEMPLATE_NAMES
from zerda_async.errors import ConfigError

__all__ = [
    "RUN_KEYWORDS",
    "Ahead",
    "Job",
    "RunOptions",
    "StageHook",
    "StageTiming",
    "check_run_keywords",
    "make_job",
    "options_cache_suffix",
]


class StageTiming(msgspec.Struct, frozen=True):
    """One stage of one request that has finished, as ``RunOptions.on_stage`` receives it.

    ``stage`` is the stage's name (``"cache_lookup"``, ``"analysis"``, ...,
    ``"adaptive_record"``: :data:`~zerda_async.pipeline.STAGES` order),
    ``duration_ms`` the time the stage itself took, and ``request_id`` the
    request's id (``"r1"``, ...; empty in the sync runner, which numbers none).
    """

    stage: str
    duration_ms: float
    request_id: str


StageHook = Callable[[StageTiming], object]
"""The type of ``RunOptions.on_stage``: a plain (not ``async``) callable."""


class RunOptions(msgspec.Struct, frozen=True):
    """The caller's arguments of one ``run`` call (documented names and defaults first).

    One object that the engine's ``run``, ``stream``, ``run_many`` and
    ``run_multi`` take as ``options=`` (the keyword arguments of the same names
    stay the documented convenience; give one or the other), and that the
    command line and the service build once per request.

    ``filters`` restricts retrieval to the chunks whose metadata satisfy it
    (the language of :mod:`zerda_async.core.filter_language`); ``template``
    composes this request with another template (``None``: the configuration's).
    Both are opt-in: unset, a run is the documented one.

    ``on_stage`` is called with a :class:`StageTiming` as each stage of the
    request finishes, in pipeline order (see docs/api.md, "Stage timings"):
    a plain callable, run between two stages of the walk, so keep it short.
    An exception it raises does not stop the request: every stage still
    runs, then the call raises that exception (with a note naming the
    stage) instead of returning the result.  Unset, it costs nothing.
    """

    metadata_filters: dict[str, Any] | None = None
    max_chunks: int | None = None
    override_budget: int | None = None
    use_history: bool = True
    record_turn: bool = True
    session_id: str | None = None
    filters: dict[str, Any] | None = None
    template: str | None = None
    on_stage: StageHook | None = None


RUN_KEYWORDS: tuple[str, ...] = tuple(
    name for name in RunOptions.__struct_fields__ if name not in ("session_id", "on_stage")
)
"""The keyword arguments of ``run()`` (``session_id`` is the async engine's own, and
``on_stage`` is given in a :class:`RunOptions` only)."""


@dataclass(slots=True)
class Ahead:
    """Stages a runner applied to a job ahead of its turn (the async runner's speculation).

    They hold only for the effective ``query`` and the index ``epoch`` they
    were applied for; the walker checks both and applies the stages itself
    when either changed.  ``error`` is what stage ``error_stage`` raised: the
    walk raises it when it reaches that stage, in its documented place.
    """

    query: Any
    epoch: int
    applied: set[str] = field(default_factory=set)
    error: BaseException | None = None
    error_stage: str | None = None


class Job(msgspec.Struct):
    """Everything one request has computed so far.

    Stages fill the fields in pipeline order; ``result`` is set either by the
    cache-lookup stage (a hit ends the run early) or when the run finishes.
    """

    query: Any
    options: RunOptions
    request_id: str = ""
    t_start: float = msgspec.field(default_factory=time.perf_counter)
    cache_key: str | None = None
    cache_version: int | None = None
    cache_locked: bool = False
    effective_query: Any = None
    # True once the history enrichment set effective_query (the async engine's
    # cache lookup enriches first: its key is the effective query's).
    enriched: bool = False
    query_vector: Any = None
    analysis: QueryAnalysis | None = None
    budget: int = 0
    retrieved: list[ScoredChunk] = msgspec.field(default_factory=list)
    filtered: list[ScoredChunk] = msgspec.field(default_factory=list)
    ranked: list[ScoredChunk] = msgspec.field(default_factory=list)
    context: str = ""
    citations: tuple[Citation, ...] = ()
    nothing_relevant: bool = False
    guard_passed: bool = True
    guard_warnings: list[str] = msgspec.field(default_factory=list)
    elapsed_ms: float = 0.0
    result: ContextResult | None = None
    timings: dict[str, float] = msgspec.field(default_factory=dict)
    ahead: Ahead | None = None


def make_job(
    query: Any,
    session_id: str | None = None,
    *,
    options: RunOptions | None = None,
    **run_kwargs: Any,
) -> Job:
    """The job of one ``run(query, **run_kwargs)`` call; every engine entry point uses it.

    ``run_kwargs`` are the documented keywords of ``run()``
    (:data:`RUN_KEYWORDS`); any other raises the ``TypeError`` Python raises
    for an unexpected keyword, before anything is submitted.  ``options`` is
    the same as one object; with it, the keywords must keep their defaults.
    """
    check_run_keywords(run_kwargs)
    if options is None:
        options = RunOptions(session_id=session_id, **run_kwargs)
    else:
        _check_options_alone(options, session_id, run_kwargs)
    check_run_options(options)
    return Job(query=query, options=options)


_DEFAULTS = RunOptions()


def _check_options_alone(
    options: Any, session_id: str | None, run_kwargs: Mapping[str, Any]
) -> None:
    """``TypeError`` for ``options=`` given with run keywords that differ from their defaults."""
    if not isinstance(options, RunOptions):
        raise TypeError(f"options must be a RunOptions, got {type(options).__name__}")
    given = sorted(k for k, v in run_kwargs.items() if v != getattr(_DEFAULTS, k))
    if session_id is not None:
        given.append("session_id")
    if given:
        raise TypeError(
            f"run() got options= and the keyword arguments {given}: give one or the other"
        )


def check_run_options(options: RunOptions) -> None:
    """Raise ``ConfigError`` naming a bad ``filters`` key or ``template``, before submission.

    A bad ``on_stage`` (not callable, or an ``async`` function) raises ``TypeError``.
    """
    if options.on_stage is not None:
        _check_hook(options.on_stage)
    if options.filters is not None:
        if not isinstance(options.filters, Mapping):
            raise ConfigError(
                f"filters must be a mapping of metadata keys, got {type(options.filters).__name__}"
            )
        parse_filters(options.filters)
    if options.template is not None and options.template not in TEMPLATE_NAMES:
        raise ConfigError(
            f"template: unknown template {options.template!r}; "
            f"expected one of {sorted(TEMPLATE_NAMES)}"
        )


def _check_hook(hook: Any) -> None:
    """``TypeError`` for an ``on_stage`` that is not a plain callable."""
    if not callable(hook):
        raise TypeError(f"on_stage must be callable, got {type(hook).__name__}")
    if inspect.iscoroutinefunction(hook) or inspect.iscoroutinefunction(
        getattr(hook, "__call__", None)  # noqa: B004 (an instance with an async __call__)
    ):
        raise TypeError(
            f"on_stage must be a plain callable, got the async function {hook!r}: "
            "the walk calls it between two stages and cannot await it"
        )


def options_cache_suffix(options: RunOptions, config_template: str) -> str:
    """What ``filters`` and ``template`` add to a cache key (empty when unset, as documented).

    A template equal to the configuration's composes the same context, so it
    adds nothing.
    """
    suffix = ""
    if options.filters:
        suffix += f"|where={conditions_key(parse_filters(options.filters))}"
    if options.template is not None and options.template != config_template:
        suffix += f"|template={options.template}"
    return suffix


def check_run_keywords(run_kwargs: Mapping[str, Any]) -> None:
    """Raise ``TypeError`` naming the first keyword that ``run()`` does not take."""
    unknown = set(run_kwargs) - set(RUN_KEYWORDS)
    if unknown:
        raise TypeError(f"run() got an unexpected keyword argument {sorted(unknown)[0]!r}")
