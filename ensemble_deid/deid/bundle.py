"""Model bundles: a fitted tagger or ensemble as one versioned, checksummed folder.

    MODEL/
      manifest.json        format and version, members, method, label scheme,
                           training-corpus fingerprint, scores, file checksums
      members/NN-<name>/   each member as ``Tagger.save`` writes it (the
                           library's own model file: CRFsuite, Vowpal Wabbit ...)
      method/              the meta-learner as ``MetaLearner.save`` writes it

Reading checks the format version, the manifest's own checksum and the
SHA-256 of every file before anything is loaded, and never unpickles: a
tampered or foreign bundle is refused with an error naming the file.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from pathlib import Path
from typing import Any, Mapping

from .. import __version__
from ..errors import EnsembleDeidError
from ..files import private_dir, read_json, write_private
from ..taggers.state import encodable

BUNDLE_FORMAT = "ensemble-deid-bundle"
# Bump when the layout or the manifest's meaning changes; other versions are refused.
BUNDLE_VERSION = 1
MANIFEST = "manifest.json"


class BundleError(EnsembleDeidError):
    """A bundle that cannot be written or trusted (names the file, never note text)."""


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _manifest_checksum(manifest: Mapping[str, Any]) -> str:
    body = {k: v for k, v in manifest.items() if k != "manifest_sha256"}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode("utf-8")).hexdigest()


def _files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and p.name != MANIFEST)


def write_bundle(out: str | Path, members: Mapping[str, Any], method: Any | None, info: Mapping[str, Any]) -> Path:
    """Save fitted ``members`` ({label: Tagger}) and ``method`` (a fitted
    MetaLearner, or None for a single tagger) with ``info`` (label scheme,
    corpus fingerprint, scores, ...) into the new folder ``out``. Written
    beside ``out`` first and renamed, so ``out`` is either whole or absent."""
    out = Path(out)
    if out.exists():
        raise BundleError(f"{out}: already exists (choose a new folder for the bundle)")
    private_dir(out.parent if str(out.parent) else Path("."))  # an existing parent is the user's: left as it is
    tmp = out.with_name(f".{out.name}.partial-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        private_dir(tmp)
        entries = []
        for i, (label, tagger) in enumerate(members.items()):
            folder = f"members/{i:02d}-{tagger.name}"
            private_dir(tmp / "members")
            tagger.save(tmp / folder)
            entries.append({"label": label, "name": tagger.name, "version": tagger.version, "folder": folder,
                            "params": encodable(tagger.get_params())})
        method_entry = None
        if method is not None:
            method.save(tmp / "method")
            # Members a pruned method never consults are left out of the bundle.
            unused = [n for n in method.member_names_ if n not in members]
            method_entry = {"name": method.name, "folder": "method", "members": list(method.member_names_),
                            "unused": unused}
        _owner_only(tmp)  # whatever a library's own writer did (torch.save follows the umask)
        manifest = {
            "format": BUNDLE_FORMAT, "format_version": BUNDLE_VERSION, "ensemble_deid_version": __version__,
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "members": entries, "method": method_entry,
            **info, "files": {name: _sha256_file(tmp / name) for name in _files(tmp)},
        }
        manifest["manifest_sha256"] = _manifest_checksum(manifest)
        write_private(tmp / MANIFEST, json.dumps(manifest, indent=1, sort_keys=True, default=str).encode("utf-8"))
        os.replace(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out


def _owner_only(root: Path) -> None:
    for path in root.rglob("*"):
        os.chmod(path, 0o700 if path.is_dir() else 0o600)


def read_manifest(path: str | Path) -> dict:
    """The verified manifest of a bundle: right format and version, its own
    checksum, and every file present, unchanged and listed."""
    root = Path(path)
    mpath = root / MANIFEST
    if not root.is_dir():
        raise BundleError(f"{root}: not a bundle folder")
    manifest = read_json(mpath, BundleError, "the bundle manifest")
    if not isinstance(manifest, dict) or manifest.get("format") != BUNDLE_FORMAT:
        raise BundleError(f"{mpath}: not an ensemble-deid model bundle")
    if manifest.get("format_version") != BUNDLE_VERSION:
        raise BundleError(
            f"{mpath}: bundle format version {manifest.get('format_version')!r} (written by ensemble-deid "
            f"{manifest.get('ensemble_deid_version', '?')}); this ensemble-deid {__version__} reads version "
            f"{BUNDLE_VERSION} only: refit the model with this version"
        )
    if manifest.get("manifest_sha256") != _manifest_checksum(manifest):
        raise BundleError(f"{mpath}: checksum mismatch (the manifest was modified)")
    files = manifest.get("files") or {}
    for name in _files(root):
        if name not in files:
            raise BundleError(f"{root / name}: file not listed in the manifest (the bundle was modified)")
    for name, digest in files.items():
        target = root / name
        if not target.is_file():
            raise BundleError(f"{target}: missing from the bundle")
        if _sha256_file(target) != digest:
            raise BundleError(f"{target}: checksum mismatch (the file was modified or damaged)")
    return manifest


def read_bundle(path: str | Path) -> tuple[dict, dict[str, Any], Any | None]:
    """(manifest, {label: fitted Tagger}, fitted MetaLearner or None)."""
    from ..ensemble.base import MetaLearner
    from ..taggers.state import StateError

    root = Path(path)
    manifest = read_manifest(root)
    try:
        members = {m["label"]: _load_member(root, m) for m in manifest["members"]}
        method = MetaLearner.load(root / manifest["method"]["folder"]) if manifest.get("method") else None
    except (StateError, ValueError) as exc:  # ValueError: a neural checkpoint refused by its loader
        raise BundleError(str(exc)) from None
    except (KeyError, TypeError) as exc:
        raise BundleError(f"{root / MANIFEST}: malformed (field {exc})") from None
    if method is not None and set(method.member_names_) != set(members) | set(manifest["method"].get("unused", ())):
        raise BundleError(f"{root / MANIFEST}: the method's members {list(method.member_names_)} "
                          f"are not the bundle's members {list(members)}")
    return manifest, members, method


def _load_member(root: Path, entry: Mapping[str, Any]):
    """A member through its own class's ``load`` (a folder of state for most
    taggers, one weights-only torch checkpoint for the neural family)."""
    from ..taggers.registry import tagger_class

    cls = tagger_class(entry["name"])
    if str(entry["version"]) != str(cls.version):
        raise BundleError(f"{root / entry['folder']}: member {entry['label']!r} was saved by tagger version "
                          f"{entry['version']}; the installed {entry['name']!r} is version {cls.version}: refit it")
    return cls.load(root / entry["folder"])
