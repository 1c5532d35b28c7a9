"""Arabic PDFs read in reading order, so Arabic questions find the same chunks as in a .txt."""

from __future__ import annotations

import difflib
from pathlib import Path

from support.documents import write_pdf

from sync_api import ContextEngine
from zerda_async import ContextEngineConfig
from zerda_async.apps import read_paths
from zerda_async.readers import normalise_presentation_forms, read_document, visual_to_logical

# Arabic with what trips extraction up: lam-alef ligatures (لا، الأطلسي), numbers
# and number punctuation, a Latin word with a digit, brackets, Arabic punctuation.
PARAGRAPHS = [
    "تقع مدينة الرباط على ساحل المحيط الأطلسي وهي عاصمة المغرب منذ عام 1912.",
    "يبلغ عدد سكانها نحو 580 ألف نسمة، ويعمل كثير منهم في الإدارة والتعليم.",
    "تأسست جامعة محمد الخامس (أقدم جامعة حديثة في البلاد) سنة 1957 في حي أكدال.",
    "يستخدم المطورون في المدينة لغة Python 3 لبناء تطبيقات الويب والخدمات.",
    "تبلغ المسافة بين الرباط والدار البيضاء حوالي 87 كيلومترا بالقطار السريع.",
    "لا يزال سور الأوداية شاهدا على تاريخ المدينة العريق.",
]
QUESTIONS = [
    "كم عدد سكان الرباط؟",
    "متى تأسست جامعة محمد الخامس؟",
    "ما هي المسافة بين الرباط والدار البيضاء؟",
    "ما هي اللغة التي يستخدمها المطورون؟",
]


def _in_order(written: str, read: str) -> float:
    a, b = written.split(), read.split()
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    return sum(m.size for m in matcher.get_matching_blocks()) / len(a)


def test_arabic_words_come_back_in_reading_order(tmp_path: Path) -> None:
    path = write_pdf(tmp_path / "rabat.pdf", [PARAGRAPHS[:3], PARAGRAPHS[3:]], arabic=True)
    document = read_document(path)
    assert _in_order(" ".join(PARAGRAPHS), document.text) == 1.0
    for paragraph in PARAGRAPHS:  # each line as written, ligatures and numbers included
        assert " ".join(paragraph.split()) in " ".join(document.text.split())
    assert document.page_at(document.text.index("Python 3")) == 2


def test_presentation_forms_become_letters_after_the_line_is_reordered() -> None:
    # "لا" drawn as the ligature U+FEFB, then "سلام" in isolated/final forms, visually.
    visual = "\ufee1\ufe8e\ufee0\ufeb3 \ufefb"
    assert normalise_presentation_forms(visual_to_logical(visual)) == "لا سلام"
    # A number inside an Arabic line keeps its own order; a Latin line is untouched.
    assert visual_to_logical("2019 ماع") == "عام 2019"
    assert visual_to_logical("Rabat 2019") == "Rabat 2019"


def test_an_arabic_question_finds_the_same_chunks_in_the_pdf_as_in_a_text_file(
    tmp_path: Path,
) -> None:
    (tmp_path / "pdf").mkdir()
    (tmp_path / "txt").mkdir()
    write_pdf(tmp_path / "pdf" / "rabat.pdf", [PARAGRAPHS], arabic=True)
    (tmp_path / "txt" / "rabat.txt").write_text("\n\n".join(PARAGRAPHS), encoding="utf-8")
    found = {}
    for kind in ("pdf", "txt"):
        report = read_paths([tmp_path / kind], max_chars=120)
        engine = ContextEngine(ContextEngineConfig.recommended())
        engine.index(report.chunks)
        found[kind] = [
            [" ".join(sc.text.split()) for sc in engine.run(q, record_turn=False).chunks_used]
            for q in QUESTIONS
        ]
    assert found["pdf"] == found["txt"]
    assert all(found["pdf"])
