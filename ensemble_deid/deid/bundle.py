"""Model bundles: a fitted tagger or ensemble as one versioned, checksummed folder.

    MODEL/
      manifest.json        format and version, members, method, label scheme,
                           training-corpus fingerprint, scores, file checksums
      members/NN-<name>/   each member as ``Tagger.save`` writes it (the
                           library's own model file: CRFsuite, Vowpal Wabbit ...)
      method/              the meta-learner as ``MetaLearner.save`` writes it

Reading checks the format version, the manifest's own checksum and the
SHA-256 of every file before anything is loaded, and never unpickles: a
damaged or foreign bundle is refused with an error naming the file.

The checksums protect integrity, not authenticity: they carry no key, so
whoever edits a bundle can recompute them. Loading therefore trusts nothing
a bundle says about the machine it runs on: every file it names lies inside
it (no ``..``, absolute path or symbolic link anywhere), every parameter is
checked against its declared constraints (local ones, naming files,
refused first, as strings), thread counts and devices are the loading
machine's (``Tagger.machine_params``), and a member that runs a program
(an external system such as PhysioNet deid or MIST) is refused unless the
user names that program (``allow_external``, ``deidentify --allow-external
NAME=PATH``); no path stored in the bundle is used for it.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import stat
import time
from pathlib import Path, PurePosixPath
from typing import Any, Iterable, Mapping

from .. import __version__
from ..errors import EnsembleDeidError, printable
from ..files import check_folder, folder_checksums, owner_only_tree, private_dir, read_json, write_private
from ..taggers.state import encodable

BUNDLE_FORMAT = "ensemble-deid-bundle"
# Bump when the layout or the manifest's meaning changes; other versions are refused.
BUNDLE_VERSION = 1
MANIFEST = "manifest.json"
PARTIAL = ".{name}.partial-{pid}"  # where write_bundle builds a bundle before renaming it

log = logging.getLogger(__name__)


class BundleError(EnsembleDeidError):
    """A bundle that cannot be written or trusted (names the file, never note text)."""


def _manifest_checksum(manifest: Mapping[str, Any]) -> str:
    body = {k: v for k, v in manifest.items() if k != "manifest_sha256"}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode("utf-8")).hexdigest()


def _inside(root: Path, folder: Any, mpath: Path) -> Path:
    """``root / folder`` for a member or method folder named by the manifest,
    which must stay inside the bundle."""
    if not isinstance(folder, str) or not PurePosixPath(folder).parts:
        raise BundleError(f"{mpath}: malformed (a member folder is not a name)")
    parts = PurePosixPath(folder).parts
    if folder.startswith(("/", "\\")) or "\\" in folder or ".." in parts or ":" in parts[0]:
        raise BundleError(f"{mpath}: member folder {printable(folder)!r} lies outside the bundle")
    return root.joinpath(*parts)


def _refuse_local(cls, params: Any, folder: Path, label: str) -> None:
    """Refuse a member naming a file, folder or command line (its class's
    local parameters): compared as strings, before any constraint looks a
    path up, so that a bundle can neither make the loader read a file nor
    learn from the answer whether one exists."""
    if not isinstance(params, dict):
        raise BundleError(f"{folder}: malformed (field 'params')")
    for name in cls.local_settings(params):
        raise BundleError(f"{folder}: member {label!r} sets {name!r}, a file, folder or command line on the "
                          f"machine that made the bundle; a bundle may name nothing outside itself")


def write_bundle(out: str | Path, members: Mapping[str, Any], method: Any | None, info: Mapping[str, Any]) -> Path:
    """Save fitted ``members`` ({label: Tagger}) and ``method`` (a fitted
    MetaLearner, or None for a single tagger) with ``info`` (label scheme,
    corpus fingerprint, scores, ...) into the new folder ``out``. Written
    beside ``out`` first and renamed, so ``out`` is either whole or absent."""
    out = Path(out)
    if out.exists():
        raise BundleError(f"{out}: already exists (choose a new folder for the bundle)")
    private_dir(out.parent if str(out.parent) else Path("."))  # an existing parent is the user's: left as it is
    remove_stale_partials(out)
    tmp = out.with_name(PARTIAL.format(name=out.name, pid=os.getpid()))
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        private_dir(tmp)
        entries = []
        for i, (label, tagger) in enumerate(members.items()):
            folder = f"members/{i:02d}-{tagger.name}"
            private_dir(tmp / "members")
            tagger.save(tmp / folder)
            entries.append({"label": label, "name": tagger.name, "version": tagger.version, "folder": folder,
                            "params": encodable(tagger.saved_params())})
        method_entry = None
        if method is not None:
            method.save(tmp / "method")
            # Members a pruned method never consults are left out of the bundle.
            unused = [n for n in method.member_names_ if n not in members]
            method_entry = {"name": method.name, "folder": "method", "members": list(method.member_names_),
                            "unused": unused}
        owner_only_tree(tmp)  # whatever a library's own writer did (torch.save follows the umask)
        manifest = {
            "format": BUNDLE_FORMAT, "format_version": BUNDLE_VERSION, "ensemble_deid_version": __version__,
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "members": entries, "method": method_entry,
            **info,
            # Trained models hold words of their training notes (feature strings, vocabularies).
            "contains_training_text": any(not getattr(t, "external", False) for t in members.values()),
            "files": folder_checksums(tmp, BundleError, skip=(MANIFEST,)),
        }
        manifest["manifest_sha256"] = _manifest_checksum(manifest)
        write_private(tmp / MANIFEST, json.dumps(manifest, indent=1, sort_keys=True, default=str).encode("utf-8"))
        os.replace(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out


def remove_stale_partials(out: str | Path) -> list[Path]:
    """Remove the half-written bundles for ``out`` that a killed ``fit`` left
    beside it (``.NAME.partial-PID`` of a process no longer running: they
    hold models of the training notes); returns them, each also logged."""
    out = Path(out)
    removed = []
    for path in out.parent.glob(PARTIAL.format(name=out.name, pid="*")) if out.parent.is_dir() else ():
        pid = path.name.rpartition("-")[2]
        if not pid.isdigit() or (int(pid) != os.getpid() and _running(int(pid))):
            continue
        shutil.rmtree(path, ignore_errors=True)
        if not path.exists():
            removed.append(path)
            log.warning("removed %s, a partial bundle left by an interrupted fit (process %s)", printable(str(path)), pid)
    return removed


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process: running
        return True
    return True


def training_text_notice(path: str | Path, manifest: Mapping[str, Any] | None = None) -> str:
    """What to tell whoever just wrote the bundle at ``path`` about its
    contents ('' when no member learned from the notes' words). ``manifest``:
    its manifest, already verified (else read and verified here: every file
    hashed again)."""
    manifest = read_manifest(path) if manifest is None else manifest
    if not manifest.get("contains_training_text"):
        return ""
    if manifest.get("shareable"):
        k = manifest["shareable"]["min_documents"]
        return (f"note: {path} holds words of its training notes only where they occur in at least {k} training "
                f"documents (the others were replaced by their shapes); frequent names can still be among them")
    return (f"note: {path} contains words of its training notes (the models' feature strings and vocabularies "
            f"include names, places and other identifiers seen in training): keep and share it only as you "
            f"would the training notes themselves")


def scheme_labels(labels: Iterable[str], label_map: str | None = None) -> tuple[list[str], int]:
    """(the labels a bundle may record, how many others were left out).
    Kept: ``CATEGORY:TYPE`` labels of the known schemes (i2b2, MEDDOCAN) and
    the targets of the corpus's label map. Any other type name is data (a
    BRAT type column or an XML element can hold a word of a note): counted,
    never stored."""
    from ..corpus.formats.schemes import KNOWN_PARENTS
    from ..corpus.labelmap import LabelMap

    targets = set(LabelMap.load(label_map).types.values()) if label_map else set()
    kept, unknown = set(), 0
    for label in set(labels):
        category, _, type_ = label.partition(":")
        if KNOWN_PARENTS.get(type_) == category or label in targets or type_ in targets:
            kept.add(label)
        else:
            unknown += 1
    return sorted(kept), unknown


def read_manifest(path: str | Path) -> dict:
    """The verified manifest of a bundle: right format and version, its own
    checksum, and every file present, unchanged and listed."""
    root = Path(path)
    mpath = root / MANIFEST
    if not root.is_dir():
        raise BundleError(f"{root}: not a bundle folder")
    try:
        mode = os.lstat(mpath).st_mode
    except OSError as exc:
        raise BundleError(f"{mpath}: cannot read the bundle manifest ({exc.strerror})") from None
    if not stat.S_ISREG(mode):  # a link or a FIFO: read nothing through it
        raise BundleError(f"{mpath}: not a regular file (a bundle holds only its own files)")
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
    files = manifest.get("files")
    if not isinstance(files, dict) or not all(isinstance(v, str) for v in files.values()):
        raise BundleError(f"{mpath}: malformed (field 'files')")
    check_folder(root, files, BundleError, skip=(MANIFEST,))  # only files really inside the bundle are ever read
    return manifest


def read_bundle(path: str | Path, allow_external: Mapping[str, str] | None = None,
                trusted: Iterable[str] | None = None) -> tuple[dict, dict[str, Any], Any | None]:
    """(manifest, {label: fitted Tagger}, fitted MetaLearner or None).
    ``allow_external``: {tagger name: program path on this machine} for the
    members that run a program (refused otherwise). ``trusted``: manifest
    checksums the user got from the bundle's author over a channel they trust
    (``fit`` prints it); when given, any other bundle is refused."""
    from ..taggers.registry import entry_points
    from ..taggers.state import StateError

    root = Path(path)
    manifest = read_manifest(root)
    mpath = root / MANIFEST
    if trusted is not None and manifest["manifest_sha256"] not in {t.strip().lower() for t in trusted}:
        raise BundleError(f"{mpath}: manifest checksum {manifest['manifest_sha256']} is not one of the trusted "
                          f"bundles given (--trust): not the bundle its author made, or another one")
    registered = entry_points()  # once for all members
    try:
        members = {m["label"]: _load_member(root, m, dict(allow_external or {}), registered)
                   for m in manifest["members"]}
        method = None
        if manifest.get("method"):  # the ensemble package only for an ensemble: a second of imports
            from ..ensemble.registry import load_method

            method = load_method(_inside(root, manifest["method"]["folder"], mpath))
    except (StateError, ValueError) as exc:  # ValueError: a neural checkpoint refused by its loader
        raise BundleError(str(exc)) from None
    except (KeyError, TypeError, AttributeError) as exc:
        raise BundleError(f"{mpath}: malformed (field {printable(str(exc))[:80]})") from None
    except RecursionError:
        raise BundleError(f"{mpath}: malformed (nested too deeply)") from None
    if method is None and len(members) != 1:
        raise BundleError(f"{mpath}: {len(members)} members and no ensemble method (a bundle without one holds "
                          "exactly one tagger)")
    if method is not None and set(method.member_names_) != set(members) | set(manifest["method"].get("unused", ())):
        raise BundleError(f"{root / MANIFEST}: the method's members {list(method.member_names_)} "
                          f"are not the bundle's members {list(members)}")
    if method is not None:
        try:  # the checks fit runs against the members (a threshold no span can reach)
            method.check_members(len(method.member_names_))
        except ValueError as exc:
            raise BundleError(f"{_inside(root, manifest['method']['folder'], mpath)}: {exc}") from None
    return manifest, members, method


def _load_member(root: Path, entry: Mapping[str, Any], allow_external: Mapping[str, str], registered=None):
    """A member through its own class's ``load`` (a folder of state for most
    taggers, one weights-only torch checkpoint for the neural family). A
    member that runs a program gets the program the user named, never one
    the bundle names, and is configured as ``fit`` configures it (external
    systems are not trained)."""
    from ..taggers.registry import tagger_class

    folder = _inside(root, entry["folder"], root / MANIFEST)
    cls = tagger_class(entry["name"], registered)
    label = printable(str(entry["label"]))
    if str(entry["version"]) != str(cls.version):
        raise BundleError(f"{folder}: member {label!r} was saved by tagger version "
                          f"{printable(str(entry['version']))}; the installed {cls.name!r} is version {cls.version}: "
                          f"refit it")
    program = cls.program_param
    if program and cls.name not in allow_external:
        raise BundleError(
            f"{folder}: member {label!r} is the external system {cls.name!r}, which runs a program; a bundle never "
            f"chooses a program to run: name it on this machine with --allow-external {cls.name}=PATH "
            f"(Python: allow_external={{{cls.name!r}: PATH}}) if you trust this bundle")
    try:  # local parameters refused before anything checks or uses them; threads and device are this machine's
        tagger = cls.load(folder, vet=lambda klass, params: _refuse_local(klass, params, folder, label))
    except (EnsembleDeidError, ValueError) as exc:  # the message names the file, or we add it
        raise BundleError(str(exc) if str(folder) in str(exc) else f"{folder}: {exc}") from None
    if program:
        tagger = tagger.clone().set_params(**{program: str(allow_external[cls.name])})  # the bundle's is never used
        tagger.fit([])
    return tagger
