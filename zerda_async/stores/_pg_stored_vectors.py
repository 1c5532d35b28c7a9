"""Reading back the vectors an index store holds, so re-indexing reuses them.

``zerda index --store`` embeds only chunks whose text the store does not
already hold a vector for (the store records which embedder built its
vectors, and writing with another one is refused, so they are comparable).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = ["stored_vectors"]


async def stored_vectors(
    store: Any, doc_ids: Sequence[str]
) -> list[tuple[str, NDArray[np.float32]]]:
    """``(text, vector)`` of the live chunks of ``doc_ids`` that have a vector."""
    if not doc_ids:
        return []
    async with store._pg.connection() as conn:
        cur = await conn.execute(
            f"SELECT c.text, v.embedding FROM {store.prefix}chunks c"
            f" JOIN {store.prefix}vectors v ON v.pos = c.pos"
            " WHERE c.doc_id = ANY(%s)",
            (list(doc_ids),),
        )
        rows = await cur.fetchall()
    # pgvector's adapter returns Vector objects (to_numpy), a text form without it.
    return [(str(text), _array(vector)) for text, vector in rows]


def _array(vector: Any) -> NDArray[np.float32]:
    to_numpy = getattr(vector, "to_numpy", None)
    if to_numpy is not None:
        return np.asarray(to_numpy(), dtype=np.float32)
    if isinstance(vector, str):
        return np.asarray(vector.strip("[]").split(","), dtype=np.float32)
    return np.asarray(vector, dtype=np.float32)
