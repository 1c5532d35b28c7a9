"""Reading and splitting files for ``zerda index`` (in process), and the default embedder."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from zerda_async.apps import detect_language, read_paths, split_text
from zerda_async.embedders import HashingEmbedder

from .conftest import write_samples


def test_split_text_packs_paragraphs_up_to_the_limit() -> None:
    text = "One.\n\nTwo two.\n\n\nThree three three."
    assert split_text(text, 1000) == ["One.\n\nTwo two.\n\nThree three three."]
    assert split_text(text, 18) == ["One.\n\nTwo two.", "Three three three."]


def test_split_text_cuts_long_paragraphs_at_sentences_then_spaces() -> None:
    text = "First sentence here. Second one is here! " + "word " * 30
    chunks = split_text(text, 40)
    assert chunks[0] == "First sentence here. Second one is here!"
    assert all(len(c) <= 40 for c in chunks)
    assert " ".join(chunks[1:]).split() == ["word"] * 30
    assert split_text("x" * 25, 10) == ["x" * 10, "x" * 10, "x" * 5]


def test_split_text_keeps_names_with_initials_and_abbreviations_whole() -> None:
    text = (
        "The hymn was translated by John C. Messenger in 1908. "
        "Dr. Smith grew E. coli in the U.S. lab. It rained."
    )
    chunks = split_text(text, 60)
    assert chunks == [
        "The hymn was translated by John C. Messenger in 1908.",
        "Dr. Smith grew E. coli in the U.S. lab. It rained.",
    ]
    # An Arabic letter alone is an initial too ("Mayor W. Haydon Burns"); every full
    # stop as an end would pack "ثم جاء. رئيس البلدية و." and cut the name.
    arabic = "ثم جاء. رئيس البلدية و. هايدون بيرنز."
    assert split_text(arabic, 30) == ["ثم جاء.", "رئيس البلدية و. هايدون بيرنز."]
    # A lower-case word before the stop still ends the sentence.
    assert split_text("It was big. Then it fell. " * 3, 30)[0] == "It was big. Then it fell."
    # A caller's own rule replaces it: here, every full stop ends a sentence.
    every_stop = re.compile(r"(?<=[.!?])\s+")
    text = "A short hymn. By John C. Messenger."
    assert split_text(text, 24) == ["A short hymn.", "By John C. Messenger."]
    assert split_text(text, 24, sentence_end=every_stop) == [
        "A short hymn. By John C.",
        "Messenger.",
    ]


def test_split_text_starts_a_chunk_at_each_markdown_heading() -> None:
    text = "# A\n\nalpha\n\n## B\n\nbeta"
    assert split_text(text, 1000) == ["# A\n\nalpha", "## B\n\nbeta"]


def test_split_text_handles_arabic_sentence_ends() -> None:
    text = "ما هو النيل؟ النيل نهر طويل. " * 4
    chunks = split_text(text, 40)
    assert chunks == ["ما هو النيل؟ النيل نهر طويل."] * 4  # cut after "؟" and "."


def test_split_text_rejects_a_non_positive_limit() -> None:
    with pytest.raises(ValueError, match="positive"):
        split_text("x", 0)


def test_detect_language() -> None:
    assert detect_language("التعلم الآلي فرع من الذكاء الاصطناعي") == "ar"
    assert detect_language("Machine learning (التعلم) is a field of computer science") == "en"
    assert detect_language("1234 !!") == "en"


def test_read_paths_reports_every_unusable_file(tmp_path: Path) -> None:
    docs = write_samples(tmp_path)
    report = read_paths([docs], max_chars=300)
    skipped = {s.path: s.reason for s in report.skipped}
    assert skipped[str(docs / "latin1.txt")].startswith("not UTF-8 text (invalid byte 0xe9")
    assert skipped[str(docs / "empty.txt")] == "empty file"
    assert str(docs / "gone.txt") in skipped
    assert skipped[str(docs / "records.jsonl") + ":2"].startswith("Expecting value")
    assert report.ignored == 1
    assert len(report.files) == 4
    by_id = {c.doc_id: c for c in report.chunks}
    # A folder's files keep their path relative to it, prefixed by its name.
    assert set(by_id) == {
        "bm25",
        "rrf",
        "docs/nile.txt#0",
        "docs/guides/coffee.md#0",
        "docs/guides/coffee.md#1",
        "docs/arabic.md#0",
    }
    assert by_id["bm25"].metadata == {"source": "search-notes", "topic": "search", "lang": "en"}
    arabic = by_id["docs/arabic.md#0"]
    assert arabic.metadata == {
        "source": "docs/arabic.md",
        "path": "docs/arabic.md",
        "chunk": 0,
        "lang": "ar",
        "kind": "markdown",
        "title": "التعلم الآلي",
        "section": "التعلم الآلي",
        "doc_start": 0,
        "doc_end": len(arabic.text),
        "search_heading": "التعلم الآلي",
    }
    assert {k: (c.read, c.skipped) for k, c in report.kinds.items()} == {
        "text": (1, 3),
        "markdown": (2, 0),
        "jsonl": (1, 0),
    }
    assert report.describe_kinds() == (
        "read 4 file(s): 1 jsonl, 2 markdown, 1 text; skipped 3: 3 text"
    )
    assert by_id["docs/guides/coffee.md#1"].text.startswith("# Espresso")


def test_read_paths_reads_a_file_once_and_named_files_whatever_their_type(
    tmp_path: Path,
) -> None:
    note = tmp_path / "note.md"
    note.write_text("A short note about the Nile river.", encoding="utf-8")
    other = tmp_path / "data.csv"
    other.write_text("a,b", encoding="utf-8")
    report = read_paths([note, note, other])
    assert [c.doc_id for c in report.chunks] == ["note.md#0", "data.csv#0"]
    assert report.skipped == []
    with pytest.raises(FileNotFoundError, match="no such file"):
        read_paths([tmp_path / "missing.txt"])


def test_jsonl_records_are_validated_line_by_line(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text(
        '{"id": 7, "page_content": "Seven is a number worth indexing."}\n'
        "[1, 2]\n"
        '{"text": ""}\n'
        '{"text": "ok text", "metadata": [1]}\n'
        "\n"
        '{"text": "A document without an id at all."}\n',
        encoding="utf-8",
    )
    report = read_paths([path])
    assert [c.doc_id for c in report.chunks] == ["7", "r.jsonl:6"]
    assert [s.path for s in report.skipped] == [f"{path}:2", f"{path}:3", f"{path}:4"]


def test_hashing_embedder_is_normalised_and_arabic_aware() -> None:
    embed = HashingEmbedder()
    a, b = embed("التعلم الآلي"), embed("تعلم آلي")
    assert np.isclose(np.linalg.norm(a), 1.0)
    assert float(a @ b) > 0.6  # article stripped, alef forms unified
    assert float(embed("مَدْرَسَة") @ embed("مدرسه")) == pytest.approx(1.0)
    assert float(embed("machine learning") @ embed("gardening tips")) < 0.3
    assert not embed("").any()
    assert embed.embed_batch(["a", "b"]).shape == (2, 256)
    assert embed.embed_batch([]).shape == (0, 256)


def test_hashing_embedder_params_round_trip() -> None:
    embed = HashingEmbedder(dim=64, ngram=4, ngram_weight=0.25)
    again = HashingEmbedder.from_params(embed.params())
    assert np.array_equal(embed("Nile delta"), again("Nile delta"))
    with pytest.raises(ValueError, match="positive"):
        HashingEmbedder(dim=0)
