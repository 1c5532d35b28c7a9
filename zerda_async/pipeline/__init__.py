"""The run as one ordered list of stages, the per-request job, and the two runners.

``stages.STAGES`` is the documented run order; ``sync_runner.run_job`` loops
over it (the sync facade); ``async_runner.AsyncRunner`` executes the same
stage objects as concurrent tasks (the async engine).
"""

__all__: list[str] = []
