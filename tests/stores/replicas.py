"""``zerda serve`` replicas as child processes on free loopback ports (for the replica tests)."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import httpx

from zerda_async.apps import load_demo_corpus

from .servers import PostgresServer, RedisServer, free_port

__all__ = ["ZERDA", "index_files", "replicas", "write_corpus"]

ZERDA = Path(sys.executable).parent / "zerda"


def write_corpus(root: Path) -> list[Path]:
    """The demo corpus as one text file per topic (what users index)."""
    by_topic: dict[str, list[str]] = {}
    for chunk in load_demo_corpus():
        by_topic.setdefault(str(chunk.metadata["topic"]), []).append(chunk.text)
    paths = []
    for topic, texts in sorted(by_topic.items()):
        path = root / f"{topic}.txt"
        path.write_text("\n\n".join(texts) + "\n", encoding="utf-8")
        paths.append(path)
    return paths


def index_files(store: str, *paths: Path, flags: Sequence[str] = ()) -> str:
    """Run ``zerda index PATH... --store URL [flags]``; its standard output."""
    done = subprocess.run(
        [str(ZERDA), "index", *map(str, paths), "--store", store, "--dim", "64", *flags],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@contextmanager
def replicas(
    store: str,
    state: str,
    count: int = 2,
    timeout: float = 5.0,
    ready: str = "/healthz",
    extra: Sequence[str] = (),
) -> Iterator[list[str]]:
    """``count`` ``zerda serve --store --state`` processes; their base URLs, stopped on exit.

    ``timeout`` is each replica's request timeout; the processes are up once
    ``ready`` answers 200 (``/readyz`` also waits for every store to answer).
    ``extra`` are more ``zerda serve`` options.
    """
    processes: list[subprocess.Popen[str]] = []
    urls = []
    try:
        for _ in range(count):
            port = free_port()
            argv = [str(ZERDA), "serve", "--store", store, "--state", state, "--port", str(port)]
            argv += ["--request-timeout", str(timeout), *extra]
            processes.append(
                subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            )
            urls.append(f"http://127.0.0.1:{port}")
        for url, process in zip(urls, processes, strict=True):
            _wait_up(url, process, ready)
        yield urls
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            try:
                process.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.communicate()


def _wait_up(url: str, process: subprocess.Popen[str], ready: str = "/healthz") -> None:
    deadline = time.monotonic() + 60
    with httpx.Client(base_url=url) as client:
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"zerda serve exited: {process.communicate()[1][-2000:]}")
            try:
                if client.get(ready).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("zerda serve did not start within 60 s")
            time.sleep(0.1)


@contextmanager
def indexed_servers(root: Path) -> Iterator[tuple[PostgresServer, RedisServer]]:
    """A PostgreSQL server holding the test corpus and an empty Redis, stopped on exit."""
    (root / "redis").mkdir()
    (root / "corpus").mkdir()
    postgres = PostgresServer()
    redis = RedisServer(root / "redis")
    try:
        postgres.start()
        redis.start()
        index_files(postgres.url, *write_corpus(root / "corpus"))
        yield postgres, redis
    finally:
        redis.stop()
        postgres.stop()
