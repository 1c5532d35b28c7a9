"""Ingestion of any named text file, HTML and reStructuredText, chunk-size bounds, saved indexes."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest

from zerda_async import AsyncContextEngine, ContextEngineConfig
from zerda_async.apps import SUFFIXES, read_paths

from .conftest import run_zerda

LICENSES = Path("/usr/share/common-licenses")
KEYWORDS = ("--embedder", "none")

PAGE = """<!doctype html><html><head><title>Coffee &amp; dates</title>
<style>p { color: red }</style><script>var s = "<p>hidden script text</p>";</script></head>
<body><nav><a href="/">Home</a></nav><h1>Arabic   coffee</h1>
<p>Arabic coffee is brewed with <b>cardamom</b>,
and served in small cups.</p><ul><li>first pour</li><li>second pour</li></ul>
<!-- a comment --><h2>Dates</h2><p>Date palms grow along the Nile.<br>They need water.</p>
</body></html>"""


def test_folders_read_rst_and_html_and_named_files_any_extension(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "guide.rst").write_text("Title\n=====\n\nSome reStructuredText prose here.\n")
    (docs / "page.html").write_text(PAGE)
    (docs / "LICENSE").write_text("Permission is granted to use this software freely.\n")
    (docs / "blob.bin").write_bytes(b"abc\x00def")
    report = read_paths([docs])
    assert {Path(f).name for f in report.files} == {"guide.rst", "page.html"}
    assert report.ignored == 2
    html_chunks = [c for c in report.chunks if c.metadata["path"] == "docs/page.html"]
    # Each heading starts a chunk and names its section; the navigation is left out.
    assert [c.text.split("\n")[0] for c in html_chunks] == ["Arabic coffee", "Dates"]
    assert "cardamom" in html_chunks[0].text and "Home" not in html_chunks[0].text
    assert html_chunks[1].metadata["section"] == "Arabic coffee › Dates"
    assert not any("<" in c.text for c in html_chunks)
    named = read_paths([docs / "LICENSE", docs / "blob.bin"])
    assert [c.text for c in named.chunks] == ["Permission is granted to use this software freely."]
    assert [(Path(s.path).name, s.reason) for s in named.skipped] == [
        ("blob.bin", "binary file (holds NUL bytes)")
    ]
    every = read_paths([docs], all_files=True)
    assert len(every.files) == 3 and every.ignored == 0
    assert {".rst", ".html", ".htm", ".md", ".txt", ".jsonl"} <= SUFFIXES


@pytest.mark.skipif(not LICENSES.is_dir(), reason="no /usr/share/common-licenses here")
def test_every_common_license_indexes_named_one_by_one(tmp_path: Path) -> None:
    files = sorted(p for p in LICENSES.iterdir() if p.is_file())
    # Keyword only: this is about reading the files (the licenses make ~900 chunks).
    done = run_zerda(["index", *map(str, files), "--out", str(tmp_path / "idx"), *KEYWORDS])
    assert done.returncode == 0, done.stderr
    assert "skipped" not in done.stderr
    distinct = len({p.resolve() for p in files})
    assert f"from {distinct} file(s)" in done.stdout
    # As a folder, extension-less files are ignored (and said so) unless --all-files.
    folder = run_zerda(["index", str(LICENSES), "--out", str(tmp_path / "idx2"), *KEYWORDS])
    assert folder.returncode == 1 and "--all-files" in folder.stderr
    every = run_zerda(
        ["index", str(LICENSES), "--all-files", "--out", str(tmp_path / "idx3"), *KEYWORDS]
    )
    assert every.returncode == 0 and f"from {distinct} file(s)" in every.stdout


@pytest.mark.parametrize("size", [4001, 19])
def test_chunk_sizes_the_filter_would_drop_are_refused(tmp_path: Path, size: int) -> None:
    note = tmp_path / "n.txt"
    note.write_text("A note long enough to be one chunk of text.\n")
    window = ContextEngineConfig().filter_cfg
    done = run_zerda(["index", str(note), "--out", str(tmp_path / "i"), "--chunk-size", str(size)])
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and f"--chunk-size {size}" in lines[0]
    assert f"{window.min_chunk_length}-{window.max_chunk_length}" in lines[0]
    assert not (tmp_path / "i").exists()


@pytest.mark.parametrize("question", ["", "   \t"])
def test_an_empty_query_is_a_one_line_usage_error(built_index: Path, question: str) -> None:
    done = run_zerda(["query", str(built_index), question])
    assert done.returncode == 2
    assert done.stderr.strip() == "zerda: error: the query is empty"
    assert done.stdout == ""


@dataclass
class _Doc:
    doc_id: str
    text: str
    metadata: dict[str, Any] = field(default_factory=dict)


def test_an_index_saved_from_python_loads_in_query(tmp_path: Path) -> None:
    config = ContextEngineConfig()
    config.composer.template = "minimal"
    config.retriever.top_k = 7

    async def save() -> None:
        async with AsyncContextEngine(config) as engine:
            await engine.index(
                [
                    _Doc("nile", "The Nile flows north through Egypt into the sea."),
                    _Doc("coffee", "Arabic coffee is served with cardamom in small cups."),
                ]
            )
            await engine.save(tmp_path / "py-index")

    anyio.run(save)
    done = run_zerda(["query", str(tmp_path / "py-index"), "Where does the Nile flow?", "--json"])
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert [c["doc_id"] for c in result["chunks_used"]] == ["nile"]
    assert result["template"] == "minimal"  # the configuration saved with the index
    assert "no embedder recorded" in done.stderr
    plain = run_zerda(["query", str(tmp_path / "py-index"), "cardamom coffee"])
    assert plain.returncode == 0 and "vector search is off" in plain.stdout
    assert "Arabic coffee is served" in plain.stdout


def test_a_directory_without_any_index_is_still_refused(tmp_path: Path) -> None:
    (tmp_path / "junk").mkdir()
    done = run_zerda(["query", str(tmp_path / "junk"), "anything"])
    assert done.returncode == 1
    assert "is not a zerda index" in done.stderr and len(done.stderr.splitlines()) == 1
