"""Loading tokenizers from local files (blocking I/O: call at start-up, not per request)."""

from __future__ import annotations

import hashlib
import os
import tempfile
import threading
from pathlib import Path
from typing import Any

from zerda_async.core.config import LengthCounter
from zerda_async.core.counters import make_token_counter
from zerda_async.errors import TokenizerUnavailableError

__all__ = ["TIKTOKEN_FILES", "hf_token_counter", "tiktoken_cache_dir", "tiktoken_counter"]

_BLOB = "https://openaipublic.blob.core.windows.net/"
TIKTOKEN_FILES: dict[str, tuple[str, ...]] = {
    "cl100k_base": (_BLOB + "encodings/cl100k_base.tiktoken",),
    "o200k_base": (_BLOB + "encodings/o200k_base.tiktoken",),
    "p50k_base": (_BLOB + "encodings/p50k_base.tiktoken",),
    "p50k_edit": (_BLOB + "encodings/p50k_base.tiktoken",),
    "r50k_base": (_BLOB + "encodings/r50k_base.tiktoken",),
    "gpt2": (_BLOB + "gpt-2/encodings/main/vocab.bpe", _BLOB + "gpt-2/encodings/main/encoder.json"),
}
"""The files tiktoken reads for each encoding; it caches each one as ``sha1(url)``."""

# tiktoken reads its cache directory from the environment at load time only.
_ENV_LOCK = threading.Lock()


class _NoSpecials:
    """``encode`` without the special tokens a post-processor adds ([CLS], <s>, ...)."""

    def __init__(self, tokenizer: Any) -> None:
        self._tokenizer = tokenizer

    def encode(self, text: str, /) -> Any:
        return self._tokenizer.encode(text, add_special_tokens=False).ids


def hf_token_counter(
    path: str | os.PathLike[str], *, special_tokens: bool = False
) -> LengthCounter:
    """A counter of the tokens of the ``tokenizer.json`` at ``path`` (``tokenizers`` library).

    Special tokens added by the tokenizer's post-processor are not counted
    unless ``special_tokens=True`` (a chunk inside a context gets none).
    Raises :class:`TokenizerUnavailableError` when the file is missing and
    ``ValueError`` when it is not a tokenizer.
    """
    try:
        from tokenizers import Tokenizer
    except ImportError as exc:
        raise TokenizerUnavailableError(
            "hf_token_counter needs the 'tokenizers' extra: pip install 'zerda-async[tokenizers]'"
        ) from exc
    file = Path(path)
    if not file.is_file():
        raise TokenizerUnavailableError(f"{file}: no tokenizer.json there")
    try:
        tokenizer = Tokenizer.from_file(str(file))
    except Exception as exc:  # tokenizers raises a bare Exception for a bad file
        raise ValueError(f"{file}: not a tokenizers tokenizer.json ({exc})") from None
    return make_token_counter(tokenizer if special_tokens else _NoSpecials(tokenizer))


def tiktoken_cache_dir(cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """The directory tiktoken reads cached files from (the same rule tiktoken applies)."""
    if cache_dir is not None:
        return Path(cache_dir)
    for name in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR"):
        if os.environ.get(name):
            return Path(os.environ[name])
    return Path(tempfile.gettempdir()) / "data-gym-cache"


def tiktoken_counter(
    encoding: str = "cl100k_base", *, cache_dir: str | os.PathLike[str] | None = None
) -> LengthCounter:
    """A counter of ``encoding``'s tokens, from tiktoken's files already in ``cache_dir``.

    ``cache_dir`` defaults to ``TIKTOKEN_CACHE_DIR`` (then ``DATA_GYM_CACHE_DIR``,
    then tiktoken's temporary directory).  tiktoken would download missing
    files; this never does: it raises :class:`TokenizerUnavailableError`
    naming each missing file and the URL to fetch it from on a connected machine.
    """
    try:
        import tiktoken
    except ImportError as exc:
        raise TokenizerUnavailableError(
            "tiktoken_counter needs the 'tiktoken' extra: pip install 'zerda-async[tiktoken]'"
        ) from exc
    if encoding not in TIKTOKEN_FILES:
        raise ValueError(f"unknown tiktoken encoding {encoding!r}; known: {sorted(TIKTOKEN_FILES)}")
    directory = tiktoken_cache_dir(cache_dir)
    missing = [
        f"{directory / hashlib.sha1(url.encode()).hexdigest()} (from {url})"
        for url in TIKTOKEN_FILES[encoding]
        if not (directory / hashlib.sha1(url.encode()).hexdigest()).is_file()
    ]
    if missing:
        raise TokenizerUnavailableError(
            f"tiktoken encoding {encoding!r} is not available offline: missing "
            + "; ".join(missing)
            + ". Copy tiktoken's cache from a connected machine there, or set TIKTOKEN_CACHE_DIR"
        )
    with _ENV_LOCK:
        previous = os.environ.get("TIKTOKEN_CACHE_DIR")
        os.environ["TIKTOKEN_CACHE_DIR"] = str(directory)
        try:
            enc = tiktoken.get_encoding(encoding)
        finally:
            if previous is None:
                del os.environ["TIKTOKEN_CACHE_DIR"]
            else:
                os.environ["TIKTOKEN_CACHE_DIR"] = previous
    return make_token_counter(enc)
