"""Runtime helpers below every other layer: how work moves between the loop and threads.

Internal: no stability promise outside zerda-async.
"""

from zerda_async.runtime._threads import run_in_thread

__all__ = ["run_in_thread"]
