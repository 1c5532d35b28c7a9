"""Checks shared by the adapters that load a model from a local folder."""

from __future__ import annotations

from pathlib import Path

from zerda_async.errors import EmbedderLoadError

__all__ = ["model_folder"]


def model_folder(path: str | Path, required: tuple[str, ...], backend: str) -> Path:
    """``path`` resolved, or :class:`EmbedderLoadError` naming what is missing.

    A local folder is required on purpose: given a hub name instead, the
    backends would try to download weights at run time, which this project
    never does.
    """
    folder = Path(path).expanduser()
    if not folder.is_dir():
        raise EmbedderLoadError(
            f"{backend}: model folder {str(folder)!r} does not exist or is not a directory "
            "(a local folder is required; nothing is downloaded)"
        )
    missing = [name for name in required if not (folder / name).is_file()]
    if missing:
        raise EmbedderLoadError(
            f"{backend}: model folder {str(folder)!r} has no {', '.join(missing)}"
        )
    return folder.resolve()
