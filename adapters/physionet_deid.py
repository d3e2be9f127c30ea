"""``physionet-deid``: PhysioNet's deid (``deid.pl``, rules and lexicons for
nursing notes; Neamatullah et al. 2008) as an external ensemble member.

Run mode: point it at an installed ``deid.pl`` with the parameter ``deid_pl``
or the environment variable ``ENSEMBLE_DEID_DEID_PL``. The documents are
written in deid's record format (``START_OF_RECORD=P||||N||||`` ...
``||||END_OF_RECORD``) to a private temporary folder, ``perl deid.pl PREFIX
CONFIG`` runs there in a private copy of deid's folder (links to its lists
and dictionaries, which deid reads from its working directory, but an empty
``pid_patientname.txt``: deid applies that list of known patients by patient
number, and the sample entries it ships would otherwise be matched against our
notes numbered 1..N), and its ``PREFIX.phi`` output of PHI positions comes back
as spans on our text. Categories come from ``PREFIX.info`` (deid's types of
each PHI) when deid wrote it, else from the ``[**marker**]`` of each PHI in
``PREFIX.res``, mapped to i2b2 types by ``labelmaps/physionet-deid.toml`` (or
``label_map=FILE``). The cache key covers deid.pl, its config, its ``.pm``
modules and every file under its ``lists/`` and ``dict/`` folders.

Import mode: ``records=FILE.text`` (the input deid was given) and
``phi=FILE.phi`` (its output, or a ``.deid`` / ``-phi.phrase`` file), with
``res=FILE.res`` optionally for categories. Records are matched to our
documents by their text, which must equal the gold text.

deid.pl counts bytes; ``offsets="chars"`` reads files whose offsets count
characters instead.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Sequence

from ensemble_deid.corpus.document import Annotation, Document
from ensemble_deid.taggers.external.base import (
    ExternalOutputError, ExternalTagger, ExternalToolError, ForeignSpan, MappingStats, byte_to_char_offsets,
    check_bounds, files_digest, grouped_numbers, hybridmethod, label_map_problem, load_category_map, map_spans,
)
from ensemble_deid.taggers.external.physionet_format import (
    PhiFile, format_records, parse_info, parse_phi, parse_records, read_text_file, res_categories,
)
from ensemble_deid.taggers.constraints import MAX_SECONDS, Interval, Options

ENV = "ENSEMBLE_DEID_DEID_PL"
DEFAULT_CATEGORY = "PHI"  # the name given to a span whose category deid did not say
PATIENT_LIST = "pid_patientname.txt"  # deid's known patients by patient number: emptied in the private copy
RESOURCE_FOLDERS = ("lists", "dict")  # read by deid.pl from its working directory: part of the cache key
_GOLD_RE = re.compile(r"^\s*Gold standard comparison\s*=\s*(\d+)", re.IGNORECASE | re.MULTILINE)


class PhysioNetDeidTagger(ExternalTagger):
    name = "physionet-deid"
    version = "1"
    description = "PhysioNet deid (deid.pl): run it, or import its .phi output"

    _parameter_constraints = {
        "deid_pl": [None, str], "config": [None, str], "records": [None, str], "phi": [None, str], "res": [None, str],
        "offsets": [Options("bytes", "chars")], "label_map": [None, str],
        "timeout": [Interval(float, 0, MAX_SECONDS, closed="right")],
    }
    program_param = "deid_pl"
    local_params = ("config", "records", "phi", "res", "label_map")

    def __init__(self, deid_pl=None, config=None, records=None, phi=None, res=None, offsets="bytes",
                 label_map=None, timeout=3600):
        self._store_params(locals())

    # --- configuration --------------------------------------------------------------
    @property
    def mode(self) -> str:
        return "import" if self.phi else "run"

    def _availability(self_or_cls):
        if isinstance(self_or_cls, type):
            env = os.environ.get(ENV)
            if env:
                return _check_program(env, None)
            # Parameters may still configure one instance (cv checks instances).
            return False, f"not configured: set {ENV}, or give deid_pl=... (run) or records=...,phi=... (import)"
        self = self_or_cls
        if self.offsets not in ("bytes", "chars"):
            return False, f"offsets must be bytes or chars, not {self.offsets!r}"
        if problem := label_map_problem(self.label_map):
            return False, problem
        if self.mode == "import":
            for what in ("records", "phi", "res"):
                value = getattr(self, what)
                if what != "res" and not value:
                    return False, f"import mode needs both records=FILE.text and phi=FILE.phi ({what} is missing)"
                if value and not Path(value).is_file():
                    return False, f"{what} file {value} does not exist"
            return True, ""
        program = self.deid_pl or os.environ.get(ENV)
        if not program:
            return False, f"deid.pl is not configured: set {ENV} or give deid_pl=PATH (or import its output with records=...,phi=...)"
        ok, reason = _check_program(program, self.config)
        if not ok:
            return ok, reason
        try:
            problem = _config_problem(self._config())
            return (False, problem) if problem else (True, "")
        except ExternalToolError as exc:
            return False, str(exc)

    availability = hybridmethod(_availability)

    def _program(self) -> Path:
        return Path(self.deid_pl or os.environ[ENV]).resolve()

    def _config(self) -> Path:
        if self.config:
            return Path(self.config).resolve()
        folder = self._program().parent
        for name in ("deid-output.config", "deid.config"):
            if (folder / name).is_file():
                return folder / name
        raise ExternalToolError(f"no config given and no deid-output.config or deid.config beside {self._program()}")

    def input_digest(self) -> str:
        ok, _ = self.availability()
        if not ok:
            return ""
        if self.mode == "import":
            files = [self.records, self.phi] + ([self.res] if self.res else [])
        else:
            files = _deid_files(self._program().parent) + [self._program(), self._config()]
        if self.label_map:
            files.append(self.label_map)
        return files_digest(files)

    def environment(self) -> dict[str, str]:
        env = super().environment()
        env["mode"] = self.mode
        if self.mode == "run" and (self.deid_pl or os.environ.get(ENV)):
            env["deid_pl"] = str(self.deid_pl or os.environ.get(ENV))
            perl = shutil.which("perl")
            if perl:
                try:
                    out = subprocess.run([perl, "-e", "print $^V"], capture_output=True, text=True, timeout=30)
                    env["perl"] = out.stdout.strip()
                except (OSError, subprocess.SubprocessError):
                    env["perl"] = "unknown"
        return env

    # --- fit / predict -------------------------------------------------------------------
    def _prepare(self) -> None:
        self.category_map_ = load_category_map(self.label_map, "physionet-deid")
        if self.mode == "import":
            records = parse_records(read_text_file(self.records, "deid records file"), str(self.records))
            phi = parse_phi(read_text_file(self.phi, "deid PHI file"), str(self.phi))
            res = parse_records(read_text_file(self.res, "deid .res file"), str(self.res)) if self.res else None
            self.imported_ = (records, phi, res)

    def _foreign_spans(self, documents: Sequence[Document]) -> list[list[Annotation]]:
        if self.mode == "import":
            records, phi, res = self.imported_
            keys = _match_records(documents, records, str(self.records))
            info = {}
        else:
            keys = grouped_numbers(documents)
            records, phi, res, info = self._run(documents, keys)
        stats = MappingStats()
        out = []
        for doc, key in zip(documents, keys):
            source = f"{phi.source} (record patient {key[0]} note {key[1]}, document {doc.id!r})"
            if key not in phi.records:
                raise ExternalOutputError(f"{phi.source}: no entry for record patient {key[0]} note {key[1]} (document {doc.id!r})")
            spans = self._spans_of(doc, records.get(key, doc.text), phi.records[key], phi, res.get(key) if res else None,
                                   source, info.get(key, {}))
            out.append(map_spans(spans, self.category_map_, stats, source))
        self._note_mapping(stats)
        return out

    def _spans_of(self, doc: Document, record_text: str, entries, phi: PhiFile, res_text, source,
                  info: dict[tuple[int, int], list[str]]) -> list[ForeignSpan]:
        table = byte_to_char_offsets(record_text) if self.offsets == "bytes" else None
        limit = len(record_text.encode("utf-8")) if table is not None else len(record_text)
        spans = []
        for e in entries:
            if e.end > limit:
                raise ExternalOutputError(
                    f"{source}: line {e.line}: span [{e.start}, {e.end}) lies off the record "
                    f"({limit} {self.offsets})"
                )
            start, end = (int(table[e.start]), int(table[e.end])) if table is not None else (e.start, e.end)
            if end > len(doc.text) and not record_text[len(doc.text):end].strip():
                end = len(doc.text)  # the newline written after the text closes the record
            check_bounds(doc, start, end, source, f"line {e.line}")
            # .info types are taken only when the map knows them: a field may be the phrase itself
            typed = next((f for f in info.get((e.start, e.end), ()) if self.category_map_.knows(f)), None)
            spans.append((start, end, e.category or typed))
        names: dict[tuple[int, int], str] = {}
        if any(c is None for _, _, c in spans) and res_text is not None:
            names = res_categories(record_text, res_text, [(s, e) for s, e, _ in spans]) or {}
        return [ForeignSpan(s, e, c or names.get((s, e), DEFAULT_CATEGORY)) for s, e, c in spans if e > s]

    def _run(self, documents: Sequence[Document], keys):
        program, config = self._program(), self._config()
        perl = shutil.which("perl")
        if perl is None:
            raise ExternalToolError("perl is not on PATH")
        text = format_records(documents, keys)
        with tempfile.TemporaryDirectory(prefix="edeid-deid-") as tmp:
            os.chmod(tmp, 0o700)
            workdir = _private_copy(program.parent, Path(tmp) / "deid")
            prefix = Path(tmp) / "records"
            prefix.with_suffix(".text").write_text(text, encoding="utf-8")
            os.chmod(prefix.with_suffix(".text"), 0o600)
            try:
                proc = subprocess.run(
                    [perl, str(workdir / program.name), str(prefix), str(config)], cwd=str(workdir),
                    stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=self.timeout,
                )
            except subprocess.TimeoutExpired:
                raise ExternalToolError(f"deid.pl did not finish within {self.timeout} s") from None
            phi_path = prefix.with_suffix(".phi")
            if proc.returncode != 0 or not phi_path.is_file():
                # Its output is not shown: it may quote the notes.
                what = f"exited with status {proc.returncode}" if proc.returncode else f"wrote no {phi_path.name}"
                raise ExternalToolError(
                    f"deid.pl {what} ({program}, config {config}; its output is not shown, as it may quote the notes). "
                    f"deid.pl reads PREFIX.text in its record format and the config, and needs its lists/ and dict/ "
                    f"folders beside it; with 'Gold standard comparison = 0' in the config it writes PREFIX.phi and "
                    f"PREFIX.res. Run it by hand in {program.parent} on a small record file to see its message"
                )
            phi = parse_phi(read_text_file(phi_path, "deid.pl output"), "deid.pl output " + phi_path.name)
            res_path, info_path = prefix.with_suffix(".res"), prefix.with_suffix(".info")
            res = parse_records(read_text_file(res_path, "deid.pl .res output"), res_path.name) if res_path.is_file() else None
            info = parse_info(read_text_file(info_path, "deid.pl .info output")) if info_path.is_file() else {}
        records = parse_records(text, "records written for deid.pl")
        return records, phi, res, info


def _private_copy(folder: Path, dest: Path) -> Path:
    """deid's folder mirrored under ``dest``: folders made, files linked, but
    every ``pid_patientname.txt`` an empty file, so that no known-patient
    entry it ships (keyed by patient number) is applied to our notes."""
    for root, dirs, files in os.walk(folder):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        target = dest / Path(root).relative_to(folder)
        target.mkdir(mode=0o700)
        for name in files:
            if name.lower() == PATIENT_LIST:
                (target / name).touch(mode=0o600)
            else:
                os.symlink(Path(root) / name, target / name)
    return dest


def _deid_files(folder: Path) -> list[Path]:
    """The files besides deid.pl and its config that change its output: its
    Perl modules and everything under lists/ and dict/ (the emptied
    pid_patientname.txt excepted)."""
    files = sorted(folder.glob("*.pm"))
    for sub in RESOURCE_FOLDERS:
        files += sorted(p for p in (folder / sub).rglob("*") if p.is_file() and p.name.lower() != PATIENT_LIST)
    return files


def _config_problem(config: Path) -> str | None:
    """Why deid.pl cannot run with this config here, before anything runs
    (read as text; a config holds settings, not notes)."""
    try:
        text = config.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        return f"cannot read deid config {config} ({exc.strerror})"
    m = _GOLD_RE.search(text)
    if m and m.group(1) != "0":
        return (
            f"deid config {config} sets 'Gold standard comparison = {m.group(1)}': deid.pl then compares its "
            f"output with a gold-standard PREFIX.deid file, which a run over our documents does not have "
            f"(deid.pl stops with status 2). Use deid's deid-output.config, or a copy of this config with "
            f"'Gold standard comparison = 0'"
        )
    return None


def _check_program(program: str, config: str | None) -> tuple[bool, str]:
    if not Path(program).is_file():
        return False, f"deid.pl not found at {program}"
    if shutil.which("perl") is None:
        return False, "perl is not on PATH"
    if config and not Path(config).is_file():
        return False, f"deid config {config} not found"
    return True, ""


def _match_records(documents: Sequence[Document], records: dict, source: str) -> list[tuple[int, int]]:
    """The record of each document, by text (a record may end with one extra newline)."""
    by_text: dict[str, list] = {}
    for key, text in records.items():
        by_text.setdefault(text, []).append(key)
    keys = []
    missing = []
    for doc in documents:
        for candidate in (doc.text, doc.text + "\n"):
            found = by_text.get(candidate)
            if found:
                keys.append(found.pop(0))
                break
        else:
            missing.append(doc.id)
    if missing:
        shown = ", ".join(repr(m) for m in missing[:20])
        raise ExternalOutputError(
            f"{source}: no record has the text of {len(missing)} document(s): {shown}"
            f"{' ...' if len(missing) > 20 else ''} (records must carry the gold text exactly)"
        )
    return keys
