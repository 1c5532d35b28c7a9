"""``zerda``: index files, query a saved index, serve it over HTTP, or run the demo.

    zerda index PATH... (--out DIR | --store postgresql://...) [--profile P] [--embedder E]
                [--chunk-size N] [--dim N] [--all-files]
    zerda query DIR "question" [--template T] [--budget N] [--max-chunks N]
                [--filter KEY=VALUE]... [--where KEY=VALUE]... [--timeout S] [--json]
                [--profile P] [--embedder E]
    zerda serve (DIR | --store DIR|postgresql://...) [--state memory|redis://...|postgresql://...]
                [--workers N] [--host 127.0.0.1] [--port 8000] [--max-body-bytes N]
                [--request-timeout S] [--max-pending N] [--profile P] [--embedder E]
    zerda demo [--profile P]

Everything runs on the embedded defaults and the in-process index, with the
``recommended`` profile (:meth:`ContextEngineConfig.recommended`) unless
``--profile documented`` is given; the embedder follows the profile (see
:mod:`zerda_async.apps._profiles`).  A saved index records its profile and
embedder, and ``query``/``serve`` use them.  Bad arguments and failures print
one line, ``zerda: error: ...``, and exit with status 2 (usage) or 1
(failure); never a traceback.  With ``query --json`` standard output holds
only the result as one JSON document; timings and progress always go to
standard error then.
"""

from __future__ import annotations

import argparse
import io
import json
import logging
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn, TextIO

import anyio
import msgspec

from zerda_async.apps._ingest import SUFFIXES, read_paths
from zerda_async.apps._profiles import (
    DEFAULT_PROFILE,
    EMBEDDER_CHOICES,
    PROFILES,
    check_requested,
    choose_embedder,
    profile_config,
)
from zerda_async.apps._runs import STAGE_EVENTS, TimedResult, run_timed
from zerda_async.apps._saved_index import (
    MANIFEST_NAME,
    PYTHON_SAVED,
    IndexManifest,
    build_index,
    describe_embedder,
    open_index,
    read_manifest,
    save_index,
    saved_config,
)
from zerda_async.apps._wire import result_out
from zerda_async.core.config import ContextEngineConfig
from zerda_async.core.templates import TEMPLATE_NAMES
from zerda_async.engine._engine import AsyncContextEngine
from zerda_async.errors import UsageError, ZerdaError, report_for

__all__ = ["ProgressBar", "build_parser", "format_timings", "main"]

PROG = "zerda"
_UTF8 = ("utf-8", "utf8")
# The chunk filter's length window (documented defaults): a chunk outside it is
# dropped at query time, so a chunk size outside it is refused up front.
_FILTER = ContextEngineConfig().filter_cfg
_MIN_CHUNK = _FILTER.min_chunk_length
_MAX_CHUNK = _FILTER.max_chunk_length
# Default --chunk-size by profile: a few chunks fit the recommended profile's
# smallest budget (2,000 characters); 800 is what the documented CLI always used.
CHUNK_SIZES = {"recommended": 400, "documented": 800}


class _Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line on standard error (status 2)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{PROG}: error: {message}\n")


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
    return value


def _port(text: str) -> int:
    value = _positive_int(text)
    if value > 65535:
        raise argparse.ArgumentTypeError(f"expected a port number (1-65535), got {text!r}")
    return value


def _filter(text: str) -> tuple[str, Any]:
    key, sep, raw = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    try:
        value = json.loads(raw)
    except ValueError:
        value = raw
    if not isinstance(value, str | int | float | bool | None):
        value = raw
    return key, value


def _where(text: str) -> tuple[str, Any]:
    """``KEY=VALUE``: a JSON scalar (numbers compare as numbers), plain text, or a JSON
    object of operators (``year={"$gte": 2020}``)."""
    key, sep, raw = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    try:
        value = json.loads(raw)
    except ValueError:
        return key, raw
    if isinstance(value, str | int | float | bool | None | dict):
        return key, value
    return key, raw


def _where_filters(pairs: Sequence[tuple[str, Any]]) -> dict[str, Any] | None:
    """The restricting filters of the ``--where`` pairs: a key given twice matches either value."""
    filters: dict[str, Any] = {}
    for key, value in pairs:
        if key not in filters:
            filters[key] = value
            continue
        before = filters[key]
        if isinstance(value, dict) or (isinstance(before, dict) and "$in" not in before):
            raise UsageError(f"--where {key}: an operator object cannot be combined with others")
        values = before["$in"] if isinstance(before, dict) else [before]
        filters[key] = {"$in": [*values, value]}
    return filters or None


