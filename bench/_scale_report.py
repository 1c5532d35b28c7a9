"""The tables, target verdicts and plot of ``bench_scale.py``."""

from __future__ import annotations

from typing import Any

from _common import command_line, format_table, pyplot, save_png, write_summary
from _scale_workers import MODES

ISSUE_PER_CHUNK_MS = {"keyword-only": 88.0, "hybrid 64-dim f64": 108.0}
TARGET_SPEEDUP = 10.0
TARGET_1M_HYBRID_F32_MS = 150.0
TARGET_RSS_GB = 8.0
PER_CHUNK_SIZE = 100_000


def engine_line(row: dict[str, Any]) -> str:
    """One progress line of an engine row."""
    return (
        f"{row['size']:>9,} {row['mode']:<20} index {row['index_s']:.1f} s, "
        f"run median {row['median_ms']:.2f} ms p90 {row['p90_ms']:.2f} ms, "
        f"load {row['load']['load_s']:.2f} s, peak {row['peak_rss_gb']:.2f} GB"
    )


def keyword_line(row: dict[str, Any]) -> str:
    """One progress line of a keyword row."""
    return (
        f"{row['size']:>9,} keyword: zerda {row['zerda_qps']:.0f} q/s, "
        f"bm25s {row['bm25s_qps']:.0f} q/s (overlap {row['bm25s_overlap']:.3f})"
    )


def report(
    machine: str,
    engine_rows: list[dict[str, Any]],
    keyword_rows: list[dict[str, Any]],
    per_chunk_size: int,
) -> None:
    lat_table = format_table(
        ["chunks", "mode", "run median ms", "run p90 ms", "per-chunk median ms", "speed-up"],
        [
            [
                r["size"],
                r["mode"],
                r["median_ms"],
                r["p90_ms"],
                r["per_chunk"]["median_ms"] if "per_chunk" in r else "-",
                f"{r['per_chunk']['median_ms'] / r['median_ms']:.0f}x" if "per_chunk" in r else "-",
            ]
            for r in engine_rows
        ],
    )
    life_table = format_table(
        [
            "chunks",
            "mode",
            "index s",
            "embed s",
            "save s",
            "disk GB",
            "load s",
            "1st query ms",
            "loaded median ms",
            "same contexts",
            "index RSS GB",
            "peak RSS GB",
            "load peak RSS GB",
        ],
        [
            [
                r["size"],
                r["mode"],
                r["index_s"],
                r["embed_s"],
                r["save_s"],
                r["disk_gb"],
                r["load"]["load_s"],
                r["load"]["first_query_ms"],
                r["load"]["median_ms"],
                "yes" if r["same_after_load"] else "NO",
                r["rss_index_gb"],
                r["peak_rss_gb"],
                r["load"]["peak_rss_gb"],
            ]
            for r in engine_rows
        ],
    )
    kw_table = format_table(
        [
            "docs",
            "zerda retrieve q/s",
            "zerda ids q/s",
            "bm25s q/s",
            "bm25s batched q/s",
            "rank-bm25 q/s",
            "overlap bm25s",
            "overlap rank-bm25",
            "index s zerda / bm25s / rank-bm25",
        ],
        [
            [
                k["size"],
                k["zerda_qps"],
                k["zerda_ids_qps"],
                k["bm25s_qps"],
                k["bm25s_batch_qps"],
                k.get("rank_bm25_qps", "-"),
                f"{k['bm25s_overlap']:.3f}",
                f"{k['rank_bm25_overlap']:.3f}" if "rank_bm25_overlap" in k else "-",
                f"{k['zerda_index_s']:.1f} / {k['tokenise_s'] + k['bm25s_index_s']:.1f} / "
                + (
                    f"{k['tokenise_s'] + k['rank_bm25_index_s']:.1f}"
                    if "rank_bm25_index_s" in k
                    else "-"
                ),
            ]
            for k in keyword_rows
        ],
    )
    verdicts = _verdicts(engine_rows, keyword_rows, per_chunk_size)
    print("\n" + lat_table + "\n\n" + life_table + "\n\n" + kw_table + "\n")
    for line in verdicts:
        print(line)
    plot(engine_rows, keyword_rows)
    write_summary(
        "scale",
        "\n".join(
            [
                "# Scale benchmark",
                "",
                f"- machine: {machine}",
                f"- command: `{command_line()}`",
                "- method: see the docstring of `bench/bench_scale.py` (one fresh process per"
                " measurement; cache off; distinct queries; median/p90 of one-at-a-time"
                " `await engine.run(q)` after 3 warm-ups).",
                "",
                "## run() latency",
                "",
                lat_table,
                "",
                "## Index lifecycle and memory",
                "",
                life_table,
                "",
                "## Keyword retrieval alone (same corpus, same tokens, same queries)",
                "",
                kw_table,
                "",
                "## Targets",
                "",
                *[f"- {line}" for line in verdicts],
                "",
                "Plot: `scale.png`",
                "",
            ]
        ),
    )


