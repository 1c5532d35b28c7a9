"""A local ONNX model run by fastembed, as a text embedder.

fastembed normally downloads the models it lists from a hub.  Here the model
is registered as a custom model under a name derived from the folder, and
loaded with ``specific_model_path`` (fastembed then reads the folder as it
is and never looks anything up) and ``local_files_only``.

The folder holds ``model.onnx`` (inputs ``input_ids``, ``attention_mask`` and
optionally ``token_type_ids``; first output the token states, or already the
sentence vector with ``pooling="none"``), ``tokenizer.json`` and
``tokenizer_config.json`` (with ``model_max_length`` and ``pad_token``, as
transformers writes them); ``config.json`` is read for ``hidden_size`` when
``dim`` is not given.
"""

from __future__ import annotations

import hashlib
import json
import threading
from pathlib import Path
from typing import Any, Literal

from zerda_async.embedders._local_model import LocalEncoder, import_backend, model_folder
from zerda_async.errors import EmbedderLoadError

__all__ = ["FastEmbedEmbedder"]

Pooling = Literal["mean", "cls", "none"]
_REGISTER_LOCK = threading.Lock()


def _read_dim(folder: Path) -> int:
    config = folder / "config.json"
    try:
        value = json.loads(config.read_text(encoding="utf-8"))["hidden_size"]
        return int(value)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise EmbedderLoadError(
            f"fastembed: pass dim= or give {str(folder)!r} a config.json with hidden_size "
            f"({type(exc).__name__}: {exc})"
        ) from exc


def _register(folder: Path, model_file: str, dim: int, pooling: Pooling, normalize: bool) -> str:
    """The fastembed name of this folder's model, registered once per process."""
    from fastembed import TextEmbedding
    from fastembed.common.model_description import ModelSource, PoolingType

    key = f"{folder}|{model_file}|{dim}|{pooling}|{normalize}"
    name = "zerda-local/" + hashlib.blake2b(key.encode(), digest_size=8).hexdigest()
    with _REGISTER_LOCK:
        known = {m["model"].lower() for m in TextEmbedding.list_supported_models()}
        if name.lower() not in known:
            TextEmbedding.add_custom_model(
                model=name,
                pooling={"mean": PoolingType.MEAN, "cls": PoolingType.CLS}.get(
                    pooling, PoolingType.DISABLED
                ),
                normalization=normalize,
                # Never fetched: specific_model_path makes fastembed read the folder.
                sources=ModelSource(hf=name),
                dim=dim,
                model_file=model_file,
            )
    return name


class FastEmbedEmbedder(LocalEncoder):
    """``emb(text)`` / ``emb.embed_batch(texts)`` over a fastembed ``TextEmbedding``.

    ``pooling`` turns token states into one vector (``"mean"`` over the
    attention mask, ``"cls"`` the first token, ``"none"`` when the model
    outputs sentence vectors); ``normalize`` makes them unit length.
    ``threads`` is onnxruntime's intra-op thread count (``None``: its default).
    The model loads in the constructor: a bad folder fails at once.
    """

    def __init__(
        self,
        model_dir: str | Path,
        *,
        dim: int | None = None,
        pooling: Pooling = "mean",
        normalize: bool = True,
        model_file: str = "model.onnx",
        batch_size: int = 64,
        threads: int | None = None,
    ) -> None:
        if pooling not in ("mean", "cls", "none"):
            raise ValueError(f"pooling must be 'mean', 'cls' or 'none', got {pooling!r}")
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        folder = model_folder(
            model_dir, (model_file, "tokenizer.json", "tokenizer_config.json"), "fastembed"
        )
        fastembed = import_backend("fastembed", "fastembed", "fastembed")
        super().__init__()
        self.dim = dim if dim is not None else _read_dim(folder)
        model_name = _register(folder, model_file, self.dim, pooling, normalize)
        try:
            self._model: Any = fastembed.TextEmbedding(
                model_name,
                threads=threads,
                specific_model_path=str(folder),
                local_files_only=True,
                cuda=False,
            )
        except Exception as exc:  # onnxruntime and tokenizers raise their own types
            raise EmbedderLoadError(
                f"fastembed could not load {str(folder)!r}: {type(exc).__name__}: {exc}"
            ) from exc
        self.name = f"fastembed:{folder.name}"
        self.folder = folder
        self.pooling = pooling
        self.normalize = normalize
        self.batch_size = batch_size

    def params(self) -> dict[str, Any]:
        """The folder and options, JSON-serialisable."""
        return {
            "kind": "fastembed",
            "folder": str(self.folder),
            "dim": self.dim,
            "pooling": self.pooling,
            "normalize": self.normalize,
        }

    def _forward(self, texts: list[str]) -> Any:
        return list(self._model.embed(texts, batch_size=self.batch_size))

    def __repr__(self) -> str:
        return f"FastEmbedEmbedder({str(self.folder)!r}, pooling={self.pooling!r})"