def build_parser() -> argparse.ArgumentParser:
    """The ``zerda`` argument parser."""
    parser = _Parser(
        prog=PROG,
        description="Build budget-bounded, cited LLM contexts from your documents (zerda-async).",
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {_version()}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    p = commands.add_parser(
        "index",
        help="read text files or folders, chunk, embed and save an index",
        description="Read files (or folders of them), split them into chunks, index them "
        "with the profile's analyser (and embedder) and save the index into DIR. A file named "
        "here is read whatever its extension; folders are searched for "
        f"{', '.join(sorted(SUFFIXES))} files. Unreadable and non-UTF-8 files are reported by "
        "name and skipped.",
    )
    p.add_argument("paths", nargs="+", metavar="PATH", help="files or folders to read")
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--out", metavar="DIR", help="directory to save the index in")
    where.add_argument(
        "--store",
        metavar="URL",
        help="postgresql://... index store to write into (adds the files' chunks, replacing "
        "the chunks of files indexed before)",
    )
    _add_profile_flags(p, building=True)
    p.add_argument(
        "--chunk-size",
        type=_positive_int,
        default=None,
        metavar="N",
        help=f"maximum characters per chunk, {_MIN_CHUNK}-{_MAX_CHUNK} (default 400 with the "
        "recommended profile, 800 with the documented one): the chunk filter drops chunks "
        "outside its length window",
    )
    p.add_argument(
        "--all-files",
        action="store_true",
        help="in folders, read every file (not only the text extensions); non-UTF-8 files "
        "are reported and skipped",
    )
    p.add_argument(
        "--dim",
        type=_positive_int,
        default=256,
        metavar="N",
        help="hashing embedder dimensions (default 256)",
    )

    p = commands.add_parser("query", help="build a context from a saved index")
    p.add_argument("index_dir", metavar="DIR", help="a directory written by 'zerda index'")
    p.add_argument("question", help="the query")
    p.add_argument(
        "--template",
        choices=sorted(TEMPLATE_NAMES),
        default=None,
        help="context template; auto picks Arabic or English by the query's language "
        "(default: the index's profile: auto for recommended, arabic for documented)",
    )
    p.add_argument("--budget", type=_positive_int, metavar="N", help="context budget in characters")
    p.add_argument("--max-chunks", type=_positive_int, metavar="N", help="chunks to keep at most")
    p.add_argument(
        "--filter",
        type=_filter,
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="metadata filter that boosts matching chunks (repeatable; VALUE is a JSON "
        "scalar or plain text)",
    )
    p.add_argument(
        "--where",
        type=_where,
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="restrict retrieval to chunks whose metadata KEY equals VALUE (repeatable: "
        "every key must match, a repeated key matches either value; numbers compare as "
        "numbers; VALUE may be an operator object such as '{\"$gte\": 2}')",
    )
    p.add_argument("--timeout", type=_positive_float, metavar="S", help="give up after S seconds")
    p.add_argument(
        "--json", action="store_true", help="print only the full result as JSON on stdout"
    )
    _add_profile_flags(p, building=False)

    p = commands.add_parser("serve", help="serve a saved index or an index store over HTTP")
    p.add_argument(
        "index_dir", nargs="?", metavar="DIR", help="a directory written by 'zerda index'"
    )
    p.add_argument(
        "--store",
        metavar="URL",
        help="the index: a saved index directory or a postgresql://... index store",
    )
    p.add_argument(
        "--state",
        default="memory",
        metavar="URL",
        help="sessions, cache and statistics: memory (default), redis://... or postgresql://...",
    )
    p.add_argument(
        "--workers", type=_positive_int, default=1, metavar="N", help="processes (default 1)"
    )
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    p.add_argument("--port", type=_port, default=8000, help="port (default 8000)")
    p.add_argument(
        "--max-body-bytes",
        type=_positive_int,
        default=1 << 20,
        metavar="N",
        help="larger request bodies get 413 (default 1 MiB)",
    )
    p.add_argument(
        "--request-timeout",
        type=_positive_float,
        default=30.0,
        metavar="S",
        help="requests taking longer get 504 (default 30)",
    )
    p.add_argument(
        "--max-pending",
        type=_positive_int,
        default=256,
        metavar="N",
        help="concurrent requests before 503 (default 256)",
    )
    p.add_argument(
        "--api-key-file",
        metavar="F",
        help="require 'Authorization: Bearer <key>' on every endpoint but /healthz; "
        "the key is the first line of F",
    )
    p.add_argument(
        "--cors-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="let pages from ORIGIN call the service (repeatable; none by default)",
    )
    _add_profile_flags(p, building=False)

    p = commands.add_parser(
        "demo", help="index the bundled bilingual corpus and run example queries"
    )
    p.add_argument(
        "--profile", choices=PROFILES, default=DEFAULT_PROFILE, help="default: recommended"
    )
    return parser


def _add_profile_flags(p: argparse.ArgumentParser, building: bool) -> None:
    """``--profile`` and ``--embedder``: chosen when building, checked against the index after."""
    if building:
        p.add_argument(
            "--profile",
            choices=PROFILES,
            default=DEFAULT_PROFILE,
            help="recommended (default: ContextEngineConfig.recommended()) or documented "
            "(the documented package's behaviour)",
        )
        p.add_argument(
            "--embedder",
            choices=EMBEDDER_CHOICES,
            default="auto",
            help="auto (default): keyword only with the recommended profile, the lexical "
            "hashing embedder with the documented one",
        )
        return
    p.add_argument(
        "--profile",
        choices=PROFILES,
        default=None,
        help="the profile the index was built with (default: as recorded; another is an error)",
    )
    p.add_argument(
        "--embedder",
        choices=EMBEDDER_CHOICES,
        default=None,
        help="the embedder the index was built with (default: as recorded; another is an error)",
    )


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("zerda-async")
    except PackageNotFoundError:
        return "(not installed)"


# -- output helpers ------------------------------------------------------------------


class ProgressBar:
    """``progress(done, total)`` callback drawing a bar on ``stream`` (lines when not a TTY).

    ``index()`` reports two phases, embedding then tokenising, each counting
    from 0 to the total; a count that goes back (or starts after a finished
    phase) starts the next label of ``phases``.
    """

    def __init__(
        self,
        stream: TextIO,
        phases: Sequence[str] = ("embedding", "tokenising"),
        width: int = 30,
    ) -> None:
        self.stream = stream
        self.phases = list(phases) or ["progress"]
        self.width = width
        self.tty = stream.isatty()
        self._phase = 0
        self._last = (0, -1)  # (done, total) of the previous call
        self._drawn = False

    @property
    def label(self) -> str:
        """The label of the current phase."""
        return self.phases[min(self._phase, len(self.phases) - 1)]

    def __call__(self, done: int, total: int) -> None:
        last_done, last_total = self._last
        if last_total >= 0 and (done < last_done or last_done >= last_total):
            self.close()
            self._phase += 1
        self._last = (done, total)
        if self.tty:
            filled = self.width * done // max(total, 1)
            bar = "#" * filled + "." * (self.width - filled)
            self.stream.write(f"\r{self.label} [{bar}] {done}/{total} chunks")
            self._drawn = True
        else:
            self.stream.write(f"{self.label}: {done}/{total} chunks\n")
        self.stream.flush()

    def close(self) -> None:
        """End a bar's line."""
        if self._drawn:
            self.stream.write("\n")
            self.stream.flush()
            self._drawn = False


def format_timings(timings_ms: dict[str, float], total_ms: float | None = None) -> str:
    """``analysis 0.3 ms | retrieved 1.2 ms | ... | total 4.0 ms`` in pipeline order."""
    parts = [f"{name} {timings_ms[name]:.2f} ms" for name in STAGE_EVENTS if name in timings_ms]
    parts += [f"{name} {ms:.2f} ms" for name, ms in timings_ms.items() if name not in STAGE_EVENTS]
    if total_ms is not None:
        parts.append(f"total {total_ms:.2f} ms")
    return " | ".join(parts) if parts else "(no stages ran)"


def _summary(timed: TimedResult) -> str:
    stats = timed.result.get_stats()
    return (
        f"intent={stats['query_intent']} budget={stats['context_budget']} "
        f"retrieved={stats['total_retrieved']} used={stats['total_included']} "
        f"chars={stats['context_length']} guard_passed={stats['guard_passed']}"
    )


def _err(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# -- commands -----------------------------------------------------------------------


def _cmd_index(args: argparse.Namespace) -> int:
    if args.store is not None:
        return _index_into_store(args)
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out} exists and is not a directory")
    if out.is_dir() and any(out.iterdir()) and not (out / MANIFEST_NAME).is_file():
        raise UsageError(f"--out {out} is a non-empty directory that holds no zerda index")
    chunk_size = args.chunk_size or CHUNK_SIZES[args.profile]
    report = _read_report(args, chunk_size)
    config = profile_config(args.profile)
    choice = choose_embedder(args.profile, args.embedder, args.dim)
    manifest = _index_manifest(args.profile, config, choice.name, choice.embedder)
    manifest.chunks, manifest.files = len(report.chunks), report.files
    progress = ProgressBar(sys.stderr)
    started = time.perf_counter()

    async def run() -> None:
        async with AsyncContextEngine(config) as engine:
            await build_index(engine, report.chunks, choice.embedder, progress)
            await save_index(engine, out, manifest)

    try:
        anyio.run(run)
    finally:
        progress.close()
    elapsed = time.perf_counter() - started
    print(
        f"indexed {len(report.chunks)} chunks from {len(report.files)} file(s) into {out} "
        f"in {elapsed:.2f} s ({len(report.skipped)} skipped)"
    )
    print(f"{describe_embedder(manifest)}; chunks of at most {chunk_size} characters")
    return 0


def _index_manifest(
    profile: str, config: ContextEngineConfig, name: str, embedder: Any
) -> IndexManifest:
    """The manifest recording how an index is built (chunks and files are set after reading)."""
    return IndexManifest(
        profile=profile,
        text_analyzer=config.retriever.text_analyzer,
        embedder=name,
        embedder_params={} if embedder is None else embedder.params(),
    )


def _check_profile(args: argparse.Namespace, index_dir: str) -> IndexManifest:
    """The index's manifest, once ``--profile``/``--embedder`` are checked against it."""
    manifest = read_manifest(index_dir)  # a clear error before anything starts
    if manifest.profile != PYTHON_SAVED:
        check_requested(index_dir, manifest.profile, manifest.embedder, args.profile, args.embedder)
    elif args.profile is not None or args.embedder not in (None, "auto"):
        raise UsageError(
            f"{index_dir} was saved from Python: it opens with its saved configuration "
            "and no embedder, so --profile and --embedder do not apply"
        )
    return manifest


def _read_report(args: argparse.Namespace, chunk_size: int) -> Any:
    """Read and chunk the paths, reporting what was skipped, ignored or too short."""
    _check_chunk_size(chunk_size)
    try:
        report = read_paths(
            args.paths, max_chars=chunk_size, all_files=args.all_files, min_chars=_MIN_CHUNK
        )
    except FileNotFoundError as exc:
        raise UsageError(str(exc)) from None
    for skipped in report.skipped:
        _err(f"{PROG}: skipped {skipped.path}: {skipped.reason}")
    if report.ignored:
        kinds = ", ".join(sorted(SUFFIXES))
        _err(
            f"{PROG}: ignored {report.ignored} file(s) in folders that are not {kinds} "
            "(name them, or pass --all-files)"
        )
    if report.short:
        _err(
            f"{PROG}: note: {report.short} chunk(s) shorter than {_MIN_CHUNK} characters are "
            "indexed but the chunk filter drops them from contexts"
        )
    if not report.chunks:
        raise RuntimeError("no text to index in the given paths")
    return report


def _index_into_store(args: argparse.Namespace) -> int:
    """``zerda index PATH... --store postgresql://...``: one transaction, seen by every replica.

    The store follows ``--profile`` / ``--embedder`` like ``--out`` does and
    records them (:class:`~zerda_async.apps.server._replica.StoreProfile`);
    writing into a store built with other ones is a one-line error.
    """
    from zerda_async.apps.server._replica import (
        PROFILE_SETTING,
        StoreProfile,
        is_postgres_url,
        read_profile,
    )
    from zerda_async.stores import PostgresIndexStore
    from zerda_async.stores._pg_common import redact

    if not is_postgres_url(args.store):
        raise UsageError(f"--store {args.store!r}: give a postgresql://... URL (or use --out)")
    report = _read_report(args, args.chunk_size or CHUNK_SIZES[args.profile])
    config = profile_config(args.profile)
    choice = choose_embedder(args.profile, args.embedder, args.dim)
    params = {} if choice.embedder is None else choice.embedder.params()
    mine = StoreProfile(args.profile, config.retriever.text_analyzer, choice.name, params)
    started = time.perf_counter()

    async def run() -> int:
        recorded = None
        store = await PostgresIndexStore.open(args.store, analyzer=mine.text_analyzer)
        try:
            recorded = await read_profile(store)
            if recorded is not None and recorded != mine:
                raise UsageError(
                    f"the index store {redact(args.store)} was built with the "
                    f"{recorded.describe()}; index into it with the same --profile, --embedder "
                    f"and --dim (got the {mine.describe()})"
                )
            await store.set_setting(PROFILE_SETTING, mine.record())
            # Files indexed again replace their chunks (doc ids come from the file names).
            gone = await _stale_doc_ids(store, report)
            vectors = None
            if choice.embedder is not None:
                texts = [c.text for c in report.chunks]
                batch = getattr(choice.embedder, "embed_batch", None)
                vectors = batch(texts) if batch else [choice.embedder(t) for t in texts]
            version: int = await store.replace(report.chunks, vectors, also_remove=gone)
            return version
        finally:
            await store.aclose()

    version = anyio.run(run)
    elapsed = time.perf_counter() - started
    print(
        f"indexed {len(report.chunks)} chunks from {len(report.files)} file(s) into the index "
        f"store (corpus version {version}) in {elapsed:.2f} s ({len(report.skipped)} skipped)"
    )
    print(mine.describe())
    return 0


async def _stale_doc_ids(store: Any, report: Any) -> list[str]:
    """Doc ids of chunks of the given files that the new chunking no longer produces."""
    fresh = {str(c.doc_id) for c in report.chunks}
    stems = {str(c.doc_id).rsplit("#", 1)[0] for c in report.chunks}
    return [d for d in await store.doc_ids() if d.rsplit("#", 1)[0] in stems and d not in fresh]


def _check_chunk_size(size: int) -> None:
    if not _MIN_CHUNK <= size <= _MAX_CHUNK:
        raise UsageError(
            f"--chunk-size {size} is outside the chunk filter's window ({_MIN_CHUNK}-{_MAX_CHUNK} "
            "characters): its chunks would be dropped from every context"
        )


def _cmd_query(args: argparse.Namespace) -> int:
    if not args.question.strip():
        raise UsageError("the query is empty")
    manifest = _check_profile(args, args.index_dir)
    # The index keeps the configuration it was saved with; options apply on top.
    config = saved_config(args.index_dir)
    config.retriever.use_metadata = True  # so --filter pairs are searched
    config.validate()  # a bad saved field is a one-line error naming it
    filters = dict(args.filter) or None
    where = _where_filters(args.where)
    template = args.template or config.composer.template
    started = time.perf_counter()
    load_ms = 0.0

    async def run() -> TimedResult:
        nonlocal load_ms
        async with open_index(args.index_dir, config) as engine:
            load_ms = (time.perf_counter() - started) * 1000
            return await run_timed(
                engine,
                args.question,
                metadata_filters=filters,
                max_chunks=args.max_chunks,
                budget=args.budget,
                filters=where,
                template=args.template,
                timeout=args.timeout,
            )

    timed = anyio.run(run)
    timings = f"timings: {format_timings(timed.timings_ms, timed.total_ms)} (load {load_ms:.1f} ms)"
    index_line = f"index: {describe_embedder(manifest)}"
    if args.json:
        out = result_out(
            timed.result,
            template=template,
            request_id=timed.request_id,
            timings_ms=timed.timings_ms,
        )
        sys.stdout.buffer.write(msgspec.json.encode(out) + b"\n")
        sys.stdout.flush()
        _err(timings)
        _err(index_line)
        return 0
    print(timed.result.context)
    print()
    print(f"-- {timings}")
    print(f"-- {index_line}")
    print(f"-- {_summary(timed)}")
    return 0


def _read_api_key(path: str) -> str:
    """The API key in ``path``: its first line, stripped; an unusable file is a usage error."""
    try:
        with open(path, encoding="utf-8") as f:
            key = f.readline().strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"--api-key-file {path}: {exc}") from None
    if len(key) < 16:
        # A short key is guessable; refusing it is kinder than serving "protected" data.
        raise UsageError(f"--api-key-file {path}: the key must be at least 16 characters")
    return key


