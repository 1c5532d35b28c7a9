"""Configuration records: documented defaults, mutability, legacy properties, JSON/TOML."""

from __future__ import annotations

import msgspec
import pytest

from zerda_async.core.config import (
    ConfigError,
    ContextConfig,
    ContextEngineConfig,
    config_from_json,
    config_from_toml,
    config_to_json,
)


def test_documented_defaults_and_sections() -> None:
    cfg = ContextEngineConfig()
    assert (cfg.query_analyzer.budget_low, cfg.query_analyzer.budget_medium) == (800, 2000)
    assert cfg.query_analyzer.budget_high == 4000 and cfg.query_analyzer.arabic_threshold == 0.3
    assert (cfg.retriever.top_k, cfg.retriever.use_metadata, cfg.retriever.min_vector_score) == (
        20,
        False,
        0.0,
    )
    assert cfg.filter_cfg.noise_patterns == [
        r"^\s*$",
        r"^[\.\-\_\*]{5,}$",
        r"^\s*(page|صفحة)\s*\d+\s*$",
    ]
    assert cfg.ranking.max_chunks_to_rank == 15 and cfg.composer.separator == "\n---\n"
    assert (cfg.guard.min_context_length, cfg.cache.max_size, cfg.cache.ttl_seconds) == (
        10,
        256,
        300,
    )
    assert (cfg.language, cfg.enable_adaptive, cfg.multi_turn) == ("auto", True, True)


def test_list_defaults_are_not_shared_between_instances() -> None:
    first, second = ContextEngineConfig(), ContextEngineConfig()
    first.query_analyzer.custom_entities.append("RAG")
    first.filter_cfg.noise_patterns.append("x")
    assert second.query_analyzer.custom_entities == []
    assert len(second.filter_cfg.noise_patterns) == 3


def test_legacy_properties_quirks() -> None:
    cfg = ContextEngineConfig()
    cfg.max_context_length = 1234
    assert cfg.composer.max_context_length == 1234 == cfg.max_context_length
    cfg.composer.template = "english"
    assert cfg.template == "english" and cfg.separator == "\n---\n"
    with pytest.raises(AttributeError):
        cfg.separator = "x"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        cfg.template = "x"  # type: ignore[misc]
    assert ContextConfig is ContextEngineConfig
    field_names = [f.name for f in msgspec.structs.fields(ContextEngineConfig)]
    assert "max_context_length" not in field_names and field_names[2] == "filter_cfg"


def test_config_records_are_unhashable_like_dataclasses() -> None:
    with pytest.raises(TypeError):
        hash(ContextEngineConfig())


def test_json_round_trip_keeps_every_field() -> None:
    cfg = ContextEngineConfig()
    cfg.composer.template = "structured"
    cfg.ranking.weight_position = 0.5
    assert config_from_json(config_to_json(cfg)) == cfg


def test_partial_documents_keep_defaults() -> None:
    cfg = config_from_toml('[composer]\ntemplate = "minimal"\n[cache]\nenabled = false\n')
    assert cfg.composer.template == "minimal" and cfg.cache.enabled is False
    assert cfg.composer.separator == "\n---\n" and cfg.cache.max_size == 256
    assert config_from_json("{}") == ContextEngineConfig()


@pytest.mark.parametrize(
    ("document", "named"),
    [
        ('{"composer": {"templat": "english"}}', "composer.templat"),
        ('{"composr": {}}', "composr"),
        ('{"composer": {"template": 3}}', "$.composer.template"),
        ('{"ranking": {"max_chunks_to_rank": "many"}}', "$.ranking.max_chunks_to_rank"),
    ],
)
def test_bad_fields_are_named(document: str, named: str) -> None:
    with pytest.raises(ConfigError) as info:
        config_from_json(document)
    assert named in str(info.value)


def test_malformed_documents_raise_config_error() -> None:
    with pytest.raises(ConfigError, match="malformed JSON"):
        config_from_json("{not json")
    with pytest.raises(ConfigError, match="malformed TOML"):
        config_from_toml("[composer\n")
    with pytest.raises(ConfigError, match=r"cache\.sizee"):
        config_from_toml("[cache]\nsizee = 1\n")
