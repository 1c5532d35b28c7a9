"""``zerda index ... --out DIR`` over an index already in DIR: it adds, never wipes silently.

The command runs in process (``main``) to keep these tests fast; the
subprocess tests in ``test_cli.py`` cover the installed script itself.
"""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest
from support.chunks import Chunk

from zerda_async import AsyncContextEngine
from zerda_async.apps import MANIFEST_NAME, open_index
from zerda_async.apps.cli import main


def _zerda(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    status = main(list(args))
    out, err = capsys.readouterr()
    return status, out, err


def _doc_ids(index: Path) -> list[str]:
    async def read() -> list[str]:
        async with open_index(index) as engine:
            return [str(d) for d in engine.doc_ids()]

    return anyio.run(read)


def _manifest(index: Path) -> dict[str, object]:
    data: dict[str, object] = json.loads((index / MANIFEST_NAME).read_text(encoding="utf-8"))
    return data


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    """Two text files: ``nile.txt`` (three paragraphs) and ``coffee.txt`` (one)."""
    nile = tmp_path / "nile.txt"
    nile.write_text(
        "The Nile is the longest river in Africa, flowing for thousands of kilometres.\n\n"
        "It flows north through Sudan and Egypt into the Mediterranean Sea at its delta.\n\n"
        "Its annual flood once decided the farming calendar of the whole valley below Aswan.\n",
        encoding="utf-8",
    )
    coffee = tmp_path / "coffee.txt"
    coffee.write_text(
        "Arabic coffee is brewed with cardamom and served in small cups to every guest.\n",
        encoding="utf-8",
    )
    return {"nile": nile, "coffee": coffee}


def test_indexing_into_an_existing_index_adds_the_new_files(
    files: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "idx"
    small = ["--chunk-size", "100"]  # one chunk per paragraph
    assert _zerda(capsys, "index", str(files["nile"]), "--out", str(out), *small)[0] == 0
    assert _doc_ids(out) == ["nile.txt#0", "nile.txt#1", "nile.txt#2"]
    status, stdout, _ = _zerda(capsys, "index", str(files["coffee"]), "--out", str(out), *small)
    assert status == 0
    assert "added 1 chunks from 1 file(s)" in stdout and "4 chunks" in stdout
    assert sorted(_doc_ids(out)) == ["coffee.txt#0", "nile.txt#0", "nile.txt#1", "nile.txt#2"]
    manifest = _manifest(out)
    assert manifest["chunks"] == 4
    assert manifest["files"] == sorted([str(files["coffee"]), str(files["nile"])])


def test_a_file_indexed_again_replaces_its_chunks(
    files: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "idx"
    small = ["--chunk-size", "100"]
    both = [str(files["nile"]), str(files["coffee"])]
    assert _zerda(capsys, "index", *both, "--out", str(out), *small)[0] == 0
    files["nile"].write_text(
        "The Nile now holds one paragraph about its source, Lake Victoria in the south.\n",
        encoding="utf-8",
    )
    status, stdout, _ = _zerda(capsys, "index", str(files["nile"]), "--out", str(out), *small)
    assert status == 0, stdout
    assert sorted(_doc_ids(out)) == ["coffee.txt#0", "nile.txt#0"]
    assert _manifest(out)["chunks"] == 2

    async def nile_text() -> str:
        async with open_index(out) as engine:
            result = await engine.run("Lake Victoria source")
            return result.context

    assert "Lake Victoria" in anyio.run(nile_text)


def test_replace_builds_the_index_anew(
    files: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "idx"
    assert _zerda(capsys, "index", str(files["nile"]), "--out", str(out))[0] == 0
    status, _, _ = _zerda(capsys, "index", str(files["coffee"]), "--out", str(out), "--replace")
    assert status == 0
    assert _doc_ids(out) == ["coffee.txt#0"]


def test_another_profile_embedder_or_dim_is_a_one_line_error(
    files: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "idx"
    nile, coffee = str(files["nile"]), str(files["coffee"])
    assert _zerda(capsys, "index", nile, "--out", str(out), "--profile", "documented")[0] == 0
    before = _doc_ids(out)
    for flags, words in (
        (["--profile", "recommended"], "indexed with the documented profile"),
        (["--embedder", "none"], "indexed with the hashing embedder"),
        (["--dim", "64"], "--dim 64 does not match"),
    ):
        status, _, err = _zerda(capsys, "index", coffee, "--out", str(out), *flags)
        assert status == 2, err
        assert err.startswith("zerda: error: ") and words in err and "--replace" in err
        assert len(err.strip().splitlines()) == 1
    assert _doc_ids(out) == before  # nothing was written
    # Without --profile, adding follows the profile the index was built with.
    status, stdout, err = _zerda(capsys, "index", coffee, "--out", str(out))
    assert status == 0, err
    assert "documented profile" in stdout and _manifest(out)["profile"] == "documented"


def test_an_index_saved_from_python_is_not_added_to(
    files: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "saved"

    async def save() -> None:
        async with AsyncContextEngine() as engine:
            await engine.index([Chunk("x", "a chunk saved from Python code here")])
            await engine.save(out)

    anyio.run(save)
    status, _, err = _zerda(capsys, "index", str(files["coffee"]), "--out", str(out))
    assert status == 2 and "saved from Python" in err and "--replace" in err
    assert _zerda(capsys, "index", str(files["coffee"]), "--out", str(out), "--replace")[0] == 0
    assert _doc_ids(out) == ["coffee.txt#0"]


def test_a_file_named_otherwise_than_before_is_noted(
    files: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "idx"
    folder = files["nile"].parent
    assert _zerda(capsys, "index", str(folder), "--out", str(out))[0] == 0
    status, _, err = _zerda(capsys, "index", str(files["coffee"]), "--out", str(out))
    assert status == 0
    # Found in its folder it was "<folder>/coffee.txt"; named alone it is "coffee.txt".
    assert f"coffee.txt is added beside {folder.name}/coffee.txt, not in its place" in err
    assert len(err.strip().splitlines()) == 1
