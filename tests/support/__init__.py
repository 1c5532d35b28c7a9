"""Helpers shared by the test folders (import the modules: ``from support.chunks import Chunk``).

* :mod:`support.chunks` — the one chunk type of the tests, and bare duck-typed objects.
* :mod:`support.corpus` — the bilingual corpus, queries and source-quality map.
* :mod:`support.embedding` — the golden cases' deterministic embedder and its batch form.
* :mod:`support.engines` — checks on a running async engine (idle, polling).

A helper used inside one folder only stays in that folder.
"""
