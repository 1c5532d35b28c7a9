"""Throughput half of ``bench_scaleout.py``: requests per second of 1 and 2 ``zerda serve``
replicas over each setup, with wrk (one per replica) or an httpx load generator.

The method is in ``bench_scaleout.py``'s docstring.
"""

from __future__ import annotations

import asyncio
import json
import re
import resource
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import httpx
from _common import BenchChunk
from _scaleout_latency import DIM, Figures
from stores.replicas import ZERDA, replicas


async def _load(
    urls: list[str], queries: list[str], concurrency: int, seconds: float
) -> tuple[int, int]:
    """Completed and failed requests in ``seconds`` with ``concurrency`` in flight."""
    done, failed, next_query = 0, 0, 0
    stop = time.monotonic() + seconds
    limits = httpx.Limits(max_connections=concurrency)

    async with httpx.AsyncClient(timeout=60, limits=limits) as client:

        async def worker(slot: int) -> None:
            nonlocal done, failed, next_query
            while time.monotonic() < stop:
                i, next_query = next_query, next_query + 1
                url = urls[i % len(urls)]
                body = {"query": f"{queries[i % len(queries)]} {i}"}  # never a cache hit
                response = await client.post(f"{url}/v1/context", json=body)
                if response.status_code == 200:
                    done += 1
                else:
                    failed += 1

        await asyncio.gather(*(worker(s) for s in range(concurrency)))
    return done, failed


_WRK_SCRIPT = """
local bodies = {%s}
local n = 0
function init(args) n = tonumber(args[1]) end
function request()
  n = n + 1
  local body = bodies[(n %% #bodies) + 1]:gsub("@N@", tostring(n))
  return wrk.format("POST", "/v1/context", {["Content-Type"] = "application/json"}, body)
end
"""


def _load_wrk(
    urls: list[str], queries: list[str], concurrency: int, seconds: float, script: Path
) -> tuple[int, int, float]:
    """:func:`_load` by wrk (one process and Lua state per replica, so every query is new).

    wrk is written in C: at a few hundred requests/s it takes a small share of
    a core, where the Python load generator takes a third of one of the two.
    Returns completed and failed requests and wrk's CPU share of one core.
    """
    bodies = ", ".join(
        "[==[" + json.dumps({"query": f"{q} @N@"}, ensure_ascii=False) + "]==]" for q in queries
    )
    script.write_text(_WRK_SCRIPT % bodies, encoding="utf-8")
    per_replica = max(1, concurrency // len(urls))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    argv = ["wrk", "-t1", f"-c{per_replica}", f"-d{seconds:g}s", "--timeout", "60s"]
    runs = [
        subprocess.Popen(
            [*argv, "-s", str(script), url, "--", str(i * 10_000_000)],
            stdout=subprocess.PIPE,
            text=True,
        )
        for i, url in enumerate(urls)
    ]
    done = failed = 0
    for run in runs:
        out, _ = run.communicate(timeout=seconds + 120)
        total = int(re.search(r"(\d+) requests in", out).group(1))  # type: ignore[union-attr]
        bad = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
        timeouts = re.search(r"timeout (\d+)", out)
        errors = (int(bad.group(1)) if bad else 0) + (int(timeouts.group(1)) if timeouts else 0)
        done, failed = done + total - errors, failed + errors
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) / seconds
    return done, failed, cpu


def saved_directory(chunks: list[BenchChunk], root: Path) -> str:
    """The corpus as a saved index directory (``zerda index --out``, documented profile, 64-dim)."""
    source = root / "corpus.jsonl"
    with source.open("w", encoding="utf-8") as out:
        for chunk in chunks:
            out.write(json.dumps({"text": chunk.text, "metadata": chunk.metadata}) + "\n")
    directory = root / "index"
    argv = [str(ZERDA), "index", str(source), "--out", str(directory)]
    subprocess.run([*argv, "--profile", "documented", "--dim", str(DIM)], check=True)
    return str(directory)


def throughput(
    fig: Figures,
    setups: dict[str, tuple[str, list[str]]],
    redis: str,
    queries: list[str],
    concurrency: int,
    seconds: float,
    rounds: int,
) -> None:
    """Requests/s of 1 and 2 replicas of each setup (``--store`` and extra ``serve`` options).

    ``rounds`` times over every setup, so a ratio is never from one moment of a
    shared machine: the report gives each round's and their median.
    """
    wrk = shutil.which("wrk") is not None
    script = Path(tempfile.mkdtemp(prefix="zerda-wrk-")) / "load.lua"
    each_setup = [(name, setup, n) for name, setup in setups.items() for n in (1, 2)]
    runs = each_setup * rounds
    for name, (store, extra), count in runs:
        with replicas(store, redis, count, timeout=60, ready="/readyz", extra=extra) as urls:
            asyncio.run(_load(urls, queries, concurrency, min(3.0, seconds)))  # warm-up
            if wrk:
                done, failed, client_cpu = _load_wrk(urls, queries, concurrency, seconds, script)
            else:
                cpu0 = time.process_time()
                done, failed = asyncio.run(_load(urls, queries, concurrency, seconds))
                client_cpu = (time.process_time() - cpu0) / seconds
        measured = (done / seconds, failed, client_cpu)
        fig.throughput.setdefault((name, count), []).append(measured)
    fig.load_generator = "wrk" if wrk else "httpx (this process; install wrk for a lighter one)"
    shutil.rmtree(script.parent, ignore_errors=True)
