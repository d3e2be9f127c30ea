"""The package's layers (docs/architecture.md): imports only point down, and the
adapter authors' import surface stays importable."""
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


def _module_name(path: Path) -> tuple[str, str]:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[0] == "adapters":
        parts[0] = "ensemble_deid_adapters"
    if parts[-1] == "__init__":
        parts = parts[:-1]
        return ".".join(parts), ".".join(parts)
    return ".".join(parts), ".".join(parts[:-1])


def _imports(path: Path):
    name, package = _module_name(path)
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
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
