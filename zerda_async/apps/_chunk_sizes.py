"""How ``zerda index`` sizes its chunks: bounds, the profiles' defaults, long documents.

The recommended profile cuts a file into chunks of at most 400 characters,
and a *long* file (at least :data:`~zerda_async.readers.LONG_DOCUMENT`
characters of text: a scientific article, a report) into chunks of at most
600: there a question's words and its answer are often a sentence or two
apart, which a 400-character cut separates (``bench/bench_long_chunks.py``:
COVID-QA's articles, recall@20 with e5 88.0% -> 90.5% on the tune half),
while short documents keep the size their relevance floor was measured on.
"""

from __future__ import annotations

import argparse

from zerda_async.apps._profiles import DEFAULT_PROFILE
from zerda_async.core.config import ContextEngineConfig
from zerda_async.errors import UsageError
from zerda_async.readers import LONG_DOCUMENT

__all__ = [
    "CHUNK_SIZES",
    "LONG_CHUNK_SIZES",
    "MAX_CHUNK",
    "MIN_CHUNK",
    "ChunkSizes",
    "check_chunk_size",
    "chunk_sizes",
    "describe_chunk_sizes",
]

# The chunk filter's length window (documented defaults): a chunk outside it is
# dropped at query time, so a chunk size outside it is refused up front.
_FILTER = ContextEngineConfig().filter_cfg

MIN_CHUNK = _FILTER.min_chunk_length

MAX_CHUNK = _FILTER.max_chunk_length

# Default --chunk-size by profile: a few chunks fit the recommended profile's
# smallest budget (3,000 characters); 800 is what the documented CLI always used.
CHUNK_SIZES = {"recommended": 400, "documented": 800}

# Default --long-chunk-size by profile (0: long files are cut like the others).
LONG_CHUNK_SIZES = {"recommended": 600, "documented": 0}

ChunkSizes = tuple[int, int]
"""(chunk size, long-document chunk size or 0)."""


def check_chunk_size(size: int, flag: str = "--chunk-size") -> None:
    """Refuse a chunk size outside the chunk filter's window (a ``UsageError`` naming ``flag``)."""
    if not MIN_CHUNK <= size <= MAX_CHUNK:
        raise UsageError(
            f"{flag} {size} is outside the chunk filter's window ({MIN_CHUNK}-{MAX_CHUNK} "
            "characters): its chunks would be dropped from every context"
        )


def chunk_sizes(args: argparse.Namespace, profile: str) -> ChunkSizes:
    """The chunk sizes of ``zerda index`` from its flags and the index's profile, checked.

    A ``--chunk-size`` given alone applies to every file, long ones too; the
    profile's long-document size applies when neither flag is given.
    """
    known = profile if profile in CHUNK_SIZES else DEFAULT_PROFILE
    size = args.chunk_size or CHUNK_SIZES[known]
    long_size = getattr(args, "long_chunk_size", None)
    if long_size is None:
        long_size = 0 if args.chunk_size else LONG_CHUNK_SIZES[known]
    check_chunk_size(size)
    if long_size:
        check_chunk_size(long_size, "--long-chunk-size")
    return size, long_size


def describe_chunk_sizes(sizes: ChunkSizes) -> str:
    """``chunks of at most N characters`` (and the long files' size, when they have one)."""
    size, long_size = sizes
    text = f"chunks of at most {size} characters"
    if long_size and long_size != size:
        text += f" ({long_size} in files of {LONG_DOCUMENT:,} characters or more)"
    return text
