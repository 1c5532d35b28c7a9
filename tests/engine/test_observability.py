"""structlog events: one per stage, with request id, session id, duration and counts."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator, MutableMapping
from typing import Any

import pytest
import structlog
from structlog.testing import capture_logs

import sync_api
from zerda_async import AsyncContextEngine
from zerda_async.pipeline import STAGES


@pytest.fixture
def captured() -> Iterator[list[MutableMapping[str, Any]]]:
    with capture_logs() as logs:
        yield logs
    # capture_logs leaves structlog marked as configured; the library must
    # go back to emitting nothing, as in an application that never set it up.
    structlog.reset_defaults()


def test_importing_the_packages_never_configures_logging() -> None:
    code = (
        "import structlog, zerda_async, sync_api, zerda_async.engine._engine;"
        "assert not structlog.is_configured(), 'configured on import'"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_unconfigured_structlog_prints_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    assert not structlog.is_configured()
    sync_api.ContextEngine().run("What is ML?")
    assert capsys.readouterr().out == ""


def test_sync_run_logs_one_event_per_stage(captured: list[MutableMapping[str, Any]]) -> None:
    sync_api.ContextEngine().run("What is ML?")
    stages = [e["stage"] for e in captured if e["event"] == "stage"]
    assert stages == [stage.name for stage in STAGES]
    for event in captured:
        assert event["duration_ms"] >= 0
        assert {"retrieved", "filtered", "ranked", "context_length", "request_id"} <= set(event)


@pytest.mark.anyio
async def test_async_run_logs_request_and_session_ids(
    captured: list[MutableMapping[str, Any]],
) -> None:
    async with AsyncContextEngine() as engine:
        await engine.run("What is ML?", session_id="s-1")
    events = [e for e in captured if e["event"] == "stage"]
    assert {e["stage"] for e in events} == {stage.name for stage in STAGES}
    assert {e["session_id"] for e in events} == {"s-1"}
    assert len({e["request_id"] for e in events}) == 1 and events[0]["request_id"]
