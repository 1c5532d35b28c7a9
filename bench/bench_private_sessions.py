"""Private-sessions soak: 10,000 interleaved requests over two replicas sharing their stores.

Method: Redis (or, with ``--state postgresql``, PostgreSQL) started by
``tests/stores/servers.py``; two ``AsyncContextEngine`` replicas in this
process share a session store and a cache store on it (as two ``zerda serve
--state redis://`` replicas do) and each index the demo
corpus (keyword search, adaptive budget off).  A seeded random script picks,
for each step, a replica, a conversation (one of ``--sessions`` sessions, or
none) and one of five questions, or records one of three answers on a
session's last turn; consecutive questions of distinct conversations run
concurrently (the property test's batches, ``tests/stores/test_private_sessions.py``).
Each result is compared with what a fresh engine (no cache) returns for that
query given the same history: a different context is a *leak*.  At the end
every session's turns are read back from both replicas: a request missing is
a *lost turn*, and a session whose turns differ from what was sent (queries and
answers, in order) a *wrong history*.  Exits 1 on any of them.

Run ``.venv/bin/python bench/bench_private_sessions.py`` (``--quick``: 1,000
requests).  Output: a table on stdout and ``bench/out/private_sessions.md``.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import anyio
from _common import command_line, describe_load, describe_machine, format_table, write_summary
from stores.servers import PostgresServer, RedisServer
from stores.test_private_sessions import (
    ANSWERS,
    QUESTIONS,
    Model,
    Reference,
    Step,
    ask,
    batches,
    replicas,
)


def _script(requests: int, sessions: int, seed: int) -> list[Step]:
    """About ``requests`` questions (and one answer per three questions), seeded."""
    rng = random.Random(seed)
    names: list[str | None] = [None, *(f"s{i}" for i in range(sessions))]
    steps: list[Step] = []
    asked = 0
    while asked < requests:
        kind = "answer" if rng.random() < 0.25 else "ask"
        name = rng.choice(names)
        steps.append((kind, rng.randrange(2), name, rng.randrange(len(QUESTIONS))))
        asked += kind == "ask"
    return steps


async def _soak(kind: str, url: str, steps: list[Step]) -> dict[str, Any]:
    reference = Reference()
    model = Model()
    counts: dict[str, Any] = {
        "requests": 0,
        "answers": 0,
        "leaks": 0,
        "lost turns": 0,
        "wrong histories": 0,
    }

    async def checked(engines: list[Any], replica: int, name: str | None, q: int) -> None:
        counts["requests"] += 1
        try:
            await ask(engines, model, reference, replica, name, q)
        except AssertionError:
            counts["leaks"] += 1
            model.turns(replica, name).append((QUESTIONS[q], ""))

    started = time.perf_counter()
    async with replicas(kind, url, f"bench{random.randrange(10**6)}_") as engines:
        for batch in batches(steps):
            if batch[0][0] == "answer":
                _, replica, name, a = batch[0]
                if name is not None:
                    turns = model.turns(replica, name)
                    sid = model.session_id(name)
                    if await engines[replica].record_answer(sid, ANSWERS[a % len(ANSWERS)]):
                        counts["answers"] += 1
                        turns[-1] = (turns[-1][0], ANSWERS[a % len(ANSWERS)])
                continue
            async with anyio.create_task_group() as tg:
                for _, replica, name, q in batch:
                    tg.start_soon(checked, engines, replica, name, q)
        seconds = time.perf_counter() - started
        for name, turns in model.sessions.items():
            for engine in engines:
                stored = [(t.query, t.answer) for t in await engine.turns(model.session_id(name))]
                expected = turns[-100:]  # the session store keeps the last 100
                counts["lost turns"] += max(0, len(expected) - len(stored))
                counts["wrong histories"] += stored != expected
    counts["cache hits"] = model.hits
    counts["seconds"] = round(seconds, 1)
    counts["requests/s"] = round(counts["requests"] / seconds, 1)
    return counts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=10_000)
    parser.add_argument("--sessions", type=int, default=12)
    parser.add_argument("--seed", type=int, default=20)
    parser.add_argument("--quick", action="store_true", help="1,000 requests")
    parser.add_argument("--state", choices=["redis", "postgresql"], default="redis")
    args = parser.parse_args()
    requests = 1_000 if args.quick else args.requests
    steps = _script(requests, args.sessions, args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        server = RedisServer(Path(tmp)) if args.state == "redis" else PostgresServer()
        try:
            server.start()
            found = anyio.run(_soak, args.state, server.url, steps, backend="asyncio")
        finally:
            server.stop()
    table = format_table(list(found), [list(found.values())])
    text = "\n".join(
        [
            "# Private sessions soak",
            "",
            f"Machine: {describe_machine()}",
            f"Load: {describe_load()}",
            f"Command: `{command_line()}`",
            f"Method: {requests} questions from {args.sessions} sessions and session-less "
            f"requests over two replicas sharing {args.state} session and cache stores, each "
            "compared with a fresh engine given the same history (see the module docstring).",
            "",
            table,
        ]
    )
    print(text)
    write_summary("private_sessions", text)
    return 1 if found["leaks"] or found["lost turns"] or found["wrong histories"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
