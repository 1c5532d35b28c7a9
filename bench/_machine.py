"""The machine line of every benchmark table: CPU, cores, library versions, load, revision.

A figure means little without the machine and the load it was measured
under (the machine is shared), nor without the code revision it measured.
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
"""The checkout the benchmarks measure."""


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


def _pkg(name: str) -> str:
    try:
        return version(name)
    except PackageNotFoundError:
        return "n/a"


def describe_machine() -> str:
    """One line: CPU model, usable cores, OS, Python and the relevant library versions."""
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        usable = os.cpu_count() or 0
    return (
        f"{_cpu_model()}, {usable} cores usable ({os.cpu_count()} online), "
        f"{platform.system()} {platform.release()}, "
        f"Python {platform.python_version()} ({platform.python_implementation()}), "
        f"numpy {np.__version__} ({_blas()}), msgspec {_pkg('msgspec')}, anyio {_pkg('anyio')}"
    )


def _blas() -> str:
    try:
        info = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
        name = f"{info.get('name', '?')} {info.get('version', '')}".strip()
    except Exception:
        name = "BLAS ?"
    threads = os.environ.get("OPENBLAS_NUM_THREADS") or os.environ.get("OMP_NUM_THREADS")
    return f"{name}, BLAS threads {threads or 'default'}"


def _git(*args: str) -> str:
    done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def describe_revision() -> str:
    """The git revision of the code measured, marked dirty when the tree has local changes."""
    try:
        head = _git("rev-parse", "--short", "HEAD")
        dirty = _git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.CalledProcessError):
        return "unknown revision"
    return f"{head}{' + uncommitted changes' if dirty else ''}"


def describe_load() -> str:
    """The 1/5/15-minute load averages: other processes compete for the same cores."""
    try:
        one, five, fifteen = os.getloadavg()
    except OSError:
        return "load average n/a"
    return f"load average {one:.2f} / {five:.2f} / {fifteen:.2f} (1/5/15 min)"


def command_line() -> str:
    """How this script was invoked, for the summaries."""
    script = Path(sys.argv[0]).resolve()
    try:
        shown = str(script.relative_to(ROOT))
    except ValueError:
        shown = str(script)
    return " ".join([".venv/bin/python", shown, *sys.argv[1:]])
