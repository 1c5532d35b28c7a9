"""The stage: one step of the run, applied to a job against the engine state.

Its own module so that both groups of stages (:mod:`._stages` and
:mod:`._state_stages`) can subclass it without importing each other.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

from zerda_async.pipeline._job import Job
from zerda_async.pipeline._state import EngineState
from zerda_async.runtime import Steps

__all__ = ["Stage"]


class Stage(ABC):
    """One step of the pipeline; subclasses implement :meth:`apply`."""

    name: str = "stage"
    speculative: bool = False
    # Its result depends on the query alone (the query vector): speculation keeps
    # it across an index change.
    query_only: bool = False
    # Speculated only when the context cache will not answer the request (the
    # rerank stage: a reranker call a cache hit would waste); else the walk runs it.
    # Checked only when the stage awaits (a reranker is set): the key costs a hash.
    after_cache_miss: bool = False

    @property
    def error_name(self) -> str:
        """The stage named on an exception this stage raises (see ``errors.failed_stage``)."""
        return self.name

    @abstractmethod
    def apply(self, job: Job, state: EngineState) -> None:
        """Advance ``job`` by this step."""

    def after_hit(self, job: Job, state: EngineState) -> bool:
        """True when this stage still applies to ``job`` after a cache hit ended its run.

        A hit ends the documented run; the async engine's session turn is the
        exception (every request of a session is a turn of it).
        """
        return False

    def steps(self, job: Job, state: EngineState) -> Steps[None]:
        """:meth:`apply` in pieces, each ``next()`` one piece (see :mod:`zerda_async.runtime`).

        The async runner drives this when it paces the event loop; a stage
        whose work can be long (retrieval over a large index) yields between
        pieces.  The default is :meth:`apply` as one piece.
        """
        self.apply(job, state)
        return
        yield  # a generator: the work above runs at the first next()

    def awaits(self, state: EngineState) -> bool:
        """True when this stage must be applied with :meth:`apply_async` for ``state``."""
        return False

    async def apply_async(self, job: Job, state: EngineState) -> None:
        """Advance ``job`` by this step, awaiting I/O (only called when :meth:`awaits`)."""
        self.apply(job, state)

    def __repr__(self) -> str:
        return f"<stage {self.name}>"
