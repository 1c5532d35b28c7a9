"""Keyword evidence for the candidates keyword search cannot reach: another script's chunks.

Convex fusion adds each candidate's keyword evidence (its query coverage)
to its scaled cosine.  Keyword search matches words, so in a corpus of two
scripts only chunks in the question's script can have any: an Arabic
question's English answer, found by the vector search alone, starts behind
every Arabic chunk that shares the question's common words.  Over XQuAD's
Arabic questions and XQuAD en + ARCD the recommended profile ranked the
English answer below the e5 list alone (MRR@20 0.602 / 0.613 against 0.631
/ 0.636, tune / held-out; ``bench/README.md``, script-aware fusion).

With ``retriever.cross_script_evidence`` on, :func:`foreign_evidence`
gives such a chunk, in place of the evidence it cannot have, an imputed
one: the best keyword evidence among the question's-script hits times the
chunk's own scaled cosine.  Fusion cannot see the question, so the
question's script is the *home script*: the script
(:func:`~zerda_async.core.floor_model.script_of`) of the keyword hits that
hold the most keyword evidence.  A vector candidate of any other script is
*foreign*.  No keyword evidence, or no foreign candidate: nothing changes,
so a corpus in one script fuses exactly as without the option.

Only the candidates' texts, cosines and keyword evidence are read, all of
which every placement (memory, a saved directory, an index store,
PostgreSQL) hands to the one fusion, so they stay alike.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..floor_model import script_of
from ..models import ScoredChunk

__all__ = ["foreign_evidence", "home_script", "script_of_chunk"]

_MEMO_LIMIT = 65_536
_memo: dict[str, str] = {}


def script_of_chunk(sc: ScoredChunk) -> str:
    """``script_of`` the chunk's text, remembered by content hash.

    ``script_of`` costs ~80 µs (two regular expressions over 600 characters)
    and a query fuses up to a hundred candidates, mostly the same ones from
    query to query, so the answer is kept; the memo is cleared when full,
    which only costs the next calls their scan.
    """
    key = sc.content_hash
    found = _memo.get(key)
    if found is None:
        if len(_memo) >= _MEMO_LIMIT:
            _memo.clear()
        found = _memo[key] = script_of(sc.text)
    return found


def home_script(keyword: Sequence[ScoredChunk], evidence: Sequence[float]) -> str | None:
    """The script whose keyword hits hold the most evidence; ``None`` when none holds any.

    Ties go to the script met first in the list (best first), so the answer
    depends on the list alone.
    """
    mass: dict[str, float] = {}
    for sc, value in zip(keyword, evidence, strict=True):
        script = script_of_chunk(sc)
        mass[script] = mass.get(script, 0.0) + value
    if not mass:
        return None
    home = max(mass, key=mass.__getitem__)
    return home if mass[home] > 0 else None


def foreign_evidence(
    vector: Sequence[ScoredChunk],
    cosine: Sequence[float],
    keyword: Sequence[ScoredChunk],
    evidence: Sequence[float],
) -> list[float] | None:
    """Keyword evidence each vector candidate gains (module notes), or ``None`` for none.

    ``cosine``: each vector candidate's min-max scaled cosine; ``evidence``:
    each keyword hit's evidence.  A foreign candidate's imputed evidence is
    ``best * cosine`` (``best``: the best home-script hit's evidence); it
    gains the part of that above what its own keyword hit already holds
    (0 when it was not a hit).  Every other candidate gains 0.
    """
    home = home_script(keyword, evidence)
    if home is None:
        return None
    foreign = [i for i, sc in enumerate(vector) if script_of_chunk(sc) != home]
    if not foreign:
        return None
    best = max(e for sc, e in zip(keyword, evidence, strict=True) if script_of_chunk(sc) == home)
    own: dict[str, float] = {}
    for sc, value in zip(keyword, evidence, strict=True):
        own.setdefault(sc.content_hash, value)  # a repeat counts at its first place
    gains = [0.0] * len(vector)
    for i in foreign:
        gains[i] = max(0.0, best * cosine[i] - own.get(vector[i].content_hash, 0.0))
    return gains
