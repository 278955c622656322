"""The package's import structure: every module imports on its own, and no import cycle.

* Each module of `irc` (with `irc.dialects`, `irc.passes` and `irc.targets`, which live in their
  own folders) is imported alone in a fresh interpreter state. A parent process imports the
  third-party packages only (xDSL, numpy, ...) and forks one child per module: the child starts
  without any `irc` module loaded, so a module that works only when another `irc` module was
  imported first fails here. (Clearing `sys.modules` in one process would not do: xDSL and the
  dialect classes keep state across such a "fresh" import.)
* Module-level imports, read from the source (not executed), form no cycle. Imports inside
  functions and under `if TYPE_CHECKING:` do not count; ``from pkg import name`` depends on the
  submodule `pkg.name` when there is one, else on `pkg`; importing a submodule runs its parent
  packages' `__init__` first, which is not a cycle.
* Layers point down: no core module (`irc.*` outside `irc.tools`, `irc.targets`, `irc.dialects`)
  and no pass (`irc.passes.*`) imports the CLI layer (`irc.tools`) or a target's internals
  (`irc.targets.<name>.*`); they reach targets through `irc.targets` / `irc.targets.base` (the
  `Target` protocol and registry) only. Every import counts here, the ones inside functions
  too. The one exception is the reference target's package (`irc.targets.reference`, its
  `__init__` only): the golden model whose kernels define the semantics constant folding and
  the host executor use (docs/design.md §2, §4).
"""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

ROOT_PACKAGES = ("irc", "irc.dialects", "irc.passes", "irc.targets")
"""Packages whose modules are checked (the last three are mapped to their own folders)."""

PRELOADED = (
    "numpy",
    "scipy",
    "scipy.special",
    "onnx",
    "flatbuffers",
    "tflite",
    "xdsl.ir",
    "xdsl.irdl",
    "xdsl.context",
    "xdsl.parser",
    "xdsl.printer",
    "xdsl.passes",
    "xdsl.pattern_rewriter",
    "xdsl.dialects.builtin",
    "xdsl.dialects.func",
    "xdsl.dialects.arith",
)
"""Third-party modules the fork parent imports once (absent ones are skipped)."""

KNOWN_CYCLES: set[frozenset[str]] = set()
"""Cycles allowed for now, each as the set of its modules (none)."""

LOWER_LAYERS_MAY_IMPORT = ("irc.targets", "irc.targets.base", "irc.targets.reference")
"""What core and passes may import of `irc.targets` (exactly these modules)."""


# ---- Finding modules and their imports -----------------------------------------------------------


def package_modules(roots: Mapping[str, Path]) -> dict[str, Path]:
    """Every module under the given packages (name -> file), packages as their `__init__`.

    `roots` maps a package name to its folder; files outside regular packages (folders
    without `__init__.py`) are left out."""
    modules: dict[str, Path] = {}
    for package, folder in roots.items():
        for path in sorted(folder.rglob("*.py")):
            relative = path.relative_to(folder).with_suffix("")
            parts = list(relative.parts)
            if "__pycache__" in parts or any(not p.isidentifier() for p in parts):
                continue
            if not all(
                (folder.joinpath(*parts[:i]) / "__init__.py").exists() for i in range(len(parts))
            ):
                continue  # not inside a regular package
            if parts[-1] == "__init__":
                parts = parts[:-1]
            name = ".".join([package, *parts])
            modules.setdefault(name, path)
    return modules


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _module_level_imports(body: Iterable[ast.stmt]) -> Iterable[ast.Import | ast.ImportFrom]:
    """Import statements that run when the module is imported (not in functions or classes,
    not under `if TYPE_CHECKING:`)."""
    for stmt in body:
        if isinstance(stmt, ast.Import | ast.ImportFrom):
            yield stmt
        elif isinstance(stmt, ast.If):
            if not _is_type_checking(stmt.test):
                yield from _module_level_imports(stmt.body)
            yield from _module_level_imports(stmt.orelse)
        elif isinstance(stmt, ast.Try):
            for block in (stmt.body, stmt.orelse, stmt.finalbody):
                yield from _module_level_imports(block)
            for handler in stmt.handlers:
                yield from _module_level_imports(handler.body)
        elif isinstance(stmt, ast.With):
            yield from _module_level_imports(stmt.body)


def import_graph(modules: Mapping[str, Path]) -> dict[str, set[str]]:
    """Module -> the modules (of `modules`) its module-level imports need."""
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        package = name if is_package else name.rpartition(".")[0]
        edges: set[str] = set()
        for stmt in _module_level_imports(ast.parse(path.read_text(), str(path)).body):
            if isinstance(stmt, ast.Import):
                targets = [alias.name for alias in stmt.names]
            else:
                base = stmt.module or ""
                if stmt.level:
                    anchor = package.split(".")
                    anchor = anchor[: len(anchor) - (stmt.level - 1)]
                    base = ".".join([*anchor, base] if base else anchor)
                targets = []
                for alias in stmt.names:
                    submodule = f"{base}.{alias.name}"
                    targets.append(submodule if submodule in modules else base)
            edges.update(t for t in targets if t in modules and t != name)
        graph[name] = edges
    return graph


