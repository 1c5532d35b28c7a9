"""``zerda index`` reading files: a progress line on a terminal, none with --quiet or in a pipe."""

from __future__ import annotations

import os
import pty
import select
import subprocess
from pathlib import Path

from .conftest import SCRIPT


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
