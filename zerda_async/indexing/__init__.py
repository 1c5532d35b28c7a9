"""The indexing layer: the engine's in-process index, its updates and its persistence.

* :class:`LiveIndex` — corpus, keyword and vector indexes and the retrievers over them;
* :class:`IndexLifecycle` — builds, updates, saves and restores the engine's index,
  ordered among requests through the async runner's barriers (which is why this
  layer sits above ``pipeline``);
* :func:`save_index` / :func:`load_index` — the atomic, verified directory format.

Internal: the public way in is ``AsyncContextEngine.index/add/update/remove/save/load``.
"""

from zerda_async.indexing._format import (
    CURRENT_FILE,
    FORMAT_NAME,
    FORMAT_VERSION,
    MANIFEST_FILE,
    FileEntry,
    Manifest,
    SavedIndex,
    StoredChunk,
)
from zerda_async.indexing._lifecycle import IndexLifecycle
from zerda_async.indexing._live_index import LiveIndex, build_live_index
from zerda_async.indexing._persistence import load_index, save_index

__all__ = [
    "CURRENT_FILE",
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "MANIFEST_FILE",
    "FileEntry",
    "IndexLifecycle",
    "LiveIndex",
    "Manifest",
    "SavedIndex",
    "StoredChunk",
    "build_live_index",
    "load_index",
    "save_index",
]
