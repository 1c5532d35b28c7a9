"""Where ``run_many``'s CPU goes at 1,000 chunks: the stages, the runner, the machine.

Method
------
One process, ``_common``'s seeded corpus (1,000 chunks), queries and 64-dim
feature-hashing embedder, cache on (as ``bench_single_ab.py`` part (b)).
Each round runs, back to back so that all of them meet the same state of the
machine (another process on the same cores changes the speed of every line
of Python by up to 2x within seconds):

* **sync hot**: the sync runner (``make_job`` + ``run_job``, what
  ``sync_api`` runs) over 256 new queries, no wait between them;
* **c=64**: a fresh ``AsyncContextEngine`` (default configuration,
  ``max_in_flight=64``), ``run_many`` of 256 new queries at concurrency 64,
  a coroutine batch embedder sleeping 20 ms a call;
* **c=1**: the same with ``concurrency=1`` (64 queries): the loop sleeps
  20 ms before each request's CPU work;
* **sync after sleep / spin**: the sync runner again, 64 queries, each after
  a 20 ms ``time.sleep`` or a 20 ms busy loop (only the run is timed).

Figures: process CPU per query (``time.process_time``, all threads); the
stages' own time per query (``job.timings`` / ``RunOptions(on_stage=...)``:
analysis, retrieval, source quality, filter, rank, compose; wall ms, so read
them with a core free); the rest of the CPU (walker, shared-state stages,
query embedding, and for the async engine its tasks, streams and loop); the
loop thread's and the other threads' CPU and the loop's wait for a core
(``/proc/self/task/*/schedstat``), context switches per query,
``run_many``'s q/s and the share of its wall time the loop thread ran; the
cores kept busy by other processes of this machine meanwhile (``/proc/stat``
minus this process); and the CPU time of a fixed piece of pure Python (the
machine's speed at the moment: a VM's host may run other tenants on the same
physical cores, which no figure inside the VM shows).  Linux only.

Run ``PYTHONPATH=$PWD .venv/bin/python bench/bench_cpu_split.py`` (``--rounds``,
default 5).  Outputs the table on stdout and ``bench/out/cpu_split.md``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import anyio
from _async_concurrency import SleepyAsyncBatchEmbedder
from _common import (
    HashedEmbedder,
    command_line,
    describe_load,
    describe_machine,
    describe_revision,
    format_table,
    make_corpus,
    make_queries,
    write_summary,
)

from sync_api import ContextEngineConfig
from zerda_async import AsyncContextEngine, RunOptions, StageTiming
from zerda_async.pipeline import Components, EngineState, make_job, run_job

CHUNKS = 1_000
MANY = 256
LONE = 64
EMBED_DELAY = 0.020
STAGES = ("analysis", "retrieval", "source_quality", "filter", "rank", "compose")


def _config() -> ContextEngineConfig:
    config = ContextEngineConfig()
    config.cache.enabled = True
    return config


def _threads() -> dict[int, tuple[int, int, int, int]]:
    """Per thread of this process: ns on a CPU, ns runnable but waiting for one,
    voluntary and involuntary context switches."""
    out: dict[int, tuple[int, int, int, int]] = {}
    for name in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{name}/schedstat", encoding="ascii") as f:
                ran, waited = (int(x) for x in f.read().split()[:2])
            with open(f"/proc/self/task/{name}/status", encoding="ascii") as f:
                status = f.read()
        except (FileNotFoundError, ProcessLookupError):
            continue  # a thread that ended meanwhile
        vol = int(status.split("\nvoluntary_ctxt_switches:")[1].split()[0])
        nonvol = int(status.split("nonvoluntary_ctxt_switches:")[1].split()[0])
        out[int(name)] = (ran, waited, vol, nonvol)
    return out


def _busy_jiffies() -> int:
    with open("/proc/stat", encoding="ascii") as f:
        fields = [int(x) for x in f.readline().split()[1:9]]
    return sum(fields) - fields[3] - fields[4]  # all but idle and iowait


class _Span:
    """What one timed part cost: CPU, threads, and the machine's other load."""

    def __init__(self) -> None:
        self.cpu_s = 0.0
        self.wall_s = 0.0
        self.loop_wait_ms = 0.0  # the loop's thread runnable, waiting for a core
        self.loop_ms = 0.0  # this (the loop's) thread, CPU ms in all
        self.others_ms = 0.0  # every other thread of the process
        self.switches = (0, 0)  # voluntary, involuntary, all threads
        self.other_cores = 0.0  # cores kept busy by other processes


