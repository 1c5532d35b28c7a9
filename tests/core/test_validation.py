"""ContextEngineConfig.validate() and recommended(): bad values name their field."""

from __future__ import annotations

from typing import Any

import pytest

from zerda_async.core.config import ContextEngineConfig, config_from_json, config_to_json
from zerda_async.errors import ConfigError

BAD: list[tuple[str, str, Any]] = [
    ("composer", "template", "englsh"),
    ("composer", "packing", "greedy"),
    ("composer", "relevance_floor", 2.0),
    ("ranking", "weight_recency", -0.1),
    ("ranking", "weight_vector_score", float("nan")),
    ("retriever", "metadata_weight", float("inf")),
    ("retriever", "keyword_weight", "0.3"),
    ("retriever", "min_vector_score", float("nan")),
    ("guard", "relevance_threshold", float("-inf")),
    ("query_analyzer", "budget_low", 0),
    ("query_analyzer", "budget_high", -100),
    ("composer", "max_context_length", 0),
    ("retriever", "top_k", True),
    ("cache", "ttl_seconds", 0),
    ("guard", "min_context_length", -1),
    ("retriever", "embed_heading", "no"),  # a truthy string would turn headings on
    ("retriever", "embed_heading", 1),
]


@pytest.mark.parametrize(("section", "field", "value"), BAD)
def test_validate_names_the_bad_field(section: str, field: str, value: Any) -> None:
    config = ContextEngineConfig()
    setattr(getattr(config, section), field, value)
    with pytest.raises(ConfigError, match=rf"^{section}\.{field} "):
        config.validate()


@pytest.mark.parametrize(("section", "field", "value"), BAD[:1] + BAD[3:])
def test_documented_construction_still_accepts_them(section: str, field: str, value: Any) -> None:
    # The documented package validates nothing; only validate() rejects.
    config = ContextEngineConfig()
    setattr(getattr(config, section), field, value)
    assert getattr(getattr(config, section), field) is value


# Unusual but not errors: weights are relative, thresholds past a score's range
# switch their check always on or off (as in the documented package).
UNUSUAL: list[tuple[str, str, Any]] = [
    ("retriever", "metadata_weight", 2.0),
    ("retriever", "vector_weight", 0),
    ("ranking", "weight_vector_score", 1.5),
    ("ranking", "weight_position", 10),
    ("retriever", "min_vector_score", 2.0),
    ("query_analyzer", "arabic_threshold", 1.2),
    ("filter_cfg", "semantic_sim_threshold", -0.5),
    ("guard", "relevance_threshold", 3),
]


@pytest.mark.parametrize(("section", "field", "value"), UNUSUAL)
def test_validate_accepts_what_is_merely_unusual(section: str, field: str, value: Any) -> None:
    config = ContextEngineConfig()
    setattr(getattr(config, section), field, value)
    assert config.validate() is config


def test_length_window_must_not_be_inverted() -> None:
    config = ContextEngineConfig()
    config.filter_cfg.min_chunk_length = 5000
    with pytest.raises(ConfigError, match=r"filter_cfg\.min_chunk_length"):
        config.validate()


@pytest.mark.parametrize("template", ["arabic", "english", "minimal", "structured", "auto"])
def test_every_template_name_validates(template: str) -> None:
    config = ContextEngineConfig()
    config.composer.template = template
    assert config.validate() is config


def test_documented_defaults_validate_and_keep_documented_packing() -> None:
    config = ContextEngineConfig().validate()
    assert (config.composer.packing, config.composer.relevance_floor) == ("documented", 0.0)


def test_recommended_packing_settings() -> None:
    config = ContextEngineConfig.recommended()
    assert config.composer.template == "auto"
    assert config.composer.packing == "fit"
    assert 0 < config.composer.relevance_floor < 1
    budgets = config.query_analyzer
    assert 0 < budgets.budget_low < budgets.budget_medium < budgets.budget_high
    # A fresh profile each call: mutating one does not change the next.
    config.composer.template = "english"
    assert ContextEngineConfig.recommended().composer.template == "auto"
    assert config_from_json(config_to_json(ContextEngineConfig.recommended())) == (
        ContextEngineConfig.recommended()
    )


@pytest.mark.parametrize("value", ["sometimes", "Refers_back", "", None, True, 1])
def test_history_enrichment_must_be_a_known_mode(value: Any) -> None:
    config = ContextEngineConfig()
    config.history_enrichment = value
    with pytest.raises(ConfigError, match=r"^history_enrichment must be one of "):
        config.validate()


def test_history_enrichment_modes_and_profiles() -> None:
    assert ContextEngineConfig().history_enrichment == "always"  # documented
    assert ContextEngineConfig.recommended().history_enrichment == "refers_back"
    for mode in ("always", "refers_back", "never"):
        config = ContextEngineConfig()
        config.history_enrichment = mode
        assert config_from_json(config_to_json(config.validate())).history_enrichment == mode
    with pytest.raises(ConfigError, match="history_enrichment"):
        config_from_json('{"history_enrichment": 3}')
