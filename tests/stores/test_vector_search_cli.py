"""``zerda index --store URL --hnsw`` builds an HNSW index; ``zerda serve --search``."""

from __future__ import annotations

import subprocess
from pathlib import Path

import httpx
import psycopg

from .replicas import ZERDA, replicas, write_corpus
from .servers import PostgresServer

QUERIES = ["What is BM25?", "How is Arabic coffee served?", "كيف تحضر القهوة العربية؟"]
DOCUMENTED = ["--profile", "documented", "--dim", "64"]


def _zerda(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(ZERDA), *argv], capture_output=True, text=True, timeout=120, check=False
    )


def _database(postgres: PostgresServer, name: str) -> str:
    with psycopg.connect(postgres.url, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name}")
        conn.execute(f"CREATE DATABASE {name}")
    return postgres.url.rsplit("/", 1)[0] + f"/{name}"


def _contexts(url: str) -> list[str]:
    with httpx.Client(base_url=url, timeout=30) as client:
        responses = [client.post("/v1/context", json={"query": q}) for q in QUERIES]
    assert all(r.status_code == 200 for r in responses), [r.text for r in responses]
    return [r.json()["context"] for r in responses]


def _one_line_error(done: subprocess.CompletedProcess[str], *words: str) -> None:
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and all(w in lines[0] for w in words), done.stderr


def test_index_builds_the_hnsw_index_and_serve_searches_it(
    postgres: PostgresServer, tmp_path: Path
) -> None:
    files = [str(p) for p in write_corpus(tmp_path)]
    url = _database(postgres, "hnsw_cli")
    exact = _zerda("index", *files, "--store", url, *DOCUMENTED)
    assert exact.returncode == 0, exact.stderr
    missing = _zerda("serve", "--store", url, "--search", "hnsw", "--port", "1")
    _one_line_error(missing, "no HNSW index", "--hnsw")
    built = _zerda(
        "index", *files, "--store", url, *DOCUMENTED, "--hnsw", "--hnsw-m", "8",
        "--hnsw-ef-construction", "40",
    )  # fmt: skip
    assert built.returncode == 0, built.stderr
    assert "built the HNSW index (m 8, ef_construction 40)" in built.stdout
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT reloptions FROM pg_class WHERE relname = 'zerda_vectors_hnsw'"
        ).fetchone()
    assert row is not None and row[0] == ["m=8", "ef_construction=40"]
    # A corpus this small is searched completely with a candidate list this long,
    # so the HNSW contexts are the exact ones.
    hnsw = ["--search", "hnsw", "--ef-search", "1000"]
    with replicas(url, "memory", 1) as [plain], replicas(url, "memory", 1, extra=hnsw) as [fast]:
        expected = _contexts(plain)
        assert _contexts(fast) == expected
    # Every search over the replica's own copy of the index: the same contexts
    # (asked for by the flag's earlier name, which still works).
    with replicas(url, "memory", 1, extra=["--vector-search", "local"]) as [local]:
        assert _contexts(local) == expected


def test_hnsw_options_in_the_wrong_place_are_one_line_errors(tmp_path: Path) -> None:
    files = [str(p) for p in write_corpus(tmp_path)]
    out = tmp_path / "index"
    _one_line_error(_zerda("index", *files, "--out", str(out), "--hnsw"), "--hnsw", "--store")
    # Refused before connecting when the flags ask for no vectors (without flags, the
    # store's recorded embedder decides: see test_store_profiles).
    no_vectors = ["--store", "postgresql://x@/y", "--hnsw", "--embedder", "none"]
    keyword_only = _zerda("index", *files, *no_vectors)
    _one_line_error(keyword_only, "--hnsw needs vectors", "keyword only")
    done = _zerda("index", *files, "--out", str(out), *DOCUMENTED)
    assert done.returncode == 0, done.stderr
    for mode in ("hnsw", "local"):
        served = _zerda("serve", str(out), "--search", mode, "--port", "1")
        _one_line_error(served, f"--search {mode}", "postgresql://")
    too_long = _zerda("serve", str(out), "--ef-search", "1001", "--port", "1")
    assert too_long.returncode == 2 and "1-1000" in too_long.stderr
