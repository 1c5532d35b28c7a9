"""The ``zerda`` command line's arguments: the parser, value types and chunk-size bounds."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from zerda_async.apps._chunk_sizes import (
    CHUNK_SIZES,
    LONG_CHUNK_SIZES,
    MAX_CHUNK,
    MIN_CHUNK,
    check_chunk_size,
)
from zerda_async.apps._console import PROG
from zerda_async.apps._ingest import SUFFIXES
from zerda_async.apps._profiles import (
    DEFAULT_PROFILE,
    EF_SEARCH,
    EMBEDDER_CHOICES,
    PROFILES,
)
from zerda_async.core.templates import TEMPLATE_NAMES
from zerda_async.errors import UsageError

__all__ = [
    "CHUNK_SIZES",
    "LONG_CHUNK_SIZES",
    "MAX_CHUNK",
    "MIN_CHUNK",
    "build_parser",
    "check_chunk_size",
    "where_filters",
]


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


def _int_up_to(limit: int, what: str) -> Callable[[str], int]:
    """A parser of positive integers up to ``limit``, naming ``what`` was expected."""

    def parse(text: str) -> int:
        value = _positive_int(text)
        if value > limit:
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}")
        return value

    return parse


_port = _int_up_to(65535, "a port number (1-65535)")
_ef_search = _int_up_to(1000, "1-1000 (pgvector's range)")


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
    return value


def _key_value(text: str) -> tuple[str, str]:
    key, sep, raw = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key, raw


def _filter(text: str) -> tuple[str, Any]:
    key, raw = _key_value(text)
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
    key, raw = _key_value(text)
    try:
        value = json.loads(raw)
    except ValueError:
        return key, raw
    if isinstance(value, str | int | float | bool | None | dict):
        return key, value
    return key, raw


def where_filters(pairs: Sequence[tuple[str, Any]]) -> dict[str, Any] | None:
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

    _add_index(commands)
    _add_query(commands)
    _add_serve(commands)
    _add_demo(commands)
    return parser


def _add_index(commands: Any) -> None:
    """``zerda index``: what to read, where the index goes, how it is built."""
    p = commands.add_parser(
        "index",
        help="read files or folders (PDF, Word, HTML, Markdown, text) into an index",
        description="Read files (or folders of them), split them into chunks, index them "
        "with the profile's analyser (and embedder) and save the index into DIR. A file named "
        "here is read whatever its extension; folders are searched for "
        f"{', '.join(sorted(SUFFIXES))} files. Files that cannot be read (encrypted or "
        "scanned PDFs, corrupt .docx, non-UTF-8 text) are reported by name and skipped.",
    )
    p.add_argument("paths", nargs="+", metavar="PATH", help="files or folders to read")
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--out", metavar="DIR", help="directory to save the index in, or to add to")
    where.add_argument(
        "--store",
        metavar="URL",
        help="postgresql://... index store to write into (adds the files' chunks, replacing "
        "the chunks of files indexed before)",
    )
    p.add_argument("--replace", action="store_true", help="with --out: build DIR anew, not add")
    _add_profile_flags(p, building=True)
    p.add_argument(
        "--chunk-size",
        type=_positive_int,
        default=None,
        metavar="N",
        help=f"maximum characters per chunk, {MIN_CHUNK}-{MAX_CHUNK} (default 400 with the "
        "recommended profile, 800 with the documented one): the chunk filter drops chunks "
        "outside its length window",
    )
    p.add_argument(
        "--long-chunk-size",
        type=int,
        default=None,
        metavar="N",
        help="maximum characters per chunk in files of 8,000 characters or more (default 600 "
        "with the recommended profile; 0, or --chunk-size alone: as every file)",
    )
    p.add_argument(
        "--all-files",
        action="store_true",
        help="in folders, read every file (not only the text extensions); non-UTF-8 files "
        "are reported and skipped",
    )
    _add_hnsw_flags(p)
    p.add_argument("--quiet", action="store_true", help="no progress line (drawn on a terminal)")
    p.add_argument(
        "--dim",
        type=_positive_int,
        default=None,
        metavar="N",
        help="hashing embedder dimensions (default 256; adding to an index: as recorded)",
    )


def _add_query(commands: Any) -> None:
    """``zerda query``: the question and the run options."""
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


def _add_serve(commands: Any) -> None:
    """``zerda serve``: the index and state stores, the address, the service's limits."""
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
    _add_vector_search_flags(p)
    _add_profile_flags(p, building=False)


def _add_hnsw_flags(p: argparse.ArgumentParser) -> None:
    """``zerda index --store URL --hnsw``: build the store's HNSW index, and its settings."""
    p.add_argument(
        "--hnsw",
        action="store_true",
        help="with --store: (re)build the store's HNSW index after writing, for "
        "'zerda serve --search hnsw'",
    )
    p.add_argument(
        "--hnsw-m",
        type=_positive_int,
        default=32,
        metavar="N",
        help="HNSW links per node (default 32)",
    )
    p.add_argument(
        "--hnsw-ef-construction",
        type=_positive_int,
        default=400,
        metavar="N",
        help="HNSW build candidate list (default 400)",
    )


def _add_vector_search_flags(p: argparse.ArgumentParser) -> None:
    """``zerda serve --search hnsw --ef-search N``: where and how a PostgreSQL store searches."""
    p.add_argument(
        "--search",
        "--vector-search",
        dest="vector_search",
        choices=("exact", "local", "hnsw"),
        default="exact",
        help="with a postgresql:// store: search in PostgreSQL with exact cosine (default) "
        "or its HNSW index (built by 'zerda index --store URL --hnsw'), or in each replica "
        "over its own copy of the whole index, caught up from PostgreSQL (local)",
    )
    p.add_argument(
        "--ef-search",
        type=_ef_search,
        default=EF_SEARCH,
        metavar="N",
        help=f"HNSW candidate list size, 1-1000 (default {EF_SEARCH}: recall@20 0.94-0.98 on "
        "bench/bench_scaleout.py's 64-dim vectors)",
    )


def _add_demo(commands: Any) -> None:
    """``zerda demo``: the profile to run it with."""
    p = commands.add_parser(
        "demo", help="index the bundled bilingual corpus and run example queries"
    )
    p.add_argument(
        "--profile", choices=PROFILES, default=DEFAULT_PROFILE, help="default: recommended"
    )


def _add_profile_flags(p: argparse.ArgumentParser, building: bool) -> None:
    """``--profile`` and ``--embedder``: chosen when building, checked against the index after."""
    if building:
        p.add_argument(
            "--profile",
            choices=PROFILES,
            default=None,
            help="recommended (default: ContextEngineConfig.recommended()) or documented "
            "(the documented package's behaviour)",
        )
        p.add_argument(
            "--embedder",
            choices=EMBEDDER_CHOICES,
            default="auto",
            help="auto (default): multilingual E5 with the recommended profile (keyword only "
            "if not installed), hashing with the documented one; none: keyword only",
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
