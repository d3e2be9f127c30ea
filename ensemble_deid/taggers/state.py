"""A fitted model's learned state as files, without pickle.

``write_state(folder, header, state)`` stores a JSON document (``state.json``)
in which every value is plain JSON or a tagged reference:

- ``{"__tuple__": [...]}``, ``{"__dict__": [[key, value], ...]}`` (any keys);
- ``{"__array__": name}``: a numpy array in ``arrays.npz`` (numeric dtypes
  only: loaded with ``allow_pickle=False``);
- ``{"__bytes__": file}``: raw bytes in their own file, e.g. a CRFsuite or
  Vowpal Wabbit model file exactly as the library wrote it (named after the
  field, or as a :class:`NamedBlob` asks: ``model.safetensors``);
- ``{"__csr__": {...}}``: a scipy CSR matrix as its three arrays;
- ``{"__object__": name, "state": ...}``: an instance of a class registered
  with :func:`register_state_class` (nothing else is ever constructed).

So loading a model runs no code chosen by the file: a value of an unknown
kind is refused. Every file is written owner-only (0600, folders 0700).
"""
from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import EnsembleDeidError, printable
from ..files import private_dir, read_json, write_private

STATE_FILE = "state.json"
ARRAYS_FILE = "arrays.npz"

_SAFE_CLASSES: dict[str, type] = {}


class StateError(EnsembleDeidError):
    """A saved model that cannot be written or read back (names the file, never data)."""


def register_state_class(cls: type) -> type:
    """Allow instances of ``cls`` in saved state (class decorator). Their
    ``__getstate__`` (or ``__dict__``) is stored; loading calls
    ``__setstate__`` (or fills ``__dict__``) on a bare instance."""
    _SAFE_CLASSES[cls.__name__] = cls
    return cls


class NamedBlob(bytes):
    """Bytes saved in a file of the given name (``model.safetensors``,
    ``config.json``) rather than one named after the field, so a saved model
    reads like its library's own folder. Read back as plain bytes."""

    def __new__(cls, data: bytes, filename: str) -> "NamedBlob":
        if Path(filename).name != filename or filename in (STATE_FILE, ARRAYS_FILE) or filename.startswith("."):
            raise StateError(f"{filename!r}: not a plain file name for saved state")
        blob = super().__new__(cls, data)
        blob.filename = filename
        return blob


def bytes_file_name(field: str) -> str:
    """The file a bytes field of the state is saved in (``model_`` ->
    ``model_.bin``; a second field of the same name gets a number)."""
    return "".join(c if c.isalnum() or c in "_-" else "_" for c in field) + ".bin"


class _Encoder:
    def __init__(self) -> None:
        self.arrays: dict[str, np.ndarray] = {}
        self.blobs: dict[str, bytes] = {}

    def encode(self, value: Any, where: str) -> Any:
        if value is None or isinstance(value, (bool, int, float, str)):
            return value
        if isinstance(value, np.generic):
            return value.item()
        if isinstance(value, list):
            return [self.encode(v, f"{where}[{i}]") for i, v in enumerate(value)]
        if isinstance(value, tuple):
            return {"__tuple__": [self.encode(v, f"{where}[{i}]") for i, v in enumerate(value)]}
        if isinstance(value, dict):
            return {"__dict__": [[self.encode(k, where), self.encode(v, f"{where}[{k!r}]")] for k, v in value.items()]}
        if isinstance(value, np.ndarray):
            if value.dtype.hasobject:
                raise StateError(f"{where}: arrays of Python objects cannot be saved")
            name = f"a{len(self.arrays)}"
            self.arrays[name] = value
            return {"__array__": name}
        if isinstance(value, (bytes, bytearray)):
            name = bytes_file_name(where)
            name = name if name not in self.blobs else f"{name[:-4]}-{len(self.blobs)}.bin"
            if isinstance(value, NamedBlob) and value.filename not in self.blobs:
                name = value.filename
            self.blobs[name] = bytes(value)
            return {"__bytes__": name}
        import scipy.sparse as sp

        if sp.issparse(value):
            m = sp.csr_matrix(value)
            return {"__csr__": {"data": self.encode(m.data, where), "indices": self.encode(m.indices, where),
                                "indptr": self.encode(m.indptr, where), "shape": list(m.shape)}}
        cls = type(value)
        if _SAFE_CLASSES.get(cls.__name__) is cls:
            state = value.__getstate__() if hasattr(cls, "__setstate__") else dict(vars(value))
            return {"__object__": cls.__name__, "state": self.encode(state, where)}
        raise StateError(f"{where}: a {cls.__name__} cannot be saved (not a registered state class)")