def _cmd_serve(args: argparse.Namespace) -> int:
    try:
        from zerda_async.apps.server import ServiceSettings, serve_stores
        from zerda_async.apps.server._replica import check_state_url, is_postgres_url
    except ImportError as exc:
        raise RuntimeError(
            f"the HTTP service needs the 'server' extra (pip install 'zerda-async[server]'): {exc}"
        ) from None
    if (args.index_dir is None) == (args.store is None):
        raise UsageError("give the index once: 'zerda serve DIR' or 'zerda serve --store URL'")
    store: str = args.store or args.index_dir
    check_state_url(args.state)

    async def check_index() -> None:
        # Load once before uvicorn starts, so a bad index is a one-line error.
        async with open_index(store):
            pass

    api_key = _read_api_key(args.api_key_file) if args.api_key_file else None
    default_template = None
    if is_postgres_url(store):
        default_template = _check_store_profile(args, store)
    else:
        _check_profile(args, store)
        anyio.run(check_index)
        _err(f"{PROG}: index {store}: {describe_embedder(read_manifest(store))}")
        default_template = saved_config(store).composer.template
    settings = ServiceSettings(
        max_body_bytes=args.max_body_bytes,
        request_timeout=args.request_timeout,
        max_pending=args.max_pending,
        cors_origins=list(args.cors_origin),
        api_key=api_key,
    )
    if default_template is not None:
        settings.default_template = default_template
    serve_stores(
        store, args.state, host=args.host, port=args.port, workers=args.workers, settings=settings
    )
    return 0


