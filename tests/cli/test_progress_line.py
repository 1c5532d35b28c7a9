"""The progress line of ``zerda index`` (``apps._progress``): what it draws, when it is silent.

Plain unit tests: they need no embedder, so they run whatever extras are installed.
"""

from __future__ import annotations

import io

import pytest

from zerda_async.apps._progress import Progress, format_duration


class Terminal(io.StringIO):
    """A text stream that says it is a terminal."""

    def isatty(self) -> bool:
        return True


def test_the_progress_line_shows_rate_and_time_left() -> None:
    stream = Terminal()
    bar = Progress(100, label="embedding", unit="chunks", stream=stream)
    bar._started -= 10  # ten seconds ago
    bar.advance(20)
    assert "embedding [######" in stream.getvalue()
    line = bar.line()
    assert "20/100 chunks" in line and "2.0 chunks/s" in line and "40s left" in line
    bar.advance(80)
    bar.close()
    assert stream.getvalue().endswith("100/100 chunks  10.0 chunks/s\n")


@pytest.mark.parametrize("quiet", [False, True])
def test_the_progress_line_is_silent_in_a_pipe_or_when_quiet(quiet: bool) -> None:
    stream = Terminal() if quiet else io.StringIO()
    bar = Progress(10, stream=stream, quiet=quiet)
    bar.advance(10)
    bar.close()
    assert stream.getvalue() == ""


def test_durations_read_as_a_person_would() -> None:
    assert [format_duration(s) for s in (4.4, 65, 3725)] == ["4s", "1m05s", "1h02m"]
