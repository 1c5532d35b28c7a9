"""The sentence-transformers adapter on a tiny BERT saved by the test (needs torch).

Skipped without torch and sentence-transformers (``make test-torch`` installs
them): torch is a large install that the rest of the suite does not need.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import sync_api
from zerda_async import AsyncContextEngine
from zerda_async.embedders import (
    SentenceTransformerEmbedder,
    TextEmbedder,
    embed_kwargs,
    embedder_from_params,
)
from zerda_async.errors import EmbedderLoadError

from .support import CORPUS
from .tiny_models import DIM, build_sentence_transformer

torch = pytest.importorskip("torch", reason="torch is not installed (make test-torch)")
pytest.importorskip("sentence_transformers", reason="the 'sentence-transformers' extra")

TEXTS = ["The mechanic repaired the engine", "bake the loaf", ""]


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_sentence_transformer(tmp_path_factory.mktemp("st-model"))


@pytest.fixture(scope="module")
def embedder(folder: Path) -> SentenceTransformerEmbedder:
    return SentenceTransformerEmbedder(folder)


def _reference(folder: Path, text: str) -> np.ndarray:
    """Mean of the BERT token states over the attention mask, normalised (by hand)."""
    from transformers import AutoModel, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
    model = AutoModel.from_pretrained(str(folder), local_files_only=True).eval()
    encoded = tokenizer([text], return_tensors="pt")
    with torch.no_grad():
        states = model(**encoded).last_hidden_state[0].numpy().astype(np.float64)
    mask = encoded["attention_mask"][0].numpy().astype(bool)
    mean: np.ndarray = states[mask].mean(axis=0)
    result: np.ndarray = mean / np.linalg.norm(mean)
    return result


def test_vectors_are_the_normalised_mean_of_the_token_states(
    folder: Path, embedder: SentenceTransformerEmbedder
) -> None:
    assert isinstance(embedder, TextEmbedder)
    assert embedder.dim == DIM
    rows = embedder.embed_batch(TEXTS)
    assert rows.shape == (len(TEXTS), DIM)
    for text, row in zip(TEXTS, rows, strict=True):
        np.testing.assert_allclose(row, _reference(folder.parent / "bert", text), atol=1e-4)
    np.testing.assert_allclose(embedder(TEXTS[0]), rows[0], atol=1e-5)
    assert embedder.embed_batch([]).shape == (0, DIM)


def test_params_rebuild_the_embedder(embedder: SentenceTransformerEmbedder) -> None:
    again = embedder_from_params(embedder.params())
    np.testing.assert_allclose(again(TEXTS[1]), embedder(TEXTS[1]), atol=1e-6)


def test_a_missing_folder_is_named(tmp_path: Path) -> None:
    with pytest.raises(EmbedderLoadError, match="does not exist"):
        SentenceTransformerEmbedder(tmp_path / "nowhere")


def test_a_folder_that_is_not_a_sentence_transformer_is_named(folder: Path) -> None:
    # The raw BERT folder has no modules.json: refused before anything loads.
    with pytest.raises(EmbedderLoadError, match=r"has no modules\.json"):
        SentenceTransformerEmbedder(folder.parent / "bert")


def test_a_hub_name_is_never_downloaded() -> None:
    with pytest.raises(EmbedderLoadError, match="local folder is required"):
        SentenceTransformerEmbedder("sentence-transformers/all-MiniLM-L6-v2")


@pytest.mark.anyio
async def test_the_async_engine_takes_it_directly(embedder: SentenceTransformerEmbedder) -> None:
    async with AsyncContextEngine() as engine:
        await engine.index(CORPUS, **embed_kwargs(embedder))
        result = await engine.run(CORPUS[1].text)
    assert result.chunks_used[0].chunk.doc_id == CORPUS[1].doc_id


def test_the_sync_engine_takes_it_as_embed_fn(embedder: SentenceTransformerEmbedder) -> None:
    engine = sync_api.ContextEngine()
    engine.index(CORPUS, embed_fn=embedder)
    assert engine.run(CORPUS[4].text).chunks_used[0].chunk.doc_id == CORPUS[4].doc_id
