"""Soak: 20,000 requests through one async engine with random cancellations and timeouts.

Method
------
The driver is the one of the CI soak test (``tests/reliability/soak.py``; see
its docstring for the request mix): 48 client tasks push ``--requests``
requests (default 20,000) through one ``AsyncContextEngine`` (``max_in_flight``
32, ``thread_limit`` 2, cache of 128, ``max_sessions`` 200) over 335 chunks
with a coroutine batch embedder sleeping 0-2 ms per call.  Each request draws,
from a generator seeded with its number: one of 600 queries (1 % make the
embedder raise, 0.5 % make it hang), a session id from a pool of 1,000 (or
none, 30 %), the API (``run`` 70 %, ``stream`` 20 %, ``run_many`` 5 %,
``run_multi`` 5 %), and its fate: 8 % a random ``timeout`` (0.5-20 ms; every
hanging request has one), 8 % cancelled after 0-5 ms; streams are left early
(25 %) or read slowly (20 %).  Resident memory is sampled every 0.2 s from
``/proc/self/statm``; "first quarter" and "last quarter" are the largest
samples while the first 25 % / the last 25 % of the requests completed.

After the run, the engine must be back within its bounds (the same checks as
the CI test): no pending request, single-flight entry or taken slot, no task
beyond those running before the run, at most ``thread_limit`` more threads,
no live event stream, cache and sessions within their sizes, and resident
memory growing by less than 50 MB from the first to the last quarter.  The
script prints one row per backend and exits with status 1 if a bound broke.

``--unbounded-sessions`` repeats the run with ``max_sessions`` effectively off
and a session id per request, to show the growth the bound prevents.

Run ``.venv/bin/python bench/bench_soak.py`` (``--quick`` for 5,000 requests).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import anyio

# The driver lives with the tests (the CI soak runs its short form).
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from _common import (
    command_line,
    describe_load,
    describe_machine,
    describe_revision,
    format_table,
    write_summary,
)
from reliability.soak import MB, SoakReport, SoakSettings, problems, run_soak

HEADERS = [
    "backend",
    "requests",
    "ok",
    "cancelled",
    "timeouts",
    "injected errors",
    "streams (left early)",
    "s",
    "req/s",
    "RSS 1st quarter MB",
    "RSS last quarter MB",
    "growth MB",
    "tasks before/after",
    "threads before/after",
    "pending",
    "single-flight",
    "free slots",
    "cache / max",
    "sessions / max",
    "live streams",
]


def row(backend: str, r: SoakReport) -> list[object]:
    return [
        backend,
        r.requests,
        r.ok,
        r.cancelled,
        r.timeouts,
        r.injected_errors,
        f"{r.streams:,} ({r.streams_left_early:,})",
        r.elapsed_s,
        r.requests / r.elapsed_s,
        r.rss_first_quarter / MB,
        r.rss_last_quarter / MB,
        r.rss_growth / MB,
        f"{r.tasks_before}/{r.tasks_after}",
        f"{r.threads_before}/{r.threads_after}",
        r.pending,
        r.single_flight,
        f"{r.free_slots}/{r.max_in_flight}",
        f"{r.cache_size}/{r.cache_max}",
        f"{r.sessions:,}/{r.max_sessions:,}",
        r.live_streams,
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=20_000)
    parser.add_argument("--quick", action="store_true", help="5,000 requests")
    parser.add_argument(
        "--unbounded-sessions",
        action="store_true",
        help="also run with max_sessions off and a session id per request",
    )
    args = parser.parse_args()
    requests = 5_000 if args.quick else args.requests

    machine = describe_machine()
    load_start = describe_load()
    print(f"machine: {machine}\n{load_start} at start", flush=True)
    rows: list[list[object]] = []
    failures: list[str] = []
    for backend in ("asyncio", "trio"):
        report = anyio.run(run_soak, SoakSettings(requests=requests), backend=backend)
        rows.append(row(backend, report))
        failures += [f"{backend}: {p}" for p in problems(report)]
        print(f"{backend}: done in {report.elapsed_s:.1f} s", flush=True)
    sections = ["## Soak", "", format_table(HEADERS, rows), ""]

    if args.unbounded_sessions:
        unbounded = []
        for max_sessions in (10**9, 200):
            settings = SoakSettings(
                requests=requests, session_pool=10**9, max_sessions=max_sessions
            )
            report = anyio.run(run_soak, settings)
            unbounded.append(row(f"asyncio, max_sessions={max_sessions:,}", report))
        sections += [
            "## A new session id per request: without and with the session bound",
            "",
            format_table(HEADERS, unbounded),
            "",
        ]

    load_end = describe_load()
    header = [
        "# Soak benchmark",
        "",
        f"- machine: {machine}",
        f"- code: {describe_revision()}",
        f"- load: {load_start} at start, {load_end} at end",
        f"- command: `{command_line()}`",
        "- method: see the module docstring of bench/bench_soak.py",
        "",
    ]
    verdict = (
        ["## Bounds BROKEN", "", *(f"- {f}" for f in failures), ""]
        if failures
        else ["Every bound held on both backends.", ""]
    )
    text = "\n".join(header + sections + verdict)
    print()
    print(text)
    print(f"wrote {write_summary('soak', text)}")
    if failures:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