def _check_store_profile(args: argparse.Namespace, url: str) -> str | None:
    """The recorded profile's template, once ``--profile``/``--embedder`` are checked against it.

    A store that does not answer now is not an error: the service starts and
    reports it on ``/readyz`` until it is back.
    """
    from zerda_async.apps.server._replica import read_profile
    from zerda_async.errors import StoreUnavailableError
    from zerda_async.stores import PostgresIndexStore
    from zerda_async.stores._pg_common import redact

    async def read() -> Any:
        store = await PostgresIndexStore.open(url, connect_timeout=2.0, operation_timeout=5.0)
        try:
            return await read_profile(store)
        finally:
            await store.aclose()

    try:
        recorded = anyio.run(read)
    except (StoreUnavailableError, OSError):
        return None
    if recorded is None:
        return None
    check_requested(redact(url), recorded.profile, recorded.embedder, args.profile, args.embedder)
    _err(f"{PROG}: index store {redact(url)}: {recorded.describe()}")
    template: str = recorded.config().composer.template
    return template


def _cmd_demo(args: argparse.Namespace) -> int:
    from zerda_async.apps._demo import main as demo

    demo(args.profile)
    return 0


_COMMANDS = {"index": _cmd_index, "query": _cmd_query, "serve": _cmd_serve, "demo": _cmd_demo}


