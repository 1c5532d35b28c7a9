"""Token counters: the documented make_token_counter, and real tokenizers from local files."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from sync_api import ContextEngine, ContextEngineConfig
from zerda_async.core.counters import char_counter, make_token_counter
from zerda_async.counters import TIKTOKEN_FILES, hf_token_counter, tiktoken_counter
from zerda_async.errors import TokenizerUnavailableError

TEXTS = [
    "The Nile flows north through Egypt into the Mediterranean Sea.",
    "Arabic coffee is brewed with cardamom and served in small cups.",
    "التعلم الآلي فرع من الذكاء الاصطناعي يتعلم الأنماط من البيانات.",
    "BM25 ranks documents by term frequency and inverse document frequency.",
]


class _Boom:
    def encode(self, text: str, /) -> list[int]:
        raise RuntimeError("tokenizer down")


def test_make_token_counter_is_len_of_encode_and_propagates_errors() -> None:
    count = make_token_counter(str.split)  # type: ignore[arg-type]
    assert count is not make_token_counter(str.split)  # type: ignore[arg-type]
    with pytest.raises(RuntimeError, match="tokenizer down"):
        make_token_counter(_Boom())("x")
    assert char_counter("") == 0


@pytest.fixture(scope="module")
def tokenizer_json(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small word-level tokenizer trained here (no hub) with a [CLS] ... [SEP] post-processor."""
    tokenizers = pytest.importorskip("tokenizers", reason="the 'tokenizers' extra is absent")
    from tokenizers import models, pre_tokenizers, processors, trainers

    tok = tokenizers.Tokenizer(models.WordLevel(unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    trainer = trainers.WordLevelTrainer(special_tokens=["[UNK]", "[CLS]", "[SEP]"])
    tok.train_from_iterator(TEXTS, trainer=trainer)
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 1), ("[SEP]", 2)]
    )
    path = tmp_path_factory.mktemp("tok") / "tokenizer.json"
    tok.save(str(path))
    return path


def test_hf_counter_counts_the_tokenizers_tokens(tokenizer_json: Path) -> None:
    from tokenizers import Tokenizer

    real = Tokenizer.from_file(str(tokenizer_json))
    count = hf_token_counter(tokenizer_json)
    with_specials = hf_token_counter(tokenizer_json, special_tokens=True)
    for text in TEXTS:
        ids = real.encode(text, add_special_tokens=False).ids
        assert count(text) == len(ids) > 0
        assert with_specials(text) == len(ids) + 2
    assert count("unseen words here") == 3  # [UNK] each


def test_a_token_budget_bounds_the_context_in_tokens(tokenizer_json: Path) -> None:
    count = hf_token_counter(tokenizer_json)
    chunks = [
        type("C", (), {"doc_id": f"d{i}", "text": t, "metadata": {}})()
        for i, t in enumerate(TEXTS * 3)
    ]
    config = ContextEngineConfig()
    config.composer.template = "minimal"
    engine = ContextEngine(config, length_counter=count).index(chunks)
    result = engine.run("What does BM25 rank and where does the Nile flow?", override_budget=30)
    assert result.chunks_used and count(result.context) <= 30
    assert len(result.context) > 30  # measured in tokens, not characters


def test_hf_counter_names_a_missing_or_bad_file(tmp_path: Path) -> None:
    with pytest.raises(TokenizerUnavailableError, match=r"no tokenizer\.json"):
        hf_token_counter(tmp_path / "tokenizer.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    with pytest.raises(ValueError, match=r"not a tokenizers tokenizer\.json"):
        hf_token_counter(bad)


def test_tiktoken_never_downloads_and_names_the_missing_files(tmp_path: Path) -> None:
    pytest.importorskip("tiktoken", reason="the 'tiktoken' extra is absent")
    with pytest.raises(TokenizerUnavailableError) as info:
        tiktoken_counter("gpt2", cache_dir=tmp_path)
    message = str(info.value)
    for url in TIKTOKEN_FILES["gpt2"]:
        assert url in message and hashlib.sha1(url.encode()).hexdigest() in message
    assert str(tmp_path) in message and "TIKTOKEN_CACHE_DIR" in message
    with pytest.raises(ValueError, match="unknown tiktoken encoding"):
        tiktoken_counter("nope", cache_dir=tmp_path)


def test_tiktoken_encodings_count_through_make_token_counter() -> None:
    tiktoken = pytest.importorskip("tiktoken", reason="the 'tiktoken' extra is absent")
    # A byte-level encoding built in memory: real tiktoken, no downloaded ranks.
    enc = tiktoken.Encoding(
        name="bytes",
        pat_str=r"\S+|\s+",
        mergeable_ranks={bytes([b]): b for b in range(256)},
        special_tokens={},
    )
    count = make_token_counter(enc)
    assert [count(t) for t in TEXTS] == [len(t.encode("utf-8")) for t in TEXTS]


def test_tiktoken_counter_loads_a_cached_encoding_when_present() -> None:
    pytest.importorskip("tiktoken", reason="the 'tiktoken' extra is absent")
    try:
        count = tiktoken_counter("cl100k_base")
    except TokenizerUnavailableError as exc:
        pytest.skip(f"cl100k_base is not cached on this machine: {exc}")
    assert 0 < count(TEXTS[0]) < len(TEXTS[0])
