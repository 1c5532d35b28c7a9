"""``zerda index --out DIR`` on an existing index: adding files against rebuilding it.

Method
------
A synthetic folder of ``--files`` text files (60 paragraphs of 45 words each, a
fixed seed) is indexed into a new directory (recommended profile, keyword only,
the default).  Then, alternately and ``--repeat`` times each: one new file is
added to a copy of that index (``--out COPY``, what issue 20 made the default),
one file of the folder is edited and indexed again into a copy (it replaces its
chunks), and the whole folder plus the new file is rebuilt with ``--replace``
(what one had to do before to keep the old files).  Each run calls the command
line's ``main`` in this process and is timed with ``time.perf_counter`` (the
index copy is made before the clock starts); the table gives the median and
the fastest run.  The command's own output is discarded.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _common import command_line, describe_load, describe_machine, format_table

from zerda_async.apps.cli import main as zerda

WORDS = [
    *("river", "coffee", "desert", "palm", "market", "city", "trade", "boat", "wind"),
    *("sand", "star", "lamp", "bread", "salt", "spice", "garden", "well", "road"),
    *("camel", "harbour", "caravan", "oasis", "loom", "copper"),
]


def _write_file(path: Path, rng: random.Random, paragraphs: int = 60) -> None:
    text = "\n\n".join(
        " ".join(rng.choice(WORDS) for _ in range(45)).capitalize() + "." for _ in range(paragraphs)
    )
    path.write_text(text + "\n", encoding="utf-8")


def _quiet(argv: list[str]) -> None:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        status = zerda(argv)
    if status != 0:
        raise SystemExit(f"zerda {' '.join(argv)} exited with {status}")


def _timed(prepare: Callable[[], list[str]]) -> float:
    argv = prepare()
    started = time.perf_counter()
    _quiet(argv)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--files", type=int, default=200, help="files in the folder (60 chunks each)"
    )
    parser.add_argument("--repeat", type=int, default=5, help="runs of each operation")
    args = parser.parse_args()
    rng = random.Random(20)
    with tempfile.TemporaryDirectory(prefix="zerda-bench-add-") as tmp:
        root = Path(tmp)
        folder = root / "docs"
        folder.mkdir()
        for i in range(args.files):
            _write_file(folder / f"file{i:04}.txt", rng)
        new = root / "new.txt"
        _write_file(new, rng)
        base = root / "base"
        build = _timed(lambda: ["index", str(folder), "--out", str(base)])
        work = root / "work"

        def copy() -> None:
            shutil.rmtree(work, ignore_errors=True)
            shutil.copytree(base, work)

        def add() -> list[str]:
            copy()
            return ["index", str(new), "--out", str(work)]

        def edit() -> list[str]:
            copy()
            _write_file(folder / "file0007.txt", rng, paragraphs=30)
            return ["index", str(folder / "file0007.txt"), "--out", str(work)]

        def rebuild() -> list[str]:
            copy()
            return ["index", str(folder), str(new), "--out", str(work), "--replace"]

        runs: dict[str, list[float]] = {"add": [], "edit": [], "rebuild": []}
        for _ in range(args.repeat):
            for name, prepare in (("add", add), ("edit", edit), ("rebuild", rebuild)):
                runs[name].append(_timed(prepare))
    rows = [
        ["build the index anew (no index there)", 1, build, build],
        *[
            [label, len(runs[key]), statistics.median(runs[key]), min(runs[key])]
            for key, label in (
                ("add", "add one new file (--out EXISTING)"),
                ("edit", "index one edited file again (--out EXISTING)"),
                ("rebuild", "rebuild everything plus the file (--replace)"),
            )
        ],
    ]
    print(f"# zerda index --out over an existing index ({args.files * 60:,} chunks)\n")
    print(f"machine: {describe_machine()}")
    print(f"load: {describe_load()}")
    print(f"command: {command_line()}\n")
    print(format_table(["operation", "runs", "median s", "fastest s"], rows))


if __name__ == "__main__":
    main()
