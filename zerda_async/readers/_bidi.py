"""Arabic text drawn in a PDF, back in reading (logical) order.

A PDF places glyphs where they are drawn: an Arabic line is laid out right
to left, its words' shaped glyphs stored in visual order, and often as
presentation forms (the initial, medial, final and isolated shapes of
U+FB50–U+FEFF) instead of the letters themselves.  Extracted by position, a
line reads left to right, which reverses the Arabic and leaves the numbers
and Latin words inside it as they were drawn.

:func:`visual_to_logical` undoes the drawing for the simple, common case of
one embedding level (an Arabic line with Latin words and numbers, or a Latin
line with Arabic words): in a right-to-left line the whole line is reversed,
then each left-to-right run (Latin letters, digits, and the punctuation
between them) is turned back; in a left-to-right line only the Arabic runs
are reversed.  Brackets are left as they are: shaping engines map a mirrored
bracket glyph back to the character typed.

A ligature is one glyph that maps to several letters in reading order: the
lam-alef of every Arabic font.  Reversing a line character by character turns
its "lam alef" into "alef lam", which is also how the article "al-" reads, so
the characters alone cannot tell them apart; :func:`repair_ligatures` checks
each word against the words pypdf's stream-order extraction produced (which
keeps a glyph's letters together) and takes the spelling found there.
:func:`normalise_presentation_forms` maps presentation forms to letters
(NFKC on those code points only, after the reordering: a lam-alef ligature
becomes lam then alef).
"""

from __future__ import annotations

import re
import unicodedata

__all__ = [
    "has_arabic",
    "is_right_to_left",
    "logical_lines",
    "normalise_presentation_forms",
    "repair_ligatures",
    "visual_to_logical",
]

_ARABIC_LETTERS = "\u0600-\u065f\u066e-\u06ef\u06fa-\u06ff\u0750-\u077f\ufb50-\ufdff\ufe70-\ufefe"
_ARABIC = re.compile(f"[{_ARABIC_LETTERS}]")
_LATIN = re.compile(r"[A-Za-z\u00c0-\u024f]")
_PRESENTATION = re.compile("[\ufb50-\ufdff\ufe70-\ufeff]+")
# A left-to-right run: starts and ends with a Latin letter or a digit (European,
# Arabic-Indic or extended), with spaces and number punctuation in between.
_LTR_CHAR = r"A-Za-z\u00c0-\u024f0-9\u0660-\u0669\u06f0-\u06f9"
_LTR_RUN = re.compile(f"[{_LTR_CHAR}](?:[{_LTR_CHAR} .,:/%+\\-_'@#&]*[{_LTR_CHAR}])?")
# An Arabic run inside a left-to-right line: Arabic letters (and marks), with the
# spaces and punctuation between them.
_RTL_CHAR = _ARABIC_LETTERS + "\u064b-\u065f"
_RTL_RUN = re.compile(f"[{_RTL_CHAR}](?:[{_RTL_CHAR} ،؛.]*[{_RTL_CHAR}])?")
_ALEFS = "\u0627\u0623\u0625\u0622"
_LAM = "\u0644"
# An alef then a lam: how a lam-alef ligature (one glyph, mapped to "lam alef")
# reads once its line is reversed character by character.
_ALEF_LAM = re.compile(f"[{_ALEFS}]{_LAM}")
_WORD = re.compile(r"[^\W\d_]+")


def has_arabic(text: str) -> bool:
    """Whether ``text`` holds an Arabic letter (presentation forms included)."""
    return _ARABIC.search(text) is not None


def is_right_to_left(line: str) -> bool:
    """A line whose Arabic letters are at least as many as its Latin ones (and not zero)."""
    arabic = len(_ARABIC.findall(line))
    return arabic > 0 and arabic >= len(_LATIN.findall(line))


def visual_to_logical(line: str) -> str:
    """One line read in visual order (left to right on the page), in reading order."""
    if not has_arabic(line):
        return line
    if is_right_to_left(line):
        reversed_line = line[::-1]
        return _LTR_RUN.sub(_turn_back, reversed_line)
    return _RTL_RUN.sub(lambda m: m.group(0)[::-1], line)


def _turn_back(match: re.Match[str]) -> str:
    """A left-to-right run of a reversed line, in its own order again.

    Numbers alone, separated by spaces, stay separate runs (a right-to-left
    line orders ``12 - 15`` from the right); a run with a Latin word is one.
    """
    run = match.group(0)
    if _LATIN.search(run) or " " not in run:
        return run[::-1]
    return " ".join(part[::-1] for part in run.split(" "))


def normalise_presentation_forms(text: str) -> str:
    """``text`` with Arabic presentation forms (U+FB50–U+FEFF) replaced by NFKC letters."""
    return _PRESENTATION.sub(lambda m: unicodedata.normalize("NFKC", m.group(0)), text)


def _spellings(word: str) -> list[str]:
    """``word`` with each alef-lam pair read either way (at most 2**4 spellings)."""
    found = [m.start() for m in _ALEF_LAM.finditer(word)][:4]
    out = []
    for mask in range(1 << len(found)):
        chars = list(word)
        for bit, at in enumerate(found):
            if mask >> bit & 1:
                chars[at], chars[at + 1] = chars[at + 1], chars[at]
        out.append("".join(chars))
    return out


def repair_ligatures(text: str, known_words: set[str]) -> str:
    """``text`` with each word spelt as in ``known_words`` when a lam-alef swap makes it so."""

    def repair(match: re.Match[str]) -> str:
        word = match.group(0)
        if word in known_words or not _ALEF_LAM.search(word):
            return word
        return next((w for w in _spellings(word) if w in known_words), word)

    return _WORD.sub(repair, text)


def logical_lines(visual: str, stream_text: str = "") -> str:
    """Every line of ``visual`` in reading order, layout padding collapsed to one space.

    ``stream_text`` is the same page extracted in stream order, whose words
    spell ligatures right (see :func:`repair_ligatures`).
    """
    known = set(_WORD.findall(normalise_presentation_forms(stream_text)))
    lines = []
    for line in visual.split("\n"):
        squeezed = " ".join(line.split())
        logical = normalise_presentation_forms(visual_to_logical(squeezed))
        lines.append(repair_ligatures(logical, known) if known else logical)
    return "\n".join(lines)
