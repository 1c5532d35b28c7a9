"""Token counters from real tokenizers, for budgets measured in tokens.

* :func:`hf_token_counter` — a Hugging Face ``tokenizer.json`` read with the
  ``tokenizers`` library (``pip install 'zerda-async[tokenizers]'``);
* :func:`tiktoken_counter` — an OpenAI encoding through ``tiktoken``
  (``[tiktoken]``), from files already on this machine: nothing is downloaded.

Both return a ``LengthCounter`` built by the documented
:func:`~zerda_async.core.counters.make_token_counter`; pass it as
``length_counter=`` to either engine.  Missing files raise
:class:`~zerda_async.errors.TokenizerUnavailableError` naming them.
"""

from zerda_async.counters._loaders import (
    TIKTOKEN_FILES,
    hf_token_counter,
    tiktoken_cache_dir,
    tiktoken_counter,
)

__all__ = ["TIKTOKEN_FILES", "hf_token_counter", "tiktoken_cache_dir", "tiktoken_counter"]