@contextmanager
def _span() -> Iterator[_Span]:
    span = _Span()
    me = threading.get_native_id()
    before, busy0 = _threads(), _busy_jiffies()
    own0, wall0, cpu0 = os.times(), time.perf_counter(), time.process_time()
    yield span
    span.cpu_s = time.process_time() - cpu0
    wall = span.wall_s = time.perf_counter() - wall0
    own1, after, busy1 = os.times(), _threads(), _busy_jiffies()
    vol = nonvol = 0
    for tid, (ran, waited, v, n) in after.items():
        ran0, waited0, v0, n0 = before.get(tid, (0, 0, 0, 0))
        if tid == me:
            span.loop_ms = (ran - ran0) / 1e6
            span.loop_wait_ms = (waited - waited0) / 1e6
        else:
            span.others_ms += (ran - ran0) / 1e6
        vol, nonvol = vol + v - v0, nonvol + n - n0
    span.switches = (vol, nonvol)
    own = (own1.user + own1.system) - (own0.user + own0.system)
    tick = os.sysconf("SC_CLK_TCK")
    span.other_cores = max(0.0, ((busy1 - busy0) / tick - own) / wall)


def _stage_ms(timings: dict[str, float], n: int) -> float:
    return sum(timings.get(name, 0.0) for name in STAGES) / n


def _sync(state: EngineState, queries: Sequence[str]) -> tuple[_Span, float]:
    timings: dict[str, float] = {}
    with _span() as span:
        for query in queries:
            job = make_job(query)
            run_job(job, state)
            for name, ms in job.timings.items():
                timings[name] = timings.get(name, 0.0) + ms
    return span, _stage_ms(timings, len(queries))


def _reference() -> float:
    """CPU ms of a fixed piece of pure Python, warm (the machine's speed at the moment).

    The host's other tenants are invisible from inside a VM (``/proc/stat``
    counts this VM's processes only), but they slow every line of Python
    alike: this loop shows by how much, beside the request figures.
    """
    spent = []
    for _ in range(3):
        started = time.thread_time()
        words = [f"w{i % 977}-{i % 13}" for i in range(40_000)]
        counts: dict[str, int] = {}
        for word in words:
            counts[word] = counts.get(word, 0) + len(word.split("-"))
        sorted(counts.items(), key=lambda item: (-item[1], item[0]))
        spent.append((time.thread_time() - started) * 1000)
    return min(spent[1:])  # the first run allocates: not warm


def _sync_gapped(state: EngineState, queries: Sequence[str], spin: bool) -> float:
    """CPU ms per query of runs that each follow a 20 ms sleep (or busy loop)."""
    spent = 0.0
    for query in queries:
        if spin:
            until = time.perf_counter() + EMBED_DELAY
            while time.perf_counter() < until:
                pass
        else:
            time.sleep(EMBED_DELAY)
        started = time.thread_time()
        run_job(make_job(query), state)
        spent += time.thread_time() - started
    return spent * 1000 / len(queries)


async def _many(
    chunks: Sequence[Any], base: HashedEmbedder, queries: Sequence[str], c: int
) -> tuple[_Span, float]:
    reports: list[StageTiming] = []
    async with AsyncContextEngine(_config(), max_in_flight=max(64, c)) as engine:
        await engine.index(list(chunks), batch_embed_fn=SleepyAsyncBatchEmbedder(base, EMBED_DELAY))
        with _span() as span:
            await engine.run_many(
                list(queries), concurrency=c, options=RunOptions(on_stage=reports.append)
            )
    timings: dict[str, float] = {}
    for report in reports:
        timings[report.stage] = timings.get(report.stage, 0.0) + report.duration_ms
    return span, _stage_ms(timings, len(queries))


def _per_q(value: float, n: int) -> float:
    return value / n