def _verdicts(
    engine_rows: list[dict[str, Any]], keyword_rows: list[dict[str, Any]], per_chunk_size: int
) -> list[str]:
    lines = []
    for r in engine_rows:
        if "per_chunk" in r and r["size"] == PER_CHUNK_SIZE:
            measured = r["per_chunk"]["median_ms"] / r["median_ms"]
            issue = ISSUE_PER_CHUNK_MS[r["mode"]] / r["median_ms"]
            ok = min(measured, issue) >= TARGET_SPEEDUP
            lines.append(
                f"{r['mode']} at {r['size']:,} chunks: {measured:.0f}x faster than the per-chunk"
                f" design measured in this run, {issue:.0f}x vs the issue's"
                f" {ISSUE_PER_CHUNK_MS[r['mode']]:.0f} ms -> target >= 10x"
                f" {'MET' if ok else 'MISSED'}"
            )
        if r["size"] >= 1_000_000 and r["mode"] == "hybrid 384-dim f32":
            ok = r["median_ms"] <= TARGET_1M_HYBRID_F32_MS
            lines.append(
                f"hybrid float32 at {r['size']:,} chunks: median {r['median_ms']:.1f} ms"
                f" (p90 {r['p90_ms']:.1f}) -> target <= 150 ms {'MET' if ok else 'MISSED'}"
            )
        if r["size"] >= 1_000_000:
            peak = max(r["peak_rss_gb"], r["load"]["peak_rss_gb"])
            lines.append(
                f"{r['mode']} at {r['size']:,} chunks: peak RSS {peak:.2f} GB (whole benchmark"
                f" process) -> target < 8 GB {'MET' if peak < TARGET_RSS_GB else 'MISSED'};"
                f" load {r['load']['load_s']:.1f} s"
            )
    for k in keyword_rows:
        if k["size"] == 100_000:
            ok = k["zerda_qps"] >= k["bm25s_qps"]
            lines.append(
                f"keyword retrieval at 100,000 docs: zerda {k['zerda_qps']:.0f} q/s (ids only"
                f" {k['zerda_ids_qps']:.0f}) vs bm25s {k['bm25s_qps']:.0f} q/s one query per call"
                f" ({k['bm25s_batch_qps']:.0f} batched) -> target >= bm25s"
                f" {'MET' if ok else 'MISSED'}"
            )
    return lines


def plot(engine_rows: list[dict[str, Any]], keyword_rows: list[dict[str, Any]]) -> None:
    plt = pyplot()
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.5))
    for mode in MODES:
        rows = [r for r in engine_rows if r["mode"] == mode]
        if len(rows) >= 1:
            ax1.plot(
                [r["size"] for r in rows], [r["median_ms"] for r in rows], marker="o", label=mode
            )
    per_chunk = [r for r in engine_rows if "per_chunk" in r]
    for r in per_chunk:
        ax1.scatter([r["size"]], [r["per_chunk"]["median_ms"]], marker="x", s=60)
        ax1.annotate(f"per-chunk {r['mode']}", (r["size"], r["per_chunk"]["median_ms"]), fontsize=7)
    ax1.axhline(TARGET_1M_HYBRID_F32_MS, color="grey", linestyle=":", linewidth=1)
    log_log = {"xscale": "log", "yscale": "log"}
    ax1.set(**log_log, xlabel="chunks", ylabel="run() median ms")
    ax1.set_title("AsyncContextEngine.run() latency")
    ax1.legend(fontsize=7)
    sizes = [k["size"] for k in keyword_rows]
    for key, label in (
        ("zerda_qps", "zerda retrieve"),
        ("zerda_ids_qps", "zerda ids"),
        ("bm25s_qps", "bm25s"),
        ("bm25s_batch_qps", "bm25s batched"),
        ("rank_bm25_qps", "rank-bm25"),
    ):
        pts = [(k["size"], k[key]) for k in keyword_rows if key in k]
        if pts:
            ax2.plot(*zip(*pts, strict=True), marker="o", label=label)
    ax2.set(**log_log, xlabel="documents", ylabel="queries / s", xticks=sizes)
    ax2.set_title("Keyword retrieval alone")
    ax2.legend(fontsize=7)
    path = save_png(fig, "scale")
    print(f"plot: {path}")
