"""pyproject.toml lists every package folder by hand: check it against the tree."""
from __future__ import annotations

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

from .conftest import REPO_ROOT

# top-level folder -> the package name it installs as
ROOTS = {"ensemble_deid": "ensemble_deid", "adapters": "ensemble_deid_adapters"}


def _setuptools():
    return tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]


def _packages_in_tree() -> set[str]:
    found = set()
    for folder, package in ROOTS.items():
        root = REPO_ROOT / folder
        for init in root.rglob("__init__.py"):
            rel = init.parent.relative_to(root)
            if any(part.startswith(".") or part == "__pycache__" for part in rel.parts):
                continue
            found.add(".".join((package, *rel.parts)))
    return found


def _data_folders() -> set[str]:
    """Folders of the core package that hold data files and no __init__.py (shipped as data packages)."""
    found = set()
    root = REPO_ROOT / "ensemble_deid"
    for folder in [root, *root.rglob("*")]:
        if not folder.is_dir() or any(p.startswith((".", "__")) for p in folder.relative_to(root).parts):
            continue
        files = [f for f in folder.iterdir() if f.is_file()]
        if any(f.suffix != ".py" for f in files) and not (folder / "__init__.py").exists():
            found.add(".".join(("ensemble_deid", *folder.relative_to(root).parts)))
    return found


def test_every_data_folder_is_listed_so_it_ships():
    listed = set(_setuptools()["packages"])
    missing = sorted(_data_folders() - listed)
    assert not missing, f"add these data folders to [tool.setuptools] packages: {missing}"
    assert set(_setuptools()["package-data"]) == _data_folders()


def test_every_package_folder_is_listed():
    listed = set(_setuptools()["packages"])
    missing = sorted(_packages_in_tree() - listed)
    assert not missing, f"add to [tool.setuptools] packages in pyproject.toml: {missing}"


def test_every_listed_package_exists():
    listed = set(_setuptools()["packages"])
    stale = sorted(listed - _packages_in_tree() - _data_folders())
    assert not stale, f"listed in pyproject.toml but no such package folder: {stale}"


def test_adapters_folder_installs_as_ensemble_deid_adapters():
    assert _setuptools()["package-dir"] == {"ensemble_deid_adapters": "adapters"}
    assert {"ensemble_deid", "ensemble_deid_adapters"} <= _packages_in_tree()