async def _round(
    r: int, chunks: Sequence[Any], base: HashedEmbedder, state: EngineState
) -> dict[str, float]:
    reference = _reference()
    sync_span, sync_stages = _sync(state, make_queries(MANY, seed=9100 + r))
    many_span, many_stages = await _many(chunks, base, make_queries(MANY, seed=9200 + r), 64)
    lone_span, _ = await _many(chunks, base, make_queries(LONE, seed=9300 + r), 1)
    slept = _sync_gapped(state, make_queries(LONE, seed=9400 + r), spin=False)
    spun = _sync_gapped(state, make_queries(LONE, seed=9500 + r), spin=True)
    sync_cpu = sync_span.cpu_s * 1000 / MANY
    many_cpu = many_span.cpu_s * 1000 / MANY
    return {
        "others": (sync_span.other_cores + many_span.other_cores) / 2,
        "reference": reference,
        "sync_cpu": sync_cpu,
        "sync_stages": sync_stages,
        "sync_rest": sync_cpu - sync_stages,
        "many_qps": MANY / many_span.wall_s,
        "many_busy": many_span.loop_ms / 1000 / many_span.wall_s,
        "many_cpu": many_cpu,
        "many_stages": many_stages,
        "many_rest": many_cpu - many_stages,
        "cpu_ratio": many_cpu / sync_cpu,
        "stage_ratio": many_stages / sync_stages,
        "loop_ms": _per_q(many_span.loop_ms, MANY),
        "loop_wait": _per_q(many_span.loop_wait_ms, MANY),
        "threads_ms": _per_q(many_span.others_ms, MANY),
        "vol": _per_q(many_span.switches[0], MANY),
        "nonvol": _per_q(many_span.switches[1], MANY),
        "lone_cpu": lone_span.cpu_s * 1000 / LONE,
        "lone_vol": _per_q(lone_span.switches[0], LONE),
        "slept": slept,
        "spun": spun,
    }


COLUMNS = (
    ("others", "other processes, cores", 2),
    ("reference", "reference loop CPU ms", 1),
    ("sync_cpu", "sync hot CPU ms/q", 3),
    ("sync_stages", "sync stages ms/q", 3),
    ("sync_rest", "sync rest", 3),
    ("many_qps", "c=64 q/s", 0),
    ("many_busy", "c=64 loop thread busy, share of wall", 2),
    ("many_cpu", "c=64 CPU ms/q", 3),
    ("many_stages", "c=64 stages ms/q", 3),
    ("many_rest", "c=64 rest", 3),
    ("cpu_ratio", "c=64 / sync CPU", 2),
    ("stage_ratio", "c=64 / sync stages", 2),
    ("loop_ms", "c=64 loop thread ms/q", 3),
    ("loop_wait", "c=64 loop waiting for a core ms/q", 3),
    ("threads_ms", "c=64 other threads ms/q", 3),
    ("vol", "c=64 vol. switches/q", 2),
    ("nonvol", "c=64 invol. switches/q", 2),
    ("lone_cpu", "c=1 CPU ms/q", 3),
    ("lone_vol", "c=1 vol. switches/q", 2),
    ("slept", "sync after 20 ms sleep", 3),
    ("spun", "sync after 20 ms spin", 3),
)


def _table(rounds: list[dict[str, float]]) -> str:
    headers = ["figure", *(f"round {i + 1}" for i in range(len(rounds))), "median"]
    rows = []
    for key, label, digits in COLUMNS:
        values = [r[key] for r in rounds]
        rows.append(
            [label, *(f"{v:.{digits}f}" for v in values), f"{statistics.median(values):.{digits}f}"]
        )
    return format_table(headers, rows)


async def measure(n_rounds: int) -> list[dict[str, float]]:
    """The figures of each round (see the module docstring)."""
    chunks = make_corpus(CHUNKS)
    base = HashedEmbedder(64)
    base.matrix([c.text for c in chunks])
    state = EngineState(_config(), Components(), owner_name="ContextEngine")
    state.index(chunks, base.vector, None, None)
    for query in make_queries(20, seed=9000):
        run_job(make_job(query), state)
    rounds = []
    for r in range(n_rounds):
        rounds.append(await _round(r, chunks, base, state))
        print(f"round {r + 1}: {describe_load()}", flush=True)
    return rounds


def main() -> None:
    """Measure, print and write ``bench/out/cpu_split.md``."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    start_load = describe_load()
    rounds = anyio.run(measure, args.rounds)
    text = "\n".join(
        [
            "# run_many's CPU, split (bench_cpu_split.py)",
            "",
            f"Machine: {describe_machine()}",
            f"Code: {describe_revision()}; {start_load} at start, {describe_load()} at the end",
            f"Command: {command_line()}",
            "",
            _table(rounds),
            "",
        ]
    )
    print(text)
    write_summary("cpu_split", text)


if __name__ == "__main__":
    main()
