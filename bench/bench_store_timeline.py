"""The failure timeline of a ``zerda serve`` replica whose PostgreSQL is down or stopped.

Method: PostgreSQL (index: the demo corpus written by ``zerda index --store``)
and Redis started by ``tests/stores/servers.py``; one ``zerda serve --store
postgresql://… --request-timeout 10`` replica (store timeout 2.5 s).

* Down at start-up (``--state postgresql://`` on the same, killed, server):
  the latency of ``/readyz`` and of a question while it is down, then the
  time from PostgreSQL listening again to the first 200.
* Stopped while serving (``--state redis://``; PostgreSQL frozen by SIGSTOP):
  the latency and status of a first uncached question, a second one, a
  cached question, and of three concurrent uncached questions past the
  1 s cool-off; then the time from SIGCONT to the first 200.

Each figure is one measurement (the median of ``--repeat`` runs).  Run
``.venv/bin/python bench/bench_store_timeline.py``.  Output: a table on stdout
and ``bench/out/store_timeline.md``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import httpx
from _common import command_line, describe_load, describe_machine, format_table, write_summary
from stores.replicas import index_files, replicas, write_corpus
from stores.servers import PostgresServer, RedisServer

TIMEOUT = 10.0
BURST = ["Why do dates ripen in stages?", "What is overfitting?", "What is espresso?"]


def _timed(call: Any) -> tuple[int, float]:
    started = time.monotonic()
    status = call().status_code
    return status, time.monotonic() - started


def _ask(client: httpx.Client, query: str) -> httpx.Response:
    return client.post("/v1/context", json={"query": query})


def _until_served(client: httpx.Client, query: str) -> float:
    started = time.monotonic()
    while _ask(client, query).status_code != 200:
        if time.monotonic() - started > 60:
            raise RuntimeError("the replica did not recover within 60 s")
        time.sleep(0.02)
    return time.monotonic() - started


def _start_up(postgres: PostgresServer, found: dict[str, list[tuple[int, float]]]) -> None:
    postgres.kill()
    try:
        with (
            replicas(postgres.url, postgres.url, 1, TIMEOUT, "/openapi.json") as urls,
            httpx.Client(base_url=urls[0], timeout=60) as client,
        ):
            found["down at start-up: /readyz"].append(_timed(lambda: client.get("/readyz")))
            found["down at start-up: a question"].append(
                _timed(lambda: _ask(client, "How is coffee served?"))
            )
            postgres.start()
            recovered = _until_served(client, "How is coffee served?")
            found["PostgreSQL listening again → first 200"].append((200, recovered))
    finally:
        if postgres.process is None:
            postgres.start()


def _stopped(
    postgres: PostgresServer,
    redis: RedisServer,
    found: dict[str, list[tuple[int, float]]],
    run: int,
) -> None:
    nile = f"Where does the Nile flow? (run {run})"  # computed, then cached, once per run
    with (
        replicas(postgres.url, redis.url, 1, TIMEOUT, "/readyz") as urls,
        httpx.Client(base_url=urls[0], timeout=60) as client,
    ):
        _ask(client, "How is coffee served?")
        with postgres.stopped():
            found["stopped: first uncached question"].append(_timed(lambda: _ask(client, nile)))
            found["stopped: next uncached question"].append(
                _timed(lambda: _ask(client, "What is BM25?"))
            )
            found["stopped: cached question"].append(
                _timed(lambda: _ask(client, "How is coffee served?"))
            )
            time.sleep(1.2)
            with ThreadPoolExecutor(len(BURST)) as pool:
                burst = list(pool.map(lambda q: _timed(lambda: _ask(client, q)), BURST))
            found["stopped: 3 concurrent, past the cool-off (slowest)"].append(
                max(burst, key=lambda b: b[1])
            )
            found["stopped: 3 concurrent, past the cool-off (fastest)"].append(
                min(burst, key=lambda b: b[1])
            )
        found["SIGCONT → first 200"].append((200, _until_served(client, nile)))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    found: dict[str, list[tuple[int, float]]] = defaultdict(list)
    with tempfile.TemporaryDirectory() as tmp:
        postgres, redis = PostgresServer(), RedisServer(Path(tmp) / "redis")
        (Path(tmp) / "redis").mkdir()
        try:
            postgres.start()
            redis.start()
            index_files(postgres.url, *write_corpus(Path(tmp)))
            for run in range(args.repeat):
                _start_up(postgres, found)
                _stopped(postgres, redis, found, run)
        finally:
            redis.stop()
            postgres.stop()
    rows = []
    for phase, measured in found.items():
        statuses = sorted({status for status, _ in measured})
        seconds = statistics.median(s for _, s in measured)
        rows.append([phase, "/".join(map(str, statuses)), f"{seconds:.3f}"])
    text = "\n".join(
        [
            "# Store failure timeline",
            "",
            f"Machine: {describe_machine()}",
            f"Load: {describe_load()}",
            f"Command: `{command_line()}`",
            f"Method: one `zerda serve --request-timeout {TIMEOUT:g}` replica (store timeout "
            f"{TIMEOUT / 4:g} s), median of {args.repeat} runs (see the module docstring).",
            "",
            format_table(["phase", "status", "seconds"], rows),
        ]
    )
    print(text)
    write_summary("store_timeline", text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
