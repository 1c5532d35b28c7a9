"""The engine layer: :class:`AsyncContextEngine` and the event stream of ``stream()``.

Internal modules; the public names are re-exported by :mod:`zerda_async`.
"""

from zerda_async.engine._engine import AsyncContextEngine
from zerda_async.engine._event_stream import EventStream

__all__ = ["AsyncContextEngine", "EventStream"]
