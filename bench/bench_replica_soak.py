"""Conversation soak across replicas: 1,000 turns, random replica choice, random answers.

Method: PostgreSQL (index, the demo corpus written by ``zerda index --store``)
and Redis (sessions, cache, statistics) started by ``tests/stores/servers.py``;
two ``zerda serve`` processes over them.  Each turn picks a session of
``--sessions`` and a replica at random (seeded), posts the turn, and with
probability 1/2 records an answer through a random replica.  At the end
every session is read back from a random replica and compared turn by turn
with what was sent (its last 100 turns: the session store's bound, which 20
sessions of ~50 turns stay under): a turn missing is *lost*, a turn with another query or
answer, or in another session, is *misattributed*.  Exits 1 if any is.

Run ``.venv/bin/python bench/bench_replica_soak.py`` (``--quick``: 200 turns).
Output: a table on stdout and ``bench/out/replica_soak.md``.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import httpx
from _common import command_line, describe_load, describe_machine, format_table, write_summary
from stores.replicas import index_files, replicas, write_corpus
from stores.servers import PostgresServer, RedisServer

MAX_TURNS = 100
"""``RedisSessionStore``'s default ``max_turns`` (what ``zerda serve --state redis://`` keeps)."""


async def _soak(urls: list[str], turns: int, sessions: int, seed: int) -> dict[str, int]:
    rng = random.Random(seed)
    expected: dict[str, list[dict[str, str]]] = {f"soak-{i}": [] for i in range(sessions)}
    answers = 0
    async with httpx.AsyncClient(timeout=60) as client:
        for turn in range(turns):
            session = rng.choice(sorted(expected))
            query = f"turn {turn} of {session}: what is retrieval?"
            body = {"query": query, "session_id": session}
            response = await client.post(f"{rng.choice(urls)}/v1/context", json=body)
            response.raise_for_status()
            expected[session].append({"query": query, "answer": ""})
            if rng.random() < 0.5:
                answer = f"answer {turn}"
                url = f"{rng.choice(urls)}/v1/sessions/{session}/answer"
                (await client.post(url, json={"answer": answer})).raise_for_status()
                expected[session][-1]["answer"] = answer
                answers += 1
        lost = misattributed = 0
        for session, every in expected.items():
            # A session keeps its last MAX_TURNS turns by design (older ones are trimmed).
            sent = every[-MAX_TURNS:]
            got = (await client.get(f"{rng.choice(urls)}/v1/sessions/{session}")).json()["turns"]
            lost += max(0, len(sent) - len(got))
            misattributed += sum(a != b for a, b in zip(sent, got, strict=False))
            misattributed += max(0, len(got) - len(sent))
    return {"turns": turns, "answers": answers, "lost": lost, "misattributed": misattributed}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="200 turns")
    parser.add_argument("--turns", type=int, default=None)
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args()
    turns = args.turns or (200 if args.quick else 1000)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    root = Path(tempfile.mkdtemp(prefix="zerda-soak-"))
    pg, redis = PostgresServer(), RedisServer(root)
    try:
        pg.start()
        redis.start()
        (root / "corpus").mkdir()
        index_files(pg.url, *write_corpus(root / "corpus"))
        with replicas(pg.url, redis.url, count=2, timeout=30.0) as urls:
            started = time.perf_counter()
            found = asyncio.run(_soak(urls, turns, args.sessions, args.seed))
            elapsed = time.perf_counter() - started
    finally:
        redis.stop()
        pg.stop()
        shutil.rmtree(root, ignore_errors=True)
    text = "\n".join(
        [
            "# Conversation soak across two replicas",
            "",
            f"Machine: {describe_machine()}; {describe_load()}",
            f"Command: {command_line()}",
            "Method: see the docstring of bench/bench_replica_soak.py.",
            "",
            format_table(
                ["turns", "sessions", "answers", "lost", "misattributed", "s"],
                [
                    [
                        turns,
                        args.sessions,
                        found["answers"],
                        found["lost"],
                        found["misattributed"],
                        elapsed,
                    ]
                ],
            ),
            "",
        ]
    )
    print(text)
    print(f"written to {write_summary('replica_soak', text)}")
    return 1 if found["lost"] or found["misattributed"] else 0


if __name__ == "__main__":
    sys.exit(main())
