"""The sync core: every documented component as pure, synchronous, I/O-free code.

Nothing here is async, starts threads, configures logging or keeps global
state, so every function is safe to call from a worker thread.  Import the
components from their modules (``zerda_async.core.composer`` ...).
"""

__all__: list[str] = []
