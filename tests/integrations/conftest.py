"""A small bilingual corpus and engines over it, for the framework adapter tests."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import pytest

from sync_api import ContextEngine, ContextEngineConfig

# Haystack reports telemetry when a pipeline runs; tests stay off the network.
os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")


@dataclass
class Doc:
    """A chunk as a user would pass one."""

    doc_id: str
    text: str
    metadata: dict[str, Any] = field(default_factory=dict)


CORPUS = [
    Doc("rag-1", "Retrieval-augmented generation retrieves passages before the model answers."),
    Doc("rag-2", "Retrieval quality decides what the generation step can cite as a source."),
    Doc("bm25-1", "BM25 ranks retrieval candidates by term frequency and inverse frequency."),
    Doc("rrf-1", "Reciprocal rank fusion merges the ranked lists of several retrieval methods."),
    Doc("nile-1", "The Nile flows north through Egypt into the Mediterranean Sea."),
    Doc("coffee-1", "Arabic coffee is brewed with cardamom and served in small cups."),
    Doc("ml-ar-1", "التعلم الآلي فرع من الذكاء الاصطناعي يتعلم الأنماط من البيانات."),
]
QUERY = "What is retrieval in retrieval-augmented generation?"


def sync_engine() -> ContextEngine:
    """A sync facade engine over :data:`CORPUS` (keyword retrieval, English template, no cache)."""
    config = ContextEngineConfig()
    config.composer.template = "english"
    config.cache.enabled = False  # the adapters need the chunks of every run
    return ContextEngine(config).index(CORPUS)


@pytest.fixture
def engine() -> ContextEngine:
    """A fresh sync engine per test."""
    return sync_engine()
