"""Store URLs as they may be shown: in messages, logs and the service's health answer."""

from __future__ import annotations

import re

__all__ = ["redact"]

_PASSWORD = re.compile(r"(://[^:/@]*:)[^@]*@")


def redact(url: str) -> str:
    """``url`` without its password."""
    return _PASSWORD.sub(r"\1***@", url)
