"""The package's import graph: no cycle, and no import from a lower layer to a higher one.

The layers, lowest first (ARCHITECTURE.md draws them); a module may import
its own layer and the ones below it.  Imports inside functions and under
``TYPE_CHECKING`` count too: a lazy import that runs up is still an arrow up.
Folders talk through their public face (``__init__``): no module of the
package or of ``bench/`` imports another folder's private module, and a test
imports a private module only from the test folder that mirrors its folder.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

LAYERS: list[tuple[str, ...]] = [
    ("zerda_async.errors",),
    ("zerda_async.core", "zerda_async.runtime", "zerda_async.readers"),
    ("zerda_async.embedders", "zerda_async.counters"),
    ("zerda_async.stores",),
    ("zerda_async.pipeline",),
    ("zerda_async.indexing",),
    ("zerda_async.events",),
    ("zerda_async.engine",),
    ("sync_api",),
    ("zerda_async.apps", "zerda_async.integrations"),
    ("zerda_async", "zerda_async._compat"),
]
"""Lowest first.  ``zerda_async`` itself (its ``__init__``) is the top; a new
subpackage must be placed in a layer here (the test fails until it is)."""


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for package in ("zerda_async", "sync_api"):
        for path in (ROOT / package).rglob("*.py"):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


MODULES = _modules()
BENCH = {f"bench.{p.stem}": p for p in (ROOT / "bench").glob("*.py")}
"""The benchmark scripts and their shared helpers (not a package: keyed ``bench.<name>``)."""


def _layer(module: str) -> int:
    best, rank = -1, -1
    for i, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            # The bare ``zerda_async`` prefix names only the package's __init__.
            nested = module.startswith(prefix + ".") and prefix != "zerda_async"
            if (module == prefix or nested) and len(prefix) > best:
                best, rank = len(prefix), i
    assert rank >= 0, f"{module} is in no layer: add it to LAYERS"
    return rank


def _type_only_nodes(tree: ast.Module) -> set[int]:
    """The import nodes under ``if TYPE_CHECKING:`` (they never run)."""
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            found.update(id(inner) for stmt in node.body for inner in ast.walk(stmt))
    return found


def _imports(module: str, path: Path, *, runtime_only: bool = False) -> Iterator[str]:
    is_package = path.name == "__init__.py"
    package = module if is_package else module.rpartition(".")[0]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    type_only = _type_only_nodes(tree) if runtime_only else set()
    for node in ast.walk(tree):
        if id(node) in type_only:
            continue
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            names = [f"{base}.{alias.name}" for alias in node.names] + [base]
        else:
            continue
        for name in names:
            # The longest prefix that is one of our modules (``from x import y``
            # names a module when x.y is one).
            parts = name.split(".")
            while parts and ".".join(parts) not in MODULES:
                parts.pop()
            if parts:
                yield ".".join(parts)


GRAPH = {m: sorted(set(_imports(m, p)) - {m}) for m, p in MODULES.items()}
RUNTIME_GRAPH = {
    m: sorted(set(_imports(m, p, runtime_only=True)) - {m}) for m, p in MODULES.items()
}


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_import_runs_up(module: str) -> None:
    upward = [
        target
        for target in GRAPH[module]
        if _layer(target) > _layer(module)
        # a package may re-export from its own submodules
        and not target.startswith(module + ".")
    ]
    assert not upward, f"{module} (layer {_layer(module)}) imports higher layers: {upward}"


def test_the_import_graph_has_no_cycle() -> None:
    """Cycles among the imports that run (type-only imports cannot form one at run time)."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for target in RUNTIME_GRAPH.get(node, ()):
            if state.get(target) == 1:
                cycle = [*stack[stack.index(target) :], target]
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if target not in state:
                visit(target)
        stack.pop()
        state[node] = 2

    for module in sorted(RUNTIME_GRAPH):
        if module not in state:
            visit(module)


