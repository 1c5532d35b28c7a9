"""``zerda``: index files, query a saved index, serve it over HTTP, or run the demo.

    zerda index PATH... (--out DIR | --store postgresql://...) [--profile P] [--embedder E]
                [--chunk-size N] [--long-chunk-size N] [--dim N] [--all-files]
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

import io
import logging
import sys
from collections.abc import Sequence

from zerda_async.apps import report_for, stage_failure
from zerda_async.apps._cli_args import (
    build_parser,
)
from zerda_async.apps._cli_index import cmd_index
from zerda_async.apps._cli_run import cmd_demo, cmd_query, cmd_serve
from zerda_async.apps._console import PROG, err
from zerda_async.apps._interrupt import EmbeddingInterrupted
from zerda_async.errors import ZerdaError

__all__ = ["build_parser", "main"]

_UTF8 = ("utf-8", "utf8")

_COMMANDS = {"index": cmd_index, "query": cmd_query, "serve": cmd_serve, "demo": cmd_demo}


def _leaf(exc: BaseException) -> BaseException:
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


def _message(exc: BaseException) -> str:
    stage_line = stage_failure(exc)
    if stage_line is not None:  # a component's own exception, raised in a stage
        return f"{stage_line}: {' '.join(str(exc).split())}"
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
        if isinstance(leaf, EmbeddingInterrupted):
            err(f"{PROG}: {leaf}")
            return 130
        err(f"{PROG}: error: {_message(leaf)}")
        # The exit status comes from the one error table (2: the command line was wrong).
        return report_for(leaf).exit_status


if __name__ == "__main__":
    sys.exit(main())
