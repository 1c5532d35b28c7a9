"""Fixtures of the command-line tests: the installed script, sample files, a built index."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

SCRIPT = Path(sys.executable).parent / "zerda"


def run_zerda(
    args: Sequence[str], cwd: Path | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """Run the installed ``zerda`` console script; text output decoded as UTF-8."""
    env = {**os.environ, "PYTHONUTF8": "1"}
    return subprocess.run(
        [str(SCRIPT), *args],
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=timeout,
        cwd=cwd,
        env=env,
        check=False,
    )


def write_samples(root: Path) -> Path:
    """A folder with good, bad and ignored files; returns it."""
    docs = root / "docs"
    (docs / "guides").mkdir(parents=True)
    (docs / "nile.txt").write_text(
        "The Nile is the longest river in Africa.\n\n"
        "It flows north through Sudan and Egypt into the Mediterranean Sea.\n",
        encoding="utf-8",
    )
    (docs / "guides" / "coffee.md").write_text(
        "# Arabic coffee\n\nArabic coffee is brewed with cardamom and served in small cups.\n\n"
        "# Espresso\n\nEspresso is made by forcing hot water through finely ground coffee.\n",
        encoding="utf-8",
    )
    (docs / "arabic.md").write_text(
        "# التعلم الآلي\n\nالتعلم الآلي فرع من الذكاء الاصطناعي يتعلم الأنماط من البيانات.\n",
        encoding="utf-8",
    )
    (docs / "records.jsonl").write_text(
        '{"doc_id": "bm25", "text": "BM25 ranks documents by term frequency and rarity.",'
        ' "metadata": {"source": "search-notes", "topic": "search"}}\n'
        "this line is not json\n"
        '{"doc_id": "rrf", "text": "Reciprocal Rank Fusion merges ranked lists.",'
        ' "metadata": {"source": "search-notes", "topic": "search"}}\n',
        encoding="utf-8",
    )
    (docs / "latin1.txt").write_bytes("caf\xe9 cr\xe8me br\xfbl\xe9e".encode("latin-1"))
    (docs / "empty.txt").write_text("", encoding="utf-8")
    (docs / "gone.txt").symlink_to(docs / "does-not-exist.txt")
    (docs / "picture.png").write_bytes(b"\x89PNG\r\n")
    return docs


@pytest.fixture(scope="module")
def samples(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample folder."""
    return write_samples(tmp_path_factory.mktemp("samples"))


@pytest.fixture(scope="module")
def built_index(samples: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An index of the sample folder built with ``zerda index``."""
    out = tmp_path_factory.mktemp("index") / "idx"
    done = run_zerda(["index", str(samples), "--out", str(out)])
    assert done.returncode == 0, done.stderr
    return out
