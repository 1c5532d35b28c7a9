"""The fixed cost of one request: where a sync ``run()`` spends its time, stage by stage.

Method
------
* Corpus and queries: ``_common.make_corpus`` / ``make_queries`` (seeded);
  1,000 chunks by default (``--chunks``), vectors from the 64-dim
  feature-hashing embedder of ``_common`` given as a plain ``embed_fn`` (its
  token memo warmed first, so its own cost is ~0.1 ms a query).
* The engine is the sync runner the facade uses (``EngineState`` +
  ``make_job`` + ``run_job`` from ``zerda_async.pipeline``: what
  ``sync_api.ContextEngine.run`` does), the documented configuration
  (``--config recommended``: ``ContextEngineConfig.recommended()``) with the
  cache off and defaults otherwise (multi-turn on: every run records a turn),
  a new query on every call.  Each stage's time is the walker's own
  timing (``job.timings``); "walker and job" is the whole call minus the sum
  of the stages (making the job, walking, building the result).
* Two conditions:

  - **warm**: calls back to back (``--queries``, after 20 warm-ups); median
    per stage, and the median and p90 of the whole call;
  - **after a 20 ms wait**: the embedder sleeps 20 ms per query, as the sync
    comparison of ``bench_async.py`` (b) does; the table reports the call's
    wall time minus the embedder's own, the "fixed cost" that comparison
    implies.  Beside it: what ``time.sleep(0.020)`` alone overshoots here.

* **Before/after in the same run**: ``--baseline REV`` (default ``main``)
  extracts that revision's ``zerda_async`` and ``sync_api`` with ``git
  archive`` into a temporary directory and runs this same script on it in a
  child process, alternating with a child on this tree (``--pairs`` times, which one
  goes first alternating too; medians of the children's medians).
* Output digest: SHA-256 over every warm call's context, citations and used
  chunks (doc id, every method's score, the composite score and the
  retrieval rank), so the two columns show whether an optimisation changed
  a byte of output.
* A cProfile of the warm calls (top entries by own time) follows the table.

Run ``.venv/bin/python bench/bench_stage_cost.py`` (``--quick`` for fewer
queries; ``--no-baseline`` for this tree only; ``--config recommended`` for
the recommended profile).  Target (issue 18, item 8):
sync ``run()`` at 1,000 chunks <= 1.2 ms.  Outputs the tables on stdout and
``bench/out/stage_cost.md`` (``stage_cost_recommended.md`` with
``--config recommended``).
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import hashlib
import io
import json
import os
import pstats
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
# A child measuring another revision gets that tree first on the path.
sys.path.insert(
    0, os.environ.get("ZERDA_BENCH_TREE") or str(Path(__file__).resolve().parent.parent)
)

import numpy as np
from _common import (
    HashedEmbedder,
    command_line,
    describe_load,
    describe_machine,
    describe_revision,
    format_table,
    make_corpus,
    make_queries,
    percentile,
    write_summary,
)
from _revisions import extract_revision
from numpy.typing import NDArray

from sync_api import ContextEngineConfig
from zerda_async.pipeline import Components, EngineState, make_job, run_job

_HERE = Path(__file__).resolve().parent
WAIT = 0.020
PROFILED = 200
TARGET_MS = 1.2
WALKER = "walker and job"
TOTAL = "whole run()"
TOTAL_P90 = "whole run(), p90"
CONFIGS = ("documented", "recommended")


class WaitingEmbedder:
    """The hashing embedder; sleeps ``delay`` per call once set, timing its own calls."""

    def __init__(self, base: HashedEmbedder) -> None:
        self.base = base
        self.delay = 0.0
        self.spent: list[float] = []

    def __call__(self, text: Any) -> NDArray[np.float64]:
        started = time.perf_counter()
        if self.delay:
            time.sleep(self.delay)
        vector = self.base.vector(text)
        self.spent.append((time.perf_counter() - started) * 1000)
        return vector


def _engine(n_chunks: int, config_name: str) -> tuple[EngineState, WaitingEmbedder]:
    corpus = make_corpus(n_chunks)
    base = HashedEmbedder(64)
    base.matrix([c.text for c in corpus])
    embedder = WaitingEmbedder(base)
    config = (
        ContextEngineConfig.recommended() if config_name == "recommended" else ContextEngineConfig()
    )
    config.cache.enabled = False
    state = EngineState(config, Components(), owner_name="ContextEngine")
    state.index(corpus, embedder, None, None)
    return state, embedder


def _timed_runs(state: EngineState, queries: list[str]) -> tuple[dict[str, list[float]], str]:
    """Per stage (and whole call) the milliseconds of each run; a digest of the outputs.

    The digest covers every context, the citations and each used chunk's
    scores, so two revisions show whether they produce the same bytes.
    """
    per: dict[str, list[float]] = {}
    digest = hashlib.sha256()
    for query in queries:
        job = make_job(query)
        started = time.perf_counter()
        result = run_job(job, state)
        total = (time.perf_counter() - started) * 1000
        digest.update(result.context.encode())
        digest.update(repr(result.citations).encode())
        for sc in result.chunks_used:
            scores = (
                sc.vector_score,
                sc.keyword_score,
                sc.metadata_score,
                sc.composite_score,
                sc.retrieval_rank,
            )
            digest.update(f"{sc.doc_id}|{scores!r}".encode())
        for name, ms in job.timings.items():
            per.setdefault(name, []).append(ms)
        per.setdefault(TOTAL, []).append(total)
        per.setdefault(WALKER, []).append(total - sum(job.timings.values()))
    return per, digest.hexdigest()[:16]


def measure(n_chunks: int, n_queries: int, config: str = "documented") -> dict[str, Any]:
    """Medians per stage (warm), the fixed cost after a 20 ms wait, and a profile."""
    state, embedder = _engine(n_chunks, config)
    queries = make_queries(20 + 2 * n_queries + PROFILED, seed=11)
    for query in queries[:20]:
        run_job(make_job(query), state)
    gc.collect()
    warm, digest = _timed_runs(state, queries[20 : 20 + n_queries])
    waited_q = queries[20 + n_queries : 20 + 2 * n_queries][: max(40, n_queries // 5)]
    embedder.delay = WAIT
    embedder.spent.clear()
    waited, _ = _timed_runs(state, waited_q)
    fixed = [t - e for t, e in zip(waited[TOTAL], embedder.spent, strict=True)]
    overshoot = []
    for _ in range(len(waited_q)):
        started = time.perf_counter()
        time.sleep(WAIT)
        overshoot.append((time.perf_counter() - started - WAIT) * 1000)
    embedder.delay = 0.0
    profile = cProfile.Profile()
    profile.enable()
    for query in queries[-PROFILED:]:
        run_job(make_job(query), state)
    profile.disable()
    out = io.StringIO()
    pstats.Stats(profile, stream=out).sort_stats("tottime").print_stats(15)
    return {
        "warm": {k: statistics.median(v) for k, v in warm.items()},
        "p90": percentile(warm[TOTAL], 90),
        "fixed_after_wait": statistics.median(fixed),
        "sleep_overshoot": statistics.median(overshoot),
        "profile": out.getvalue(),
        "digest": digest,
    }


def _child(tree: Path, n_chunks: int, n_queries: int, config: str) -> dict[str, Any]:
    env = {**os.environ, "ZERDA_BENCH_TREE": str(tree), "PYTHONPATH": str(tree)}
    done = subprocess.run(
        [
            sys.executable,
            __file__,
            "--child",
            *("--chunks", str(n_chunks)),
            *("--queries", str(n_queries)),
            *("--config", config),
        ],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _combine(runs: list[dict[str, Any]]) -> dict[str, Any]:
    stages = runs[0]["warm"].keys()
    return {
        "warm": {k: statistics.median(r["warm"][k] for r in runs) for k in stages},
        "p90": statistics.median(r["p90"] for r in runs),
        "fixed_after_wait": statistics.median(r["fixed_after_wait"] for r in runs),
        "sleep_overshoot": statistics.median(r["sleep_overshoot"] for r in runs),
        "profile": runs[-1]["profile"],
        "digest": ",".join(sorted({r["digest"] for r in runs})),
    }


def main() -> None:
    """Parse the options, measure (in children when comparing), print and save."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=1_000)
    parser.add_argument("--queries", type=int, default=None, help="timed warm queries")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--config", choices=CONFIGS, default="documented", help="profile")
    parser.add_argument("--baseline", default="main", help="git revision to compare with")
    parser.add_argument("--no-baseline", action="store_true")
    parser.add_argument("--pairs", type=int, default=3, help="baseline/tree child pairs")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    n_queries = args.queries or (100 if args.quick else 400)
    if args.child:
        print(json.dumps(measure(args.chunks, n_queries, args.config)))
        return
    header = [
        f"Machine: {describe_machine()}",
        f"Code: {describe_revision()}; {describe_load()} at start",
        f"Method: sync runner (sync_api's), {args.config} configuration, "
        f"{args.chunks:,} chunks, 64-dim plain embed_fn, "
        f"cache off, {n_queries} warm queries (medians), fixed cost after a 20 ms embedder "
        "wait = wall minus the embedder's own time",
    ]
    print("\n".join(header), flush=True)
    columns: dict[str, dict[str, Any]] = {}
    if args.no_baseline:
        columns["this tree"] = measure(args.chunks, n_queries, args.config)
    else:
        base_runs: list[dict[str, Any]] = []
        tree_runs: list[dict[str, Any]] = []
        with extract_revision(args.baseline) as base_dir:
            for pair in range(args.pairs):
                # Alternate which goes first, so neither always runs second.
                order = [(base_runs, Path(base_dir)), (tree_runs, _HERE.parent)]
                for runs, tree in order if pair % 2 == 0 else order[::-1]:
                    runs.append(_child(tree, args.chunks, n_queries, args.config))
                print(f"  pair {pair + 1}/{args.pairs} measured", flush=True)
        columns[f"before ({args.baseline})"] = _combine(base_runs)
        columns["after (this tree)"] = _combine(tree_runs)
    names = list(next(iter(columns.values()))["warm"])
    rows = [[name, *(c["warm"].get(name, 0.0) for c in columns.values())] for name in names]
    rows.append([TOTAL_P90, *(c["p90"] for c in columns.values())])
    rows.append(
        ["fixed cost after a 20 ms wait", *(c["fixed_after_wait"] for c in columns.values())]
    )
    rows.append(["time.sleep(0.020) overshoot", *(c["sleep_overshoot"] for c in columns.values())])
    rows.append(["output digest (warm runs)", *(c["digest"] for c in columns.values())])
    table = format_table(["stage (median ms)", *columns], rows)
    last = list(columns.values())[-1]
    total = last["warm"][TOTAL]
    verdict = (
        f"Sync run() at {args.chunks:,} chunks ({args.config}): {total:.3f} ms "
        f"-> target <= {TARGET_MS} ms "
        f"{'MET' if total <= TARGET_MS else 'MISSED'} ({describe_load()} at end)"
    )
    print(table)
    print(verdict)
    print(last["profile"])
    write_summary(
        "stage_cost" if args.config == "documented" else f"stage_cost_{args.config}",
        "\n\n".join(["\n".join(header), f"`{command_line()}`", table, verdict]),
    )


if __name__ == "__main__":
    main()
