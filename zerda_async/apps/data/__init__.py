"""Data files shipped with zerda-async (the demo corpus)."""

__all__: list[str] = []
