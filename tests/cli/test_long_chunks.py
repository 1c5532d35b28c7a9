"""``zerda index`` cuts long files into larger chunks (``--long-chunk-size``)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from zerda_async.apps import MANIFEST_NAME, IngestReport, read_paths
from zerda_async.apps._chunk_sizes import chunk_sizes, describe_chunk_sizes
from zerda_async.errors import UsageError
from zerda_async.readers import LONG_DOCUMENT

from .conftest import run_zerda

pytestmark = pytest.mark.timeout(120)

SENTENCE = "The spike protein binds the ACE2 receptor on the surface of airway cells. "


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A long article (over LONG_DOCUMENT characters) and a short note."""
    root = tmp_path_factory.mktemp("long") / "docs"
    root.mkdir()
    paragraphs = [SENTENCE * 4 for _ in range(LONG_DOCUMENT // (4 * len(SENTENCE)) + 2)]
    (root / "article.txt").write_text("\n\n".join(paragraphs), encoding="utf-8")
    (root / "note.txt").write_text("\n\n".join([SENTENCE * 4] * 3), encoding="utf-8")
    return root


def _lengths(report: IngestReport, name: str) -> list[int]:
    return [len(c.text) for c in report.chunks if c.metadata["source"].endswith(name)]


def test_read_paths_cuts_only_long_files_larger(folder: Path) -> None:
    plain = read_paths([folder], max_chars=400)
    mixed = read_paths([folder], max_chars=400, long_chars=600)
    assert max(_lengths(mixed, "article.txt")) > 400
    assert all(n <= 600 for n in _lengths(mixed, "article.txt"))
    assert len(_lengths(mixed, "article.txt")) < len(_lengths(plain, "article.txt"))
    # The short file is cut exactly as without the rule.
    assert [c.text for c in mixed.chunks if c.metadata["source"].endswith("note.txt")] == [
        c.text for c in plain.chunks if c.metadata["source"].endswith("note.txt")
    ]


def _args(chunk_size: int | None = None, long_chunk_size: int | None = None) -> argparse.Namespace:
    return argparse.Namespace(chunk_size=chunk_size, long_chunk_size=long_chunk_size)


def test_chunk_sizes_follow_the_profile_and_the_flags() -> None:
    assert chunk_sizes(_args(), "recommended") == (400, 600)
    assert chunk_sizes(_args(), "documented") == (800, 0)
    # --chunk-size alone applies to every file, long ones too.
    assert chunk_sizes(_args(chunk_size=300), "recommended") == (300, 0)
    assert chunk_sizes(_args(long_chunk_size=700), "recommended") == (400, 700)
    assert chunk_sizes(_args(long_chunk_size=0), "recommended") == (400, 0)
    assert chunk_sizes(_args(chunk_size=500, long_chunk_size=900), "documented") == (500, 900)
    with pytest.raises(UsageError, match="--long-chunk-size 5 "):
        chunk_sizes(_args(long_chunk_size=5), "recommended")
    assert "600 in files of" in describe_chunk_sizes((400, 600))
    assert describe_chunk_sizes((400, 0)) == "chunks of at most 400 characters"


def _chunks_of(index: Path) -> int:
    manifest = json.loads((index / MANIFEST_NAME).read_text(encoding="utf-8"))
    chunks: int = manifest["chunks"]
    return chunks


def test_zerda_index_applies_the_long_size(folder: Path, tmp_path: Path) -> None:
    out = tmp_path / "idx"
    done = run_zerda(["index", str(folder), "--out", str(out), "--embedder", "none"])
    assert done.returncode == 0, done.stderr
    assert "600 in files of 8,000 characters or more" in done.stdout
    expected = read_paths([folder], max_chars=400, long_chars=600).chunks
    assert _chunks_of(out) == len(expected)
    flat = tmp_path / "flat"
    done = run_zerda(
        ["index", str(folder), "--out", str(flat), "--embedder", "none", "--long-chunk-size", "0"]
    )
    assert done.returncode == 0, done.stderr
    assert _chunks_of(flat) == len(read_paths([folder], max_chars=400).chunks) > _chunks_of(out)


def test_zerda_index_refuses_a_long_size_outside_the_filter_window(
    folder: Path, tmp_path: Path
) -> None:
    done = run_zerda(["index", str(folder), "--out", str(tmp_path / "x"), "--long-chunk-size", "5"])
    assert done.returncode == 2
    assert "--long-chunk-size 5 is outside the chunk filter's window" in done.stderr
