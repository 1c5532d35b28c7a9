"""Saving and loading an index as a directory: atomic saves, verified, memory-mapped loads.

Layout of an index directory::

    <path>/CURRENT                  the name of the current generation (one line)
    <path>/index-<version>-<tag>/   one complete generation:
        manifest.json               format name and version, corpus version,
                                    counts, dims, dtype, every file's size and CRC-32
        chunks.msgpack              chunk records (doc_id, text, metadata, source)
        vocabulary.msgpack          BM25 terms, in term-id order
        doc_lengths.npy             tokens per chunk
        postings_offsets.npy        CSR postings: term -> slice of docs / tfs
        postings_docs.npy
        postings_tfs.npy
        vectors.npy                 normalised embeddings (only with vectors)
        config.json                 the engine configuration
        sources.json                the source-quality map

**Atomic saves.** A save writes a new generation into a temporary directory
(every file fsynced), renames it into place, and only then replaces
``CURRENT`` with ``os.replace``.  A crash or a full disk at any point leaves
``CURRENT`` naming the previous, complete generation, which is deleted only
after the switch.  Files other than these (``zerda-cli.json`` of the command
line, say) are left alone.

**Verified loads.** Every file's size and CRC-32 are checked against the
manifest, then every array's dtype, shape and cross-references, before
anything is built; any problem raises :class:`~zerda_async.errors.IndexFormatError`
naming the file.  Arrays are memory-mapped (``numpy.load(mmap_mode="r")``),
so loading a large index costs reading the chunk records, not copying vectors.

Chunks come back as :class:`StoredChunk` records.  Metadata goes through
msgpack: tuples come back as lists, and values msgpack cannot encode make the
save fail with :class:`TypeError`.
"""

from __future__ import annotations

# The format's names and records live in ._format; the package re-exports them
# (the one place that does), this module only the two operations.
from zerda_async.indexing._reader import load_index
from zerda_async.indexing._writer import save_index

__all__ = ["load_index", "save_index"]
