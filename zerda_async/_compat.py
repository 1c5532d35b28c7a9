"""Old import paths of modules and names that moved, kept for this release.

``import zerda_async.server`` (and the others below) still works: a finder on
``sys.meta_path`` answers the old name with a module holding the new module's
public names, and warns with a :class:`DeprecationWarning` naming the new path.
Names that left a module that still exists (:data:`MOVED_NAMES`, say
``zerda_async.errors.report_for``) are answered by a module ``__getattr__``
that warns the same way.  The two tables are the one list of moved public
paths; docs/api.md repeats the modules, docs/internals.md the names.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings
from collections.abc import Callable, Sequence
from types import ModuleType

__all__ = ["MOVED_MODULES", "MOVED_NAMES", "install"]

MOVED_MODULES: dict[str, str] = {
    "zerda_async.server": "zerda_async.apps.server",
    "zerda_async.hashing_embedder": "zerda_async.embedders",
    "zerda_async.persistence": "zerda_async.indexing",
    "zerda_async.pipeline.sync_runner": "zerda_async.errors",
}
"""Old module path -> the module that now holds its public names."""

MOVED_NAMES: dict[str, dict[str, str]] = {
    # How the applications report errors is the applications' business (apps/).
    "zerda_async.errors": {
        "REPORTS": "zerda_async.apps",
        "ErrorReport": "zerda_async.apps",
        "HTTPProblem": "zerda_async.apps",
        "report_for": "zerda_async.apps",
    },
}
"""Module that still exists -> {name that left it: the module that now holds it}."""


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


def _moved_name_getter(module: str, moved: dict[str, str]) -> Callable[[str], object]:
    def __getattr__(name: str) -> object:
        new_module = moved.get(name)
        if new_module is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        warnings.warn(
            f"{module}.{name} moved to {new_module}.{name}; the old path goes in the next release",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(importlib.import_module(new_module), name)

    return __getattr__


def install() -> None:
    """Put the finder on ``sys.meta_path`` and the moved-name hooks on their modules, once."""
    if not any(isinstance(f, _MovedModuleFinder) for f in sys.meta_path):
        sys.meta_path.append(_MovedModuleFinder())
    for module, moved in MOVED_NAMES.items():
        # Loading the module is cheap: these are bottom-layer modules, loaded anyway.
        target = importlib.import_module(module)
        setattr(target, "__getattr__", _moved_name_getter(module, moved))  # noqa: B010