def _leaf(exc: BaseException) -> BaseException:
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


def _message(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError):
        return "timed out"
    text = " ".join((str(exc) or type(exc).__name__).split())
    if isinstance(exc, ZerdaError) or type(exc).__module__ == "builtins":
        return text
    return f"{type(exc).__name__}: {text}"


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``zerda`` command line; returns the exit status."""
    for stream in (sys.stdout, sys.stderr):
        # Arabic text on a terminal that cannot show it must not crash the command.
        if isinstance(stream, io.TextIOWrapper) and stream.encoding.lower() not in _UTF8:
            stream.reconfigure(errors="backslashreplace")
    # The command line is an application: library warnings (the guard's, say)
    # go to standard error as "zerda: warning: ..." lines.
    logging.basicConfig(format=f"{PROG}: warning: %(message)s", level=logging.WARNING)
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.error("a command is required: index, query, serve or demo (see zerda --help)")
    try:
        return _COMMANDS[args.command](args)
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        leaf = _leaf(exc)
        if isinstance(leaf, KeyboardInterrupt):
            return 130
        _err(f"{PROG}: error: {_message(leaf)}")
        # The exit status comes from the one error table (2: the command line was wrong).
        return report_for(leaf).exit_status


if __name__ == "__main__":
    sys.exit(main())
