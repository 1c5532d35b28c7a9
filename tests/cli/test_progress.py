"""``zerda index``'s progress: rate and ETA on a terminal, nothing in a pipe or with --quiet."""

from __future__ import annotations

import io
import os
import pty
import select
import subprocess
from pathlib import Path

from zerda_async.apps._progress import Progress, format_eta

from .conftest import SCRIPT


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_line_shows_count_rate_eta_and_the_current_file() -> None:
    now = [0.0]
    stream = _Terminal()
    progress = Progress(4, stream, label="reading", unit="files", clock=lambda: now[0])
    now[0] = 2.0
    progress.advance(1, "docs/a.pdf")
    assert progress.line("docs/a.pdf") == (
        "reading [######..................] 1/4 files · 0.5 files/s · ETA 6 s · docs/a.pdf"
    )
    now[0] = 8.0
    progress.advance(3, "docs/d.md")
    progress.close()
    drawn = stream.getvalue()
    assert drawn.count("\r") == 2 and drawn.endswith("\n")
    assert "4/4 files · 0.5 files/s · docs/d.md" in drawn and "ETA" not in drawn.split("\r")[-1]


def test_nothing_is_written_in_a_pipe_or_when_quiet() -> None:
    for stream, quiet in ((io.StringIO(), False), (_Terminal(), True)):
        progress = Progress(3, stream, quiet=quiet)
        progress.advance(3, "x")
        progress.close()
        assert stream.getvalue() == ""


def test_eta_reads_naturally() -> None:
    assert [format_eta(s) for s in (0.4, 59, 125, 3780)] == [
        "0 s",
        "59 s",
        "2 min 05 s",
        "1 h 03 min",
    ]


def _index_on_a_terminal(folder: Path, out: Path, *flags: str) -> str:
    """``zerda index`` with its stderr on a pseudo-terminal; what the terminal received."""
    controller, terminal = pty.openpty()
    try:
        process = subprocess.Popen(
            [str(SCRIPT), "index", str(folder), "--out", str(out), *flags],
            stdout=subprocess.DEVNULL,
            stderr=terminal,
            env={**os.environ, "PYTHONUTF8": "1"},
        )
        os.close(terminal)
        received = b""
        while True:
            ready, _, _ = select.select([controller], [], [], 60)
            if not ready:
                break
            try:
                data = os.read(controller, 4096)
            except OSError:  # the terminal closed: the process has ended
                break
            if not data:
                break
            received += data
        assert process.wait(timeout=60) == 0
    finally:
        os.close(controller)
    return received.decode("utf-8", "replace")


def test_zerda_index_draws_progress_on_a_terminal_only_unless_quiet(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    for i in range(3):
        (folder / f"note{i}.txt").write_text(f"Note number {i} about the harbour.\n")
    shown = _index_on_a_terminal(folder, tmp_path / "a")
    assert "reading [" in shown and "3/3 files" in shown and "files/s" in shown
    quiet = _index_on_a_terminal(folder, tmp_path / "b", "--quiet")
    assert "reading [" not in quiet