def test_the_checker_sees_an_upward_import(tmp_path: Path) -> None:
    """The walk is not vacuous: it finds the arrows that exist."""
    assert "zerda_async.core.config" in GRAPH["zerda_async.pipeline._state"]
    assert _layer("zerda_async.apps.cli") > _layer("zerda_async.engine._engine")
    assert "zerda_async.errors" in GRAPH["zerda_async.core.config"]


def test_no_two_modules_import_each_other() -> None:
    """Not even for types: a pair that needs each other is one concern split in two."""
    pairs = sorted(
        (a, b)
        for a, targets in GRAPH.items()
        for b in targets
        if a < b and a in GRAPH.get(b, ()) and not b.startswith(a + ".")
    )
    assert not pairs, f"modules importing each other: {pairs}"


def test_no_module_of_the_package_or_bench_is_over_400_lines() -> None:
    """One concern a module (the developers' guide): a module growing past 400 lines splits.

    The benchmarks too: a script keeps its command line and its tables, and the
    parts it measures go to ``bench/_*.py`` modules of their own.
    """
    long = {
        m: n
        for m, p in {**MODULES, **BENCH}.items()
        if (n := len(p.read_text("utf-8").splitlines())) > 400
    }
    assert not long, f"modules over 400 lines: {long}"


def test_the_length_rule_sees_the_benchmarks() -> None:
    """The bench map is not empty: the rule above reads the scripts and their helpers."""
    assert "bench._common" in BENCH and "bench.bench_async" in BENCH


# -- folders talk through their public face ------------------------------------------------


def _owner(module: str) -> str | None:
    """The folder whose private module ``module`` is (None: ``module`` is public)."""
    parts = module.split(".")
    for i, part in enumerate(parts):
        if part.startswith("_"):
            return ".".join(parts[:i])
    return None


def _unit(folder: str) -> str:
    """The unit a folder belongs to: a top folder of the package with its subfolders
    (``apps`` and ``apps/server`` are one), or the folder itself (``bench``, the root)."""
    parts = folder.split(".")
    return ".".join(parts[:2]) if parts[0] == "zerda_async" and len(parts) > 1 else folder


def _private_crossings(module: str, path: Path) -> list[str]:
    folder = module if path.name == "__init__.py" else module.rpartition(".")[0]
    return sorted(
        target
        for target in set(_imports(module, path))
        if (owner := _owner(target)) is not None and _unit(owner) != _unit(folder)
    )


def test_no_module_imports_another_folders_private_module() -> None:
    """Folders talk through their ``__init__`` (ARCHITECTURE.md), in the package and bench/.

    A private module (``_name``) is imported only from its own folder (a top
    folder and its subfolders count as one); everyone else imports the names
    its folder's ``__init__`` exports.
    """
    crossings = {
        module: found
        for module, path in {**MODULES, **BENCH}.items()
        if (found := _private_crossings(module, path))
    }
    assert not crossings, f"imports of another folder's private module: {crossings}"


def test_the_checker_sees_a_private_crossing(tmp_path: Path) -> None:
    """The check is not vacuous: the import forms it must catch are caught."""
    sample = tmp_path / "_engine.py"
    sample.write_text(
        "from zerda_async.pipeline._job import Job\n"
        "from zerda_async.runtime import _hop_pool\n"
        "from ..indexing._lifecycle import IndexLifecycle\n"
        "from zerda_async.pipeline import Job as Public\n"
        "from ._calls import something\n",
        encoding="utf-8",
    )
    assert _private_crossings("zerda_async.engine._engine", sample) == [
        "zerda_async.indexing._lifecycle",
        "zerda_async.pipeline._job",
        "zerda_async.runtime._hop_pool",
    ]


# -- tests reach a folder's internals only from the tests that mirror it -------------------

