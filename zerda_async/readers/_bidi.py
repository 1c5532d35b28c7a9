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
    "rejoin_split_words",
    "repair_ligatures",
    "visual_to_logical",
]

_ARABIC_LETTERS = "\u0600-\u065f\u066e-\u06ef\u06fa-\u06ff\u0750-\u077f\ufb50-\ufdff\ufe70-\ufefe"
_ARABIC = re.compile(f"[{_ARABIC_LETTERS}]")
_LATIN = re.compile(r"[A-Za-z\u00c0-\u024f]")
_PRESENTATION = re.compile("[\ufb50-\ufdff\ufe70-\ufeff]+")
# Runs over a line's bidi classes (one letter per character, see _classes): a
# left-to-right run starts and ends with a strong left-to-right letter (L) or a
# digit (N), with spaces (S) and other neutrals (O) inside; a right-to-left run
# the same with right-to-left letters (R).
_LTR_RUN = re.compile(r"T*[LN](?:[LNSOCT]*[LN])?T*")
_RTL_RUN = re.compile(r"R(?:[RSOCT]*R)?")
# A number as the bidi algorithm keeps it together (rules W4, W5): digits with
# single separators (C: "1.002.000", "10:30", "12-15") and terminators (T:
# "5%") between or around them.
_NUMBER = re.compile(r"T*N(?:[NT]|C(?=[NT]))*")
_ALEFS = "\u0627\u0623\u0625\u0622"
_LAM = "\u0644"
# An alef then a lam: how a lam-alef ligature (one glyph, mapped to "lam alef")
# reads once its line is reversed character by character.
_ALEF_LAM = re.compile(f"[{_ALEFS}]{_LAM}")
_WORD = re.compile(r"(?:[^\W\d_]|[\u064b-\u065f\u0670])+")
_CLASS = {
    "L": "L", "R": "R", "AL": "R", "EN": "N", "AN": "N", "WS": "S",
    "CS": "C", "ES": "C", "ET": "T",
}  # fmt: skip


def _classes(line: str) -> str:
    """One letter per character: L, R, N (a digit), C (a number separator), T (a number
    terminator such as ``%``), S (a space), O (anything else).

    A combining mark takes the class of the letter next to it, so that a run
    of letters with their marks is one run.
    """
    out: list[str] = []
    for ch in line:
        bidi = unicodedata.bidirectional(ch)
        out.append(_CLASS.get(bidi, "M" if bidi == "NSM" else "O"))
    for i, cls in enumerate(out):
        if cls == "M":
            before = out[i - 1] if i else "O"
            out[i] = before if before in "LR" else "O"
    return "".join(out)


def has_arabic(text: str) -> bool:
    """Whether ``text`` holds an Arabic letter (presentation forms included)."""
    return _ARABIC.search(text) is not None


def is_right_to_left(line: str) -> bool:
    """A line whose Arabic letters are at least as many as its Latin ones (and not zero)."""
    arabic = len(_ARABIC.findall(line))
    return arabic > 0 and arabic >= len(_LATIN.findall(line))


def _reverse_numbers(run: str, kinds: str) -> str:
    """``run`` with each number in it reversed in place (see ``_NUMBER``)."""
    out, at = [], 0
    for match in _NUMBER.finditer(kinds):
        out.append(run[at : match.start()])
        out.append(run[match.start() : match.end()][::-1])
        at = match.end()
    out.append(run[at:])
    return "".join(out)


def _reverse_runs(line: str, runs: re.Pattern[str], split_numbers: bool) -> str:
    """``line`` with each run of ``runs`` (over its classes) reversed in place."""
    classes = _classes(line)
    out, at = [], 0
    for match in runs.finditer(classes):
        out.append(line[at : match.start()])
        run, kinds = line[match.start() : match.end()], match.group(0)
        if split_numbers and "L" not in kinds:
            # Numbers alone are runs of their own: a right-to-left line orders
            # "12 و 15" or "1917–1923" from the right; a run with a word is one.
            out.append(_reverse_numbers(run, kinds))
        else:
            out.append(run[::-1])
        at = match.end()
    out.append(line[at:])
    return "".join(out)


def visual_to_logical(line: str) -> str:
    """One line read in visual order (left to right on the page), in reading order."""
    if not has_arabic(line):
        return line
    if is_right_to_left(line):
        return _reverse_runs(line[::-1], _LTR_RUN, split_numbers=True)
    return _reverse_runs(line, _RTL_RUN, split_numbers=False)


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


def _known_spelling(word: str, known_words: set[str]) -> str | None:
    """The spelling of ``word`` (lam-alef read either way) found in ``known_words``."""
    return next((w for w in _spellings(word) if w in known_words), None)


def repair_ligatures(text: str, known_words: set[str]) -> str:
    """``text`` with each word spelt as in ``known_words`` when a lam-alef swap makes it so."""

    def repair(match: re.Match[str]) -> str:
        word = match.group(0)
        if word in known_words or not _ALEF_LAM.search(word):
            return word
        return _known_spelling(word, known_words) or word

    return _WORD.sub(repair, text)


def _core(token: str) -> str:
    """``token`` without the punctuation around it."""
    found = _WORD.search(token)
    return found.group(0) if found else ""


def rejoin_split_words(line: str, known_words: set[str]) -> str:
    """``line`` with a word that layout cut in two (at a wide mark) made one again.

    Two neighbours separated by one space are joined when together they are
    a word of ``known_words`` (lam-alef read either way) and one of them alone
    is not.
    """
    out: list[str] = []
    for token in line.split(" "):
        if out and token:
            left, right = _core(out[-1]), _core(token)
            joined = _core(out[-1] + token)
            alone = left in known_words and right in known_words
            if left and right and joined == left + right and not alone:
                spelt = _known_spelling(joined, known_words)
                if spelt is not None:
                    out[-1] = (out[-1] + token).replace(joined, spelt)
                    continue
        out.append(token)
    return " ".join(out)


def logical_lines(visual: str, stream_text: str = "") -> str:
    """Every line of ``visual`` in reading order, layout padding collapsed to one space.

    ``stream_text`` is the same page extracted in stream order, whose words
    spell ligatures right and are never cut at a mark (see
    :func:`repair_ligatures` and :func:`rejoin_split_words`).  The result is
    NFC: the order of several marks on one letter follows Unicode's canonical
    order whatever order the glyphs were drawn in.
    """
    stream = unicodedata.normalize("NFC", normalise_presentation_forms(stream_text))
    known = set(_WORD.findall(stream))
    lines = []
    for line in visual.split("\n"):
        squeezed = " ".join(line.split())
        logical = unicodedata.normalize(
            "NFC", normalise_presentation_forms(visual_to_logical(squeezed))
        )
        if known:
            logical = repair_ligatures(rejoin_split_words(logical, known), known)
        lines.append(logical)
    return "\n".join(lines)
