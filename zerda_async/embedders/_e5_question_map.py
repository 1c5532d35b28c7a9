"""multilingual-e5-small's map for Arabic questions (``core.question_map``; ``docs/hybrid.md``).

``E5_QUESTION_MAP`` moves the centred vector of an Arabic question part of the
way toward the vector of its English translation: a ridge regression on
XQuAD's parallel questions of the tune half of the public sets (articles of
even index), the recipe chosen by cross-validation inside that half, cut to
its 64 largest directions.  ``bench/bench_question_map.py --write`` fits it
and stores it in ``data/e5_question_map.npz`` (float32 tables ``u`` and
``v``, 384 x 64); its held-out figures are in ``bench/README.md``.
``E5_DIRECTION`` carries it; ``retriever.question_map`` applies it.
"""

from __future__ import annotations

from importlib import resources

import numpy as np

from zerda_async.core.question_map import QuestionMap

__all__ = ["E5_QUESTION_MAP", "load_question_map"]

_FILE = ("data", "e5_question_map.npz")


def load_question_map() -> QuestionMap:
    """The map stored beside this module (module notes).

    Raises :class:`RuntimeError` naming the file when it is missing or
    unreadable: the package was installed without its data (reinstall it).
    """
    stored = resources.files(__package__).joinpath(*_FILE)
    try:
        with stored.open("rb") as handle, np.load(handle, allow_pickle=False) as tables:
            return QuestionMap("ar", tables["u"], tables["v"])
    except (OSError, KeyError, ValueError) as exc:
        raise RuntimeError(
            f"zerda_async's data file {stored} is missing or damaged ({exc}): reinstall the package"
        ) from exc


E5_QUESTION_MAP = load_question_map()
"""multilingual-e5-small's map for Arabic questions (rank 64)."""