MIRRORS: dict[str, str] = {
    "": "zerda_async",  # tests/*.py: the package's top level (its _compat)
    "cli": "zerda_async.apps",
    "core": "zerda_async.core",
    "embedders": "zerda_async.embedders",
    "engine": "zerda_async.engine",
    "index": "zerda_async.indexing",
    "integrations": "zerda_async.integrations",
    "pipeline": "zerda_async.pipeline",
    "readers": "zerda_async.readers",
    "runtime": "zerda_async.runtime",
    "service": "zerda_async.apps.server",
    "stores": "zerda_async.stores",
}
"""Test folder (under ``tests/``) -> the package folder whose unit tests it holds.  A folder
also covers its subfolders (``core`` covers ``core/retrieval``) unless another test folder
mirrors the subfolder (``service`` holds ``apps/server``'s); the top level covers only
itself.  golden, facade, reliability and support test through public names alone."""

TESTS = {
    ".".join(p.relative_to(ROOT).with_suffix("").parts): p for p in (ROOT / "tests").rglob("*.py")
}
"""Every module of ``tests/``, keyed by its path (``tests.cli.test_ingest``)."""


def _test_folder_of(owner: str) -> str | None:
    """The test folder that may import the private modules of package folder ``owner``."""
    best: str | None = None
    for tests, folder in MIRRORS.items():
        covers = owner == folder or (owner.startswith(folder + ".") and folder != "zerda_async")
        if covers and (best is None or len(folder) > len(MIRRORS[best])):
            best = tests
    return best


def _misplaced_private_imports(module: str, path: Path) -> list[str]:
    """The private modules ``module`` (a test, ``tests.<folder>...``) imports from outside
    the package folder its own test folder mirrors."""
    parts = module.split(".")[1:-1]
    folder = parts[0] if parts else ""
    return sorted(
        target
        for target in set(_imports(module, path))
        if (owner := _owner(target)) is not None and _test_folder_of(owner) != folder
    )


def test_tests_import_private_modules_only_from_the_folder_that_mirrors_them() -> None:
    """Tests go through public names; a unit test of an internal lives with its folder.

    ``tests/stores/`` may import ``zerda_async.stores._pg_blocks``, ``tests/cli/``
    ``zerda_async.apps._progress``, and so on (:data:`MIRRORS`); a test anywhere
    else that needs a private name means the name should be public, or the test
    should move to the folder that mirrors it (docs/internals.md, docs/testing.md).
    """
    misplaced = {
        module: found
        for module, path in TESTS.items()
        if (found := _misplaced_private_imports(module, path))
    }
    assert not misplaced, f"tests importing private modules of another folder: {misplaced}"


def test_the_test_rule_sees_a_misplaced_import(tmp_path: Path) -> None:
    """The check is not vacuous: it reads the tests, and the forms it must catch are caught."""
    assert "tests.stores.test_pg_blocks" in TESTS and "tests.test_layers" in TESTS
    assert set(MIRRORS) - {""} <= {p.name for p in (ROOT / "tests").iterdir() if p.is_dir()}
    sample = tmp_path / "test_sample.py"
    sample.write_text(
        "import zerda_async.pipeline._stages as stages\n"
        "from zerda_async.runtime import _hop_pool\n"
        "from zerda_async.apps.server._schemas import MAX_QUERIES\n"
        "from zerda_async.engine._engine import AsyncContextEngine\n"
        "from zerda_async.core.retrieval._common import stable_top\n"
        "from zerda_async._compat import MOVED_NAMES\n"
        "from zerda_async.pipeline import Job\n",
        encoding="utf-8",
    )
    assert _misplaced_private_imports("tests.engine.test_sample", sample) == [
        "zerda_async._compat",
        "zerda_async.apps.server._schemas",
        "zerda_async.core.retrieval._common",
        "zerda_async.pipeline._stages",
        "zerda_async.runtime._hop_pool",
    ]
    assert _misplaced_private_imports("tests.core.test_sample", sample) == [
        "zerda_async._compat",
        "zerda_async.apps.server._schemas",
        "zerda_async.engine._engine",
        "zerda_async.pipeline._stages",
        "zerda_async.runtime._hop_pool",
    ]
    assert "zerda_async._compat" not in _misplaced_private_imports("tests.test_sample", sample)
    assert _test_folder_of("zerda_async.apps.server") == "service"
    assert _test_folder_of("zerda_async.apps") == "cli"
    assert _test_folder_of("zerda_async.counters") is None
