"""``zerda serve --workers 2`` answers as one service, and a killed ``zerda index --store``."""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import psutil
import psycopg
import pytest

from .replicas import ZERDA, _wait_up, index_files, write_corpus
from .servers import PostgresServer, RedisServer, free_port
from .test_store_profiles import _database

KEYWORDS = ("--embedder", "none")


@pytest.fixture(scope="module")
def workers(
    postgres: PostgresServer, redis_server: RedisServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, psutil.Process]]:
    url = _database(postgres, "workers")
    index_files(url, *write_corpus(tmp_path_factory.mktemp("workers-corpus")))
    port = free_port()
    argv = [str(ZERDA), "serve", "--store", url, "--state", redis_server.url]
    argv += ["--workers", "2", "--port", str(port)]
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_up(base, process)
        yield base, psutil.Process(process.pid)
    finally:
        process.terminate()
        try:
            process.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()


def _worker_cpu(parent: psutil.Process) -> dict[int, float]:
    found = {}
    for child in parent.children(recursive=True):
        if "python" in child.name() or "zerda" in " ".join(child.cmdline()):
            times = child.cpu_times()
            found[child.pid] = times.user + times.system
    return found


def test_two_workers_answer_one_port_and_share_a_session(
    workers: tuple[str, psutil.Process],
) -> None:
    base, parent = workers
    deadline = time.monotonic() + 30
    while len(_worker_cpu(parent)) < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    before = _worker_cpu(parent)
    expected = []
    for turn in range(30):
        # A new connection per request: the kernel hands each to either worker.
        with httpx.Client(base_url=base, timeout=30) as client:
            query = f"turn {turn}: what is retrieval?"
            response = client.post("/v1/context", json={"query": query, "session_id": "w"})
            assert response.status_code == 200, response.text
        with httpx.Client(base_url=base, timeout=30) as client:
            done = client.post("/v1/sessions/w/answer", json={"answer": f"answer {turn}"})
            assert done.status_code == 200
        expected.append({"query": query, "answer": f"answer {turn}"})
    after = _worker_cpu(parent)
    with httpx.Client(base_url=base, timeout=30) as client:
        session = client.get("/v1/sessions/w").json()
    assert len(before) >= 2
    busy = [pid for pid in before if after.get(pid, 0.0) - before[pid] > 0.05]
    assert len(busy) >= 2, (before, after)  # both workers served requests
    assert session["turns"] == expected


def _state(url: str) -> tuple[int, int, int]:
    """(version, live chunks the corpus row counts, chunk rows actually there)."""
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT version, n_live, (SELECT count(*) FROM zerda_chunks) FROM zerda_corpus"
        ).fetchone()
    assert row is not None
    return int(row[0]), int(row[1]), int(row[2])


def test_a_killed_zerda_index_leaves_the_old_or_the_new_corpus(
    postgres: PostgresServer, tmp_path: Path
) -> None:
    url = _database(postgres, "killed_index")
    # Keyword only: the big corpus below would take minutes to embed.
    index_files(url, *write_corpus(tmp_path), flags=KEYWORDS)
    old = _state(url)
    big = tmp_path / "big"
    big.mkdir()
    for i in range(40):
        text = "\n\n".join(
            f"Paragraph {j} of file {i} about rivers, coffee and retrieval." for j in range(400)
        )
        (big / f"f{i}.txt").write_text(text + "\n")
    argv = [str(ZERDA), "index", str(big), "--store", url, *KEYWORDS]
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        with psycopg.connect(url, autocommit=True) as conn:
            deadline = time.monotonic() + 60
            copying = False
            while not copying and process.poll() is None and time.monotonic() < deadline:
                row = conn.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'COPY %'"
                ).fetchone()
                copying = row is not None and row[0] > 0
                time.sleep(0.01)
        assert copying, "the COPY was not seen in progress"
        process.send_signal(signal.SIGKILL)
    finally:
        process.kill()
        process.wait(30)
    # The server notices the dropped connection and rolls the transaction back.
    with psycopg.connect(url, autocommit=True) as conn:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            row = conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'COPY %'"
            ).fetchone()
            if row is not None and row[0] == 0:
                break
            time.sleep(0.05)
    assert _state(url) == old and old[1] == old[2]
    index_files(url, big, flags=KEYWORDS)
    version, live, rows = _state(url)
    assert version == old[0] + 1 and live == rows > old[1]
