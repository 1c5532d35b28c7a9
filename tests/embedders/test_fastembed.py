"""The fastembed adapter on a local ONNX model folder built by the test."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

import sync_api
from zerda_async import AsyncContextEngine
from zerda_async.embedders import (
    FastEmbedEmbedder,
    TextEmbedder,
    embed_kwargs,
    embedder_from_params,
)
from zerda_async.errors import EmbedderLoadError

from .support import CORPUS
from .tiny_models import build_onnx_model, onnx_reference

pytest.importorskip("fastembed", reason="the 'fastembed' extra is not installed")
pytest.importorskip("onnx", reason="onnx builds the test model")

TEXTS = ["The mechanic repaired the engine", "bake the loaf", "unknown words only", ""]


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, np.ndarray]:
    folder = tmp_path_factory.mktemp("onnx-model")
    return folder, build_onnx_model(folder)


@pytest.fixture(scope="module")
def embedder(model: tuple[Path, np.ndarray]) -> FastEmbedEmbedder:
    return FastEmbedEmbedder(model[0])


def test_vectors_are_the_mean_pooled_normalised_token_states(
    model: tuple[Path, np.ndarray], embedder: FastEmbedEmbedder
) -> None:
    folder, table = model
    assert isinstance(embedder, TextEmbedder)
    rows = embedder.embed_batch(TEXTS)
    assert rows.shape == (len(TEXTS), 16)
    for text, row in zip(TEXTS, rows, strict=True):
        np.testing.assert_allclose(row, onnx_reference(folder, table, text), atol=1e-5)
    np.testing.assert_allclose(embedder(TEXTS[1]), rows[1], atol=1e-6)
    assert embedder.embed_batch([]).shape == (0, 16)


def test_cls_pooling_takes_the_first_token(model: tuple[Path, np.ndarray]) -> None:
    folder, table = model
    cls = FastEmbedEmbedder(folder, pooling="cls", normalize=False)
    # Every text starts with [CLS] (id 2): the same vector whatever the text.
    np.testing.assert_allclose(cls.embed_batch(TEXTS[:2]), np.stack([table[2], table[2]]))


def test_params_rebuild_the_embedder(embedder: FastEmbedEmbedder) -> None:
    again = embedder_from_params(embedder.params())
    np.testing.assert_allclose(again(TEXTS[0]), embedder(TEXTS[0]), atol=1e-6)


def test_a_missing_folder_is_named(tmp_path: Path) -> None:
    with pytest.raises(EmbedderLoadError, match="does not exist"):
        FastEmbedEmbedder(tmp_path / "nowhere")


def test_a_folder_without_the_model_file_is_named(
    model: tuple[Path, np.ndarray], tmp_path: Path
) -> None:
    broken = tmp_path / "broken"
    shutil.copytree(model[0], broken)
    (broken / "model.onnx").unlink()
    with pytest.raises(EmbedderLoadError, match=r"has no model\.onnx"):
        FastEmbedEmbedder(broken)


def test_a_corrupt_model_file_is_a_load_error(
    model: tuple[Path, np.ndarray], tmp_path: Path
) -> None:
    broken = tmp_path / "corrupt"
    shutil.copytree(model[0], broken)
    (broken / "model.onnx").write_bytes(b"not an onnx model")
    with pytest.raises(EmbedderLoadError, match="could not load"):
        FastEmbedEmbedder(broken)


def test_bad_pooling_is_refused(model: tuple[Path, np.ndarray]) -> None:
    with pytest.raises(ValueError, match="pooling"):
        FastEmbedEmbedder(model[0], pooling="max")  # type: ignore[arg-type]


@pytest.mark.anyio
async def test_the_async_engine_takes_it_directly(embedder: FastEmbedEmbedder) -> None:
    async with AsyncContextEngine() as engine:
        await engine.index(CORPUS, **embed_kwargs(embedder))
        result = await engine.run(CORPUS[3].text)
    assert result.chunks_used[0].chunk.doc_id == CORPUS[3].doc_id


def test_the_sync_engine_takes_it_as_embed_fn(embedder: FastEmbedEmbedder) -> None:
    engine = sync_api.ContextEngine()
    engine.index(CORPUS, embed_fn=embedder)
    assert engine.run(CORPUS[0].text).chunks_used[0].chunk.doc_id == CORPUS[0].doc_id
