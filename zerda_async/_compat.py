"""Old import paths of modules that moved into the layer folders, kept for this release.

``import zerda_async.server`` (and the others below) still works: a finder on
``sys.meta_path`` answers the old name with a module holding the new module's
public names, and warns with a :class:`DeprecationWarning` naming the new path.
The table is the one list of moved public paths; docs/api.md repeats it.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings
from collections.abc import Sequence
from types import ModuleType

__all__ = ["MOVED_MODULES", "install"]

MOVED_MODULES: dict[str, str] = {
    "zerda_async.server": "zerda_async.apps.server",
    "zerda_async.hashing_embedder": "zerda_async.embedders",
    "zerda_async.persistence": "zerda_async.indexing",
    "zerda_async.pipeline.sync_runner": "zerda_async.errors",
}
"""Old module path -> the module that now holds its public names."""


class _MovedModuleLoader(importlib.abc.Loader):
    def __init__(self, new_name: str) -> None:
        self.new_name = new_name

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return None  # a fresh module, filled by exec_module

    def exec_module(self, module: ModuleType) -> None:
        warnings.warn(
            f"{module.__name__} moved to {self.new_name}; the old path goes in the next release",
            DeprecationWarning,
            stacklevel=2,
        )
        target = importlib.import_module(self.new_name)
        names = getattr(target, "__all__", ())
        module.__dict__.update({name: getattr(target, name) for name in names})
        module.__all__ = list(names)  # type: ignore[attr-defined]


class _MovedModuleFinder(importlib.abc.MetaPathFinder):
    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        new_name = MOVED_MODULES.get(fullname)
        if new_name is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, _MovedModuleLoader(new_name))


def install() -> None:
    """Put the finder on ``sys.meta_path`` once (idempotent)."""
    if not any(isinstance(f, _MovedModuleFinder) for f in sys.meta_path):
        sys.meta_path.append(_MovedModuleFinder())