def _imported_names(path: Path, name: str) -> Iterable[str]:
    """Every module an import statement anywhere in the file names (functions, classes and
    `if TYPE_CHECKING:` included); `from pkg import x` names `pkg.x` and `pkg`."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            yield base
            yield from (f"{base}.{alias.name}" for alias in node.names)


def _is_core(name: str) -> bool:
    """Core and passes: `irc.*` but the CLI layer, the targets and the dialects."""
    layers = ("irc.tools", "irc.targets", "irc.dialects")
    return name.startswith("irc.") and not any(
        name == layer or name.startswith(layer + ".") for layer in layers
    )


def layer_violations(modules: Mapping[str, Path], existing: set[str]) -> list[str]:
    """`module -> imported` for each import of a core module or pass that points up (to
    `irc.tools`) or into a target (`irc.targets.<name>.*`, but LOWER_LAYERS_MAY_IMPORT).
    `existing` are the module names that exist (a `from pkg import name` of a plain name
    is not an import of `pkg.name`)."""
    found: list[str] = []
    for name, path in sorted(modules.items()):
        if not _is_core(name):
            continue
        for imported in sorted(set(_imported_names(path, name))):
            if imported != name and imported.startswith("irc.") and imported not in existing:
                continue  # a name imported from a module, not a module
            upward = imported == "irc.tools" or imported.startswith("irc.tools.")
            into_target = (
                imported.startswith("irc.targets.") and imported not in LOWER_LAYERS_MAY_IMPORT
            )
            if upward or into_target:
                found.append(f"{name} -> {imported}")
    return found


def find_cycles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """One cycle path (``[a, b, ..., a]``) per strongly connected component with a cycle."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[set[str]] = []

    def connect(start: str) -> None:  # Tarjan's algorithm, iterative
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            for succ in successors:
                if succ not in index:
                    index[succ] = low[succ] = len(index)
                    stack.append(succ)
                    on_stack.add(succ)
                    work.append((succ, iter(sorted(graph[succ]))))
                    break
                if succ in on_stack:
                    low[node] = min(low[node], index[succ])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component: set[str] = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.add(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        components.append(component)

    for node in sorted(graph):
        if node not in index:
            connect(node)
    return [_cycle_path(graph, component) for component in components]


def _cycle_path(graph: Mapping[str, set[str]], component: set[str]) -> list[str]:
    """A cycle through the smallest module of a strongly connected component."""
    start = min(component)
    parents: dict[str, str] = {}
    frontier = [start]
    while frontier:  # breadth first: the shortest way back to `start`
        following: list[str] = []
        for node in frontier:
            for succ in sorted(graph[node] & component):
                if succ == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(parents[path[-1]])
                    return [*reversed(path), start]
                if succ not in parents:
                    parents[succ] = node
                    following.append(succ)
        frontier = following
    raise AssertionError(f"no cycle in {sorted(component)}")


def irc_modules() -> dict[str, Path]:
    roots = {}
    for package in ROOT_PACKAGES:
        spec = importlib.util.find_spec(package)
        assert spec is not None, package
        assert spec.submodule_search_locations, package
        roots[package] = Path(next(iter(spec.submodule_search_locations)))
    return package_modules(roots)


# ---- The cycle finder itself ---------------------------------------------------------------------


def _write_package(tmp_path: Path, files: Mapping[str, str]) -> dict[str, Path]:
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return package_modules({"pkg": tmp_path / "pkg"})


def test_find_cycles_reports_the_cycle_path(tmp_path: Path) -> None:
    modules = _write_package(
        tmp_path,
        {
            "pkg/__init__.py": "from pkg.driver import run\n",
            "pkg/driver.py": "from pkg import ops\nfrom pkg.registry import table\n",
            "pkg/registry.py": "table = {}\n",
            "pkg/ops.py": "from .helpers import h\n",
            "pkg/helpers.py": "import pkg.driver\n",
            "pkg/lazy.py": "def f():\n    import pkg.late\n",
            "pkg/late.py": (
                "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import pkg.lazy\n"
            ),
        },
    )
    graph = import_graph(modules)
    assert graph["pkg.driver"] == {"pkg.ops", "pkg.registry"}  # not the package itself
    assert graph["pkg.ops"] == {"pkg.helpers"}
    assert graph["pkg.lazy"] == set()
    assert graph["pkg.late"] == set()
    assert find_cycles(graph) == [["pkg.driver", "pkg.ops", "pkg.helpers", "pkg.driver"]]


def test_find_cycles_accepts_a_tree(tmp_path: Path) -> None:
    modules = _write_package(
        tmp_path,
        {
            "pkg/__init__.py": "from pkg.a import x\n",
            "pkg/a.py": "from pkg.b import y\nfrom pkg.sub import c\n",
            "pkg/b.py": "y = 1\n",
            "pkg/sub/__init__.py": "",
            "pkg/sub/c.py": "from ..b import y\n",
        },
    )
    graph = import_graph(modules)
    assert graph["pkg.sub.c"] == {"pkg.b"}
    assert find_cycles(graph) == []


def test_layer_violations_finds_imports_that_point_up_or_into_a_target(tmp_path: Path) -> None:
    files = {
        "irc/__init__.py": "",
        "irc/core.py": (
            "from irc.targets import get_target\n"
            "from irc.targets.reference import kernel_for\n"
            "def f():\n    from irc.tools.common import ToolError\n"
        ),
        "irc/fine.py": "from irc.targets.base import Target\nfrom irc import targets\n",
        "irc/passes/__init__.py": "",
        "irc/passes/p.py": (
            "from typing import TYPE_CHECKING\n"
            "if TYPE_CHECKING:\n    from irc.targets.cpu.lower import TARGET\n"
        ),
        "irc/tools/__init__.py": "",
        "irc/tools/common.py": "from irc.targets.cpu import isa\n",  # tools are not core
        "irc/targets/__init__.py": "from irc.targets.base import Target\n",
        "irc/targets/base.py": "class Target: ...\n",
        "irc/targets/reference/__init__.py": "kernel_for = None\n",
        "irc/targets/cpu/__init__.py": "",
        "irc/targets/cpu/lower.py": "import irc.tools\nTARGET = 'cpu'\n",  # a target
        "irc/targets/cpu/isa.py": "",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    modules = package_modules({"irc": tmp_path / "irc"})
    assert layer_violations(modules, set(modules)) == [
        "irc.core -> irc.tools.common",
        "irc.passes.p -> irc.targets.cpu.lower",
    ]


# ---- The package ---------------------------------------------------------------------------------


def test_no_import_cycles() -> None:
    cycles = [
        c for c in find_cycles(import_graph(irc_modules())) if frozenset(c) not in KNOWN_CYCLES
    ]
    assert not cycles, "import cycles (module-level imports):\n" + "\n".join(
        " -> ".join(cycle) for cycle in cycles
    )


_FORK_IMPORTER = r"""
import importlib, json, os, sys, traceback, warnings
warnings.simplefilter("error")
for name in json.loads(sys.argv[2]):
    try:
        importlib.import_module(name)
    except ImportError:
        pass
assert not any(m == "irc" or m.startswith("irc.") for m in sys.modules), "irc preloaded"
failures = {}
running = {}
modules = json.loads(sys.argv[1])
limit = max(1, min(4, os.cpu_count() or 1))
def reap():
    pid, status = os.wait()
    name, read_end = running.pop(pid)
    with os.fdopen(read_end) as pipe:
        text = pipe.read()
    if status != 0:
        failures[name] = text or f"exit status {status}"
for name in modules:
    while len(running) >= limit:
        reap()
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        code = 0
        try:
            importlib.import_module(name)
        except BaseException:
            os.write(write_end, traceback.format_exc()[-2000:].encode())
            code = 1
        os._exit(code)
    os.close(write_end)
    running[pid] = (name, read_end)
while running:
    reap()
print(json.dumps(failures))
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork()")
def test_every_module_imports_on_its_own() -> None:
    modules = sorted(irc_modules())
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    done = subprocess.run(
        [sys.executable, "-c", _FORK_IMPORTER, json.dumps(modules), json.dumps(PRELOADED)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    failures = json.loads(done.stdout.strip().splitlines()[-1])
    assert not failures, "modules that fail to import on their own:\n" + "\n".join(
        f"{name}:\n{text}" for name, text in sorted(failures.items())
    )
    assert len(modules) > 50  # the walk found the package


def test_core_and_passes_import_no_tool_and_no_target_internals() -> None:
    modules = irc_modules()
    assert "irc.passes.partition" in modules
    assert "irc.context" in modules
    violations = layer_violations(modules, set(modules))
    assert not violations, (
        "core modules and passes must reach targets through the Target protocol "
        "(irc.targets / irc.targets.base) and never import irc.tools:\n" + "\n".join(violations)
    )


def test_every_package_is_listed_for_setuptools() -> None:
    """A wheel holds only the packages pyproject.toml names: every package folder is there."""
    import tomllib

    pyproject = Path(__file__).resolve().parent.parent / "pyproject.toml"
    listed = set(tomllib.loads(pyproject.read_text())["tool"]["setuptools"]["packages"])
    packages = {name for name, path in irc_modules().items() if path.name == "__init__.py"}
    missing = sorted(packages - listed)
    assert not missing, f"packages not in pyproject.toml's [tool.setuptools] list: {missing}"
    assert "irc.targets.cpu.lowerings" in packages  # the walk sees subpackages
