"""The package's layers (docs/architecture.md): imports only point down, no
subpackage's modules import each other in a circle, and the adapter authors'
import surface stays importable."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "ensemble_deid"
# Lowest first: a module may import from its own layer or any layer below it.
LAYERS = ["errors", "files", "progress", "corpus", "evaluation", "taggers", "experiment", "ensemble", "studies", "deid", "cli"]


def _layer(module: str) -> int | None:
    parts = module.split(".")
    if parts[0] == "ensemble_deid_adapters":
        return LAYERS.index("taggers")
    if parts[0] != "ensemble_deid" or len(parts) == 1:
        return None  # outside the package, or its root (the version string)
    return LAYERS.index(parts[1]) if parts[1] in LAYERS else None


def _module_name(path: Path, root: Path = ROOT) -> tuple[str, str]:
    rel = path.relative_to(root).with_suffix("")
    parts = list(rel.parts)
    if parts[0] == "adapters":
        parts[0] = "ensemble_deid_adapters"
    if parts[-1] == "__init__":
        parts = parts[:-1]
        return ".".join(parts), ".".join(parts)
    return ".".join(parts), ".".join(parts[:-1])


def _from_target(node: ast.ImportFrom, package: str) -> str:
    """The module a ``from ... import`` statement imports from, made absolute."""
    if not node.level:
        return node.module or ""
    base = package.split(".")[: len(package.split(".")) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def _imports(path: Path, tree: ast.AST | None = None):
    name, package = _module_name(path)
    for node in ast.walk(tree or ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            target = _from_target(node, package)
            yield node.lineno, target
            for alias in node.names:  # "from . import plots" names a module
                yield node.lineno, f"{target}.{alias.name}"


def _sources():
    return sorted([*PACKAGE.rglob("*.py"), *(ROOT / "adapters").glob("*.py")])


def test_every_subpackage_is_a_known_layer():
    subpackages = {p.parent.name for p in PACKAGE.glob("*/__init__.py")}
    assert subpackages == set(LAYERS) - {"errors", "files", "progress"}
    modules = {p.stem for p in PACKAGE.glob("*.py")} - {"__init__"}
    assert modules == {"errors", "files", "progress"}


@pytest.mark.parametrize("path", _sources(), ids=lambda p: str(p.relative_to(ROOT)))
def test_imports_point_down(path):
    if "data" in path.relative_to(PACKAGE if PACKAGE in path.parents else ROOT).parts:
        pytest.skip("data-building script")
    own = _layer(_module_name(path)[0])
    up = [(line, target) for line, target in _imports(path)
          if (layer := _layer(target)) is not None and own is not None and layer > own]
    assert not up, f"{path.relative_to(ROOT)} imports upward: {up}"


def test_adapter_authors_surface():
    # What docs/adapters.md and examples/edeid-example-adapter use.
    from ensemble_deid import taggers

    for name in taggers.__all__:
        assert getattr(taggers, name) is not None, name
    assert taggers.Tagger.__module__ == "ensemble_deid.taggers.base"
    assert taggers.FeatureExtractor.__name__ == "FeatureExtractor"
    tags = ["B-NAME:PATIENT", "I-NAME:PATIENT", taggers.OUTSIDE]
    assert taggers.DocumentPrediction("d1", tags).tags == tags


def test_docs_and_example_import_only_the_public_surface():
    example = ROOT / "examples" / "edeid-example-adapter" / "edeid_example_adapter" / "__init__.py"
    text = example.read_text(encoding="utf-8") + (ROOT / "docs" / "adapters.md").read_text(encoding="utf-8")
    imported = {line.split()[1] for line in text.splitlines() if line.startswith("from ensemble_deid")}
    assert imported == {"ensemble_deid.taggers"}, imported


def _outside_cli():
    inside = [p for p in PACKAGE.rglob("*.py") if "cli" not in p.relative_to(PACKAGE).parts[:1]]
    others = [p for folder in ("benchmarks", "adapters", "examples") for p in (ROOT / folder).rglob("*.py")]
    return sorted(inside + others)


@pytest.mark.parametrize("path", _outside_cli(), ids=lambda p: str(p.relative_to(ROOT)))
def test_only_the_console_script_imports_the_cli(path):
    # The library steps live below cli/ (ensemble/run.py, deid/fit.py, ...): a
    # notebook, a benchmark or an adapter never needs the command line.
    cli = [(line, target) for line, target in _imports(path)
           if target == "ensemble_deid.cli" or target.startswith("ensemble_deid.cli.")]
    assert not cli, f"{path.relative_to(ROOT)} imports the command line: {cli}"


# --- inside a subpackage: one-way imports --------------------------------------
# Every import counts: at module level, inside a function (a lazy import that
# dodges a circle at run time still ties the two modules together for a
# reader) and under ``if TYPE_CHECKING``.

def _module_graph(package: Path = PACKAGE) -> dict[str, dict[str, list[int]]]:
    """module -> {module of the same subpackage it imports: [lines]}. ``from
    pkg import mod`` names mod, ``from mod import name`` names mod."""
    modules = {_module_name(p, package.parent)[0]: p for p in package.rglob("*.py")}
    graph: dict[str, dict[str, list[int]]] = {}
    for name, path in modules.items():
        edges = graph.setdefault(name, {})
        parent = _module_name(path, package.parent)[1]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = _from_target(node, parent)
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
            else:
                continue
            for target in targets:
                while target and target not in modules:  # "import a.b.c" of a name or an outside library
                    target = target.rpartition(".")[0]
                if target and target != name and target.split(".")[:2] == name.split(".")[:2]:
                    lines = edges.setdefault(target, [])
                    if node.lineno not in lines:
                        lines.append(node.lineno)
    return graph


def _cycles(graph) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out = []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_import_cycle_inside_a_subpackage():
    graph = _module_graph()
    cycles = _cycles(graph)
    described = ["\n".join([f"{len(c)} modules in a circle:"] + [
        f"  {a} -> {b} (line {', '.join(map(str, graph[a][b]))})" for a in c for b in graph[a] if b in c])
        for c in cycles]
    assert not cycles, "\n".join(described)


def test_the_cycle_finder_sees_every_kind_of_import(tmp_path):
    """On a hand-made package: a circle closed inside a function, one under
    TYPE_CHECKING, and ``from . import mod`` (an edge to mod, not to the
    package that re-exports it)."""
    files = {
        "__init__.py": "",
        "room/__init__.py": "from .c import C\n",
        "room/a.py": "from .b import B\nA = 1\n",
        "room/b.py": "B = 2\ndef f():\n    from .a import A\n    return A\n",
        "room/c.py": "from . import d\nC = 3\n",
        "room/d.py": "D = 4\n",
        "room/e.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .f import F\nE = 5\n",
        "room/f.py": "from .e import E\nF = 6\n",
        "other/__init__.py": "from ..room import a\n",  # another room: never part of room's circles
    }
    for name, text in files.items():
        (tmp_path / "pkg" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "pkg" / name).write_text(text)
    graph = _module_graph(tmp_path / "pkg")
    assert graph["pkg.room.b"] == {"pkg.room.a": [3]} and graph["pkg.room.c"] == {"pkg.room.d": [1]}
    assert graph["pkg.other"] == {}
    assert _cycles(graph) == [["pkg.room.a", "pkg.room.b"], ["pkg.room.e", "pkg.room.f"]]


# Imports inside a function in ensemble/: only an optional or heavy library,
# loaded when a method runs so that importing the package stays fast and works
# without it. None of them is a way round a circle (the test above counts
# function-level imports too); an import of the package's own modules belongs
# at the top of the module.
LAZY_IN_ENSEMBLE = {
    "torch": "optional heavy dependency (stacked-lstm only); seconds to import",
    "torchcrf": "optional, with torch (stacked-lstm's CRF layer)",
    "ensemble_deid.taggers.neural.network": "imports torch at module level (stacked-lstm's network)",
    "vowpalwabbit": "optional dependency (stacked-searn only)",
    "sklearn": "heavy import (stacked-svm only); most runs never fit an SVM",
}


def _function_level_imports(path: Path) -> set[tuple[int, str]]:
    """(line, module) of every import inside a function or method, as
    ``from m import name`` names m."""
    found = set()
    for func in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for node in ast.walk(func):
                if isinstance(node, ast.Import):
                    found.update((node.lineno, alias.name) for alias in node.names)
                elif isinstance(node, ast.ImportFrom):
                    found.add((node.lineno, _from_target(node, _module_name(path)[1])))
    return found


def test_ensemble_imports_its_own_modules_at_the_top():
    seen = set()
    bad = []
    for path in sorted((PACKAGE / "ensemble").rglob("*.py")):
        for line, target in sorted(_function_level_imports(path)):
            allowed = next((lib for lib in LAZY_IN_ENSEMBLE if target == lib or target.startswith(lib + ".")), None)
            if allowed is None:
                bad.append(f"{path.relative_to(ROOT)}:{line} imports {target} inside a function")
            seen.add(allowed)
    assert not bad, "\n".join(bad)
    assert seen - {None} == set(LAZY_IN_ENSEMBLE), f"no longer imported lazily: {set(LAZY_IN_ENSEMBLE) - seen}"


# The ensemble room's inner layers (docs/architecture.md), lowest first: a
# module imports only from layers strictly below its own, so the abstract
# MetaLearner (base) knows nothing of candidates, objectives, trust or the
# registry, and the span methods stand on one span layer (candidates, trust,
# spans). A new module must be placed here.
ENSEMBLE_LAYERS = [
    {"base", "candidates", "objective", "budget", "splits"},  # foundations: no import of each other
    {"trust"},  # which members' spans a method may keep: over the candidate table
    {"review_risk"},  # what a reviewer should see, learned from a method's out-of-fold outputs
    {"spans", "tokens"},  # SpanMetaLearner (candidates, operating points, trust); TokenMetaLearner
    {"voting", "stacked_svm", "stacked_searn", "stacked_lstm", "dawid_skene"},
    {"pruning", "templates"},  # built on voting
    {"registry", "selection", "caching", "diagnostics"},  # methods by name, chosen by CV, cached, diagnosed
    {"run"},  # the commands' steps as library calls
]


def test_ensemble_modules_import_only_from_layers_below():
    room = "ensemble_deid.ensemble"
    level = {f"{room}.{m}": i for i, layer in enumerate(ENSEMBLE_LAYERS) for m in layer}
    graph = _module_graph()
    assert set(level) == {m for m in graph if m.startswith(room + ".")}, "place every ensemble module in a layer"
    sideways = [f"{a} -> {b} (line {graph[a][b][0]})" for a in level for b in graph[a]
                if b in level and level[b] >= level[a]]
    assert not sideways, "\n".join(sideways)
