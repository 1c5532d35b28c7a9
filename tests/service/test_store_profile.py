"""What an index store records about how it was built, read back by every replica.

Replicas of different versions read one store, so the record stays readable
both ways: a setting left at its default is not written (an older replica
reads the record as before), and a key this version does not know is a
one-line error naming it (a newer writer's key may change what the vectors
are, so reading past it would serve wrong results).
"""

from __future__ import annotations

from typing import Any

import pytest

from zerda_async.apps.server import PROFILE_SETTING, StoreProfile, read_profile
from zerda_async.errors import IndexFormatError

pytestmark = pytest.mark.anyio


class _Settings:
    """The two calls :func:`read_profile` makes of an index store, over a dict."""

    def __init__(self, settings: dict[str, Any], count: int = 1) -> None:
        self.settings = settings
        self.chunks = count

    async def setting(self, key: str) -> Any:
        return self.settings.get(key)

    async def count(self) -> int:
        return self.chunks


def test_the_store_profile_records_the_option() -> None:
    built = StoreProfile.built_with("recommended", "none", None)
    assert built.embed_heading is False
    assert built.config().retriever.embed_heading is False
    titled = StoreProfile("recommended", "multilingual", "e5", {"kind": "e5"}, True)
    assert titled.config().retriever.embed_heading is True
    assert "heading" in titled.describe() and "heading" not in built.describe()


def test_the_option_is_written_only_when_on() -> None:
    built = StoreProfile.built_with("recommended", "none", None)
    # The record an older replica reads: the fields it knows, and nothing more.
    assert set(built.record()) == {"profile", "text_analyzer", "embedder", "embedder_params"}
    titled = StoreProfile("recommended", "multilingual", "e5", {"kind": "e5"}, True)
    assert titled.record()["embed_heading"] is True


async def test_records_read_back_as_written() -> None:
    built = StoreProfile.built_with("documented", "hashing", None)
    titled = StoreProfile("recommended", "multilingual", "e5", {"kind": "e5"}, True)
    for profile in (built, titled):
        store = _Settings({PROFILE_SETTING: profile.record()})
        assert await read_profile(store) == profile
    assert await read_profile(_Settings({}, count=0)) is None


async def test_a_key_from_a_newer_writer_is_a_one_line_error_naming_it() -> None:
    record = {**StoreProfile.built_with("recommended", "none", None).record(), "future": 1}
    with pytest.raises(IndexFormatError, match="'future'") as caught:
        await read_profile(_Settings({PROFILE_SETTING: record}))
    assert "\n" not in str(caught.value)
