"""A sentence-transformers model from a local folder, as a text embedder."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from zerda_async.embedders._local_model import LocalEncoder, import_backend, model_folder
from zerda_async.errors import EmbedderLoadError

__all__ = ["SentenceTransformerEmbedder"]


class SentenceTransformerEmbedder(LocalEncoder):
    """``emb(text)`` / ``emb.embed_batch(texts)`` over ``SentenceTransformer(model_dir)``.

    ``model_dir`` is a folder written by ``SentenceTransformer.save()`` (it
    holds ``modules.json``); it is loaded with ``local_files_only`` and remote
    code disabled, in the constructor, so a bad folder fails at once
    (:class:`~zerda_async.errors.EmbedderLoadError`).  Loading imports torch:
    build the embedder before starting the engine (or in a worker thread).
    ``normalize`` returns unit vectors, so the engine's cosine is a dot product.
    """

    def __init__(
        self,
        model_dir: str | Path,
        *,
        batch_size: int = 32,
        normalize: bool = True,
        device: str = "cpu",
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        folder = model_folder(model_dir, ("modules.json",), "sentence-transformers")
        backend = import_backend(
            "sentence_transformers", "sentence-transformers", "sentence-transformers"
        )
        super().__init__()
        try:
            self._model: Any = backend.SentenceTransformer(
                str(folder), device=device, local_files_only=True, trust_remote_code=False
            )
        except Exception as exc:  # the library raises many types for a broken folder
            raise EmbedderLoadError(
                f"sentence-transformers could not load {str(folder)!r}: {type(exc).__name__}: {exc}"
            ) from exc
        # Renamed in sentence-transformers 5; the old name warns in newer releases.
        get_dim = getattr(self._model, "get_embedding_dimension", None)
        if get_dim is None:
            get_dim = self._model.get_sentence_embedding_dimension
        dim = get_dim()
        self.dim = int(dim) if dim is not None else None
        self.name = f"sentence-transformers:{folder.name}"
        self.folder = folder
        self.batch_size = batch_size
        self.normalize = normalize

    def params(self) -> dict[str, Any]:
        """The folder and options, JSON-serialisable."""
        return {
            "kind": "sentence-transformers",
            "folder": str(self.folder),
            "normalize": self.normalize,
        }

    def _forward(self, texts: list[str]) -> Any:
        # One pass at a time (the base's lock): torch already uses every core for one.
        return self._model.encode(
            texts,
            batch_size=self.batch_size,
            convert_to_numpy=True,
            normalize_embeddings=self.normalize,
            show_progress_bar=False,
        )

    def __repr__(self) -> str:
        return f"SentenceTransformerEmbedder({str(self.folder)!r})"
