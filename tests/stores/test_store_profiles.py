"""``zerda index/serve --store`` follow the profile like ``--out`` does, and refuse another one."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import psycopg
import pytest

from .replicas import ZERDA, replicas, write_corpus
from .servers import PostgresServer

pytestmark = pytest.mark.anyio

QUERIES = [
    "What is BM25?",
    "How is Arabic coffee served?",
    "كيف تحضر القهوة العربية؟",
    "How does hybrid retrieval fuse results?",
    "zebrafish heart",
]


def _zerda(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(ZERDA), *argv], capture_output=True, text=True, timeout=120, check=False
    )


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    return write_corpus(tmp_path_factory.mktemp("profile-corpus"))


def _database(postgres: PostgresServer, name: str) -> str:
    """A fresh database of its own (the CLI writes the default table prefix)."""
    with psycopg.connect(postgres.url, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name}")
        conn.execute(f"CREATE DATABASE {name}")
    return postgres.url.rsplit("/", 1)[0] + f"/{name}"


@pytest.fixture(scope="module", params=["recommended", "documented"])
def built(
    request: pytest.FixtureRequest,
    postgres: PostgresServer,
    corpus: list[Path],
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[str, str, str]]:
    """(profile, saved directory, store URL) of the same files indexed both ways."""
    profile: str = request.param
    out = tmp_path_factory.mktemp(f"index-{profile}")
    url = _database(postgres, f"profile_{profile}")
    files = [str(p) for p in corpus]
    for target in (["--out", str(out)], ["--store", url]):
        done = _zerda("index", *files, *target, "--profile", profile, "--dim", "64")
        assert done.returncode == 0, done.stderr
    yield profile, str(out), url


def _contexts(url: str) -> list[str]:
    with httpx.Client(base_url=url, timeout=30) as client:
        found = []
        for query in QUERIES:
            response = client.post("/v1/context", json={"query": query})
            assert response.status_code == 200, response.text
            found.append(response.json()["context"])
    return found


def test_the_store_serves_the_saved_directory_contexts(built: tuple[str, str, str]) -> None:
    _profile, directory, url = built
    with replicas(directory, "memory", count=1) as [saved], replicas(url, "memory", 1) as [store]:
        expected, got = _contexts(saved), _contexts(store)
    assert any(expected) and got == expected


def test_another_profile_is_a_one_line_error(built: tuple[str, str, str], tmp_path: Path) -> None:
    profile, _directory, url = built
    other = "documented" if profile == "recommended" else "recommended"
    served = _zerda("serve", "--store", url, "--profile", other, "--port", "1")
    extra = tmp_path / "more.txt"
    extra.write_text("Zebrafish regenerate heart muscle after injury within weeks.\n")
    indexed = _zerda("index", str(extra), "--store", url, "--profile", other, "--dim", "64")
    for done in (served, indexed):
        assert done.returncode != 0
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and profile in lines[0] and other in lines[0], done.stderr


def test_adding_without_profile_flags_keeps_the_stores_own(
    built: tuple[str, str, str], tmp_path: Path
) -> None:
    profile, _directory, url = built
    extra = tmp_path / "more.txt"
    extra.write_text(
        "Zebrafish regenerate heart muscle after injury within weeks.\n", encoding="utf-8"
    )
    done = _zerda("index", str(extra), "--store", url)  # no --profile, --embedder, --dim
    assert done.returncode == 0, done.stderr
    assert f"{profile} profile" in done.stdout
    # --dim sizes the hashing embedder (the documented profile's): another one is refused.
    again = _zerda("index", str(extra), "--store", url, "--dim", "32")
    if profile == "documented":
        assert again.returncode == 2 and "--dim 32 does not match" in again.stderr
    else:
        assert again.returncode == 0, again.stderr