def _decode(value: Any, arrays, folder: Path, where: str) -> Any:
    if isinstance(value, list):
        return [_decode(v, arrays, folder, where) for v in value]
    if not isinstance(value, dict):
        return value
    if "__tuple__" in value:
        return tuple(_decode(v, arrays, folder, where) for v in value["__tuple__"])
    if "__dict__" in value:
        return {_decode(k, arrays, folder, where): _decode(v, arrays, folder, where) for k, v in value["__dict__"]}
    if "__array__" in value:
        name = value["__array__"]
        if arrays is None or name not in arrays.files:
            raise StateError(f"{folder / ARRAYS_FILE}: array {name!r} is missing (field {where})")
        return arrays[name]
    if "__bytes__" in value:
        name = Path(str(value["__bytes__"])).name  # never a path outside the folder
        try:
            return (folder / name).read_bytes()
        except OSError as exc:
            raise StateError(f"{folder / name}: cannot read ({exc.strerror})") from None
    if "__csr__" in value:
        import scipy.sparse as sp

        c = value["__csr__"]
        m = sp.csr_matrix((_decode(c["data"], arrays, folder, where), _decode(c["indices"], arrays, folder, where),
                           _decode(c["indptr"], arrays, folder, where)), shape=tuple(c["shape"]))
        m.check_format(full_check=True)  # indices in range, indptr increasing: scipy's C code trusts them
        return m
    if "__object__" in value:
        cls = _SAFE_CLASSES.get(value["__object__"])
        if cls is None:
            raise StateError(f"{folder / STATE_FILE}: field {where}: unknown class {value['__object__']!r} refused")
        obj = cls.__new__(cls)
        state = _decode(value["state"], arrays, folder, where)
        if hasattr(cls, "__setstate__") and "__setstate__" in vars(cls):
            obj.__setstate__(state)
        else:
            obj.__dict__.update(state)
        return obj
    raise StateError(f"{folder / STATE_FILE}: field {where}: value of unknown kind refused")


def write_state(folder: str | Path, header: dict, state: dict[str, Any]) -> Path:
    """Write ``header`` (plain JSON) and ``state`` (see the module docstring)."""
    folder = private_dir(folder, root=folder)  # the model's own folder: owner-only even if it existed
    enc = _Encoder()
    body = {"header": header, "state": {k: enc.encode(v, k) for k, v in state.items()}}
    for name, data in enc.blobs.items():
        write_private(folder / name, data)
    if enc.arrays:
        buf = io.BytesIO()
        np.savez(buf, **enc.arrays)
        write_private(folder / ARRAYS_FILE, buf.getvalue())
    write_private(folder / STATE_FILE, json.dumps(body, indent=1, sort_keys=True).encode("utf-8"))
    return folder


def read_header(folder: str | Path) -> dict:
    return _read_body(Path(folder))["header"]


def _read_body(folder: Path) -> dict:
    path = folder / STATE_FILE
    body = read_json(path, StateError)
    if not isinstance(body, dict) or not isinstance(body.get("header"), dict) or not isinstance(body.get("state"), dict):
        raise StateError(f"{path}: missing field 'header' or 'state'")
    return body


def read_state(folder: str | Path) -> tuple[dict, dict[str, Any]]:
    """(header, state) as written by :func:`write_state`."""
    folder = Path(folder)
    body = _read_body(folder)
    arrays = None
    if (folder / ARRAYS_FILE).exists():
        try:
            _check_arrays(folder / ARRAYS_FILE)
            arrays = np.load(folder / ARRAYS_FILE, allow_pickle=False)
        except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
            raise StateError(f"{folder / ARRAYS_FILE}: not a readable array file ({type(exc).__name__})") from None
    try:
        state = {k: _decode(v, arrays, folder, k) for k, v in body["state"].items()}
    except (KeyError, TypeError, ValueError, EOFError, zipfile.BadZipFile) as exc:
        raise StateError(f"{folder / STATE_FILE}: malformed state ({type(exc).__name__})") from None
    except RecursionError:
        raise StateError(f"{folder / STATE_FILE}: malformed state (nested too deeply)") from None
    return body["header"], state


def _check_arrays(path: Path) -> None:
    """Refuse an arrays file that would unpack to more than it holds (a zip
    bomb): ``np.savez`` stores each array uncompressed, so every entry must
    be stored, and its array's shape and type must account for exactly the
    bytes stored. Only headers are read."""
    with zipfile.ZipFile(path) as zf:
        infos = zf.infolist()
        if sum(i.compress_size for i in infos) > path.stat().st_size:
            raise StateError(f"{path}: entries larger than the file (damaged)")
        for info in infos:
            if info.compress_type != zipfile.ZIP_STORED or info.file_size != info.compress_size:
                raise StateError(f"{path}: entry {printable(info.filename)!r} is compressed "
                                 f"(saved models store their arrays uncompressed)")
            with zf.open(info) as fh:
                version = np.lib.format.read_magic(fh)
                if version not in ((1, 0), (2, 0)):
                    raise StateError(f"{path}: entry {printable(info.filename)!r} has an unknown array format")
                reader = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
                shape, _, dtype = reader(fh)
                if dtype.hasobject or fh.tell() + int(np.prod(shape, dtype=object)) * dtype.itemsize != info.file_size:
                    raise StateError(f"{path}: entry {printable(info.filename)!r} does not hold the array it declares")


def encodable(value: Any) -> Any:
    """``value`` in the JSON form ``write_state`` uses (for parameters)."""
    enc = _Encoder()
    out = enc.encode(value, "params")
    if enc.arrays or enc.blobs:
        raise StateError("parameters must be plain values (no arrays or bytes)")
    return out


def decoded(value: Any) -> Any:
    return _decode(value, None, Path("."), "params")

