"""Another git revision's package, for benches that measure it beside this tree."""

from __future__ import annotations

import io
import subprocess
import tarfile
import tempfile
from pathlib import Path

__all__ = ["extract_revision"]

_ROOT = Path(__file__).resolve().parent.parent


def extract_revision(
    revision: str, prefix: str = "zerda-baseline-"
) -> tempfile.TemporaryDirectory[str]:
    """``zerda_async`` and ``sync_api`` of ``revision`` in a temporary directory.

    A child process given that directory first on its path (``ZERDA_BENCH_TREE``
    and ``PYTHONPATH``) measures the revision with this tree's bench code.
    """
    tmp = tempfile.TemporaryDirectory(prefix=prefix)
    archive = subprocess.run(
        ["git", "archive", "--format=tar", revision, "zerda_async", "sync_api"],
        cwd=_ROOT,
        capture_output=True,
        check=True,
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(tmp.name, filter="data")
    return tmp
