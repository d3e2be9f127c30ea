"""``physionet-deid``: PhysioNet's deid (``deid.pl``, rules and lexicons for
nursing notes; Neamatullah et al. 2008) as an external ensemble member.

Run mode: point it at an installed ``deid.pl`` with the parameter ``deid_pl``
or the environment variable ``ENSEMBLE_DEID_DEID_PL``. The documents are
written in deid's record format (``START_OF_RECORD=P||||N||||`` ...
``||||END_OF_RECORD``) to a private temporary folder, ``perl deid.pl PREFIX
CONFIG`` runs there with deid's folder as working directory (its lists and
dictionaries are read from there), and its ``PREFIX.phi`` output of PHI
positions comes back as spans on our text. Categories come from the
``[**marker**]`` of each PHI in ``PREFIX.res`` when deid wrote one, mapped to
i2b2 types by ``labelmaps/physionet-deid.toml`` (or ``label_map=FILE``).

Import mode: ``records=FILE.text`` (the input deid was given) and
``phi=FILE.phi`` (its output, or a ``.deid`` / ``-phi.phrase`` file), with
``res=FILE.res`` optionally for categories. Records are matched to our
documents by their text, which must equal the gold text.

deid.pl counts bytes; ``offsets="chars"`` reads files whose offsets count
characters instead.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Sequence

from ensemble_deid.corpus.document import Annotation, Document
from ensemble_deid.taggers.external.base import (
    ExternalOutputError, ExternalTagger, ExternalToolError, ForeignSpan, MappingStats, byte_to_char_offsets,
    check_bounds, files_digest, grouped_numbers, hybridmethod, load_category_map, map_spans,
)
from ensemble_deid.taggers.external.physionet_format import (
    PhiFile, format_records, parse_phi, parse_records, read_text_file, res_categories,
)
from ensemble_deid.taggers.constraints import Interval, Options

ENV = "ENSEMBLE_DEID_DEID_PL"
DEFAULT_CATEGORY = "PHI"  # the name given to a span whose category deid did not say


class PhysioNetDeidTagger(ExternalTagger):
    name = "physionet-deid"
    version = "1"
    description = "PhysioNet deid (deid.pl): run it, or import its .phi output"

    _parameter_constraints = {
        "deid_pl": [None, str], "config": [None, str], "records": [None, str], "phi": [None, str], "res": [None, str],
        "offsets": [Options("bytes", "chars")], "label_map": [None, str],
        "timeout": [Interval(float, 0, None, closed="neither")],
    }

    def __init__(self, deid_pl=None, config=None, records=None, phi=None, res=None, offsets="bytes",
                 label_map=None, timeout=3600):
        self.deid_pl = deid_pl
        self.config = config
        self.records = records
        self.phi = phi
        self.res = res
        self.offsets = offsets
        self.label_map = label_map
        self.timeout = timeout

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
        if self.label_map and not Path(self.label_map).is_file():
            return False, f"label_map {self.label_map} is not a file"
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
        return _check_program(program, self.config)

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
            files = [self._program()]
            try:
                files.append(self._config())
            except ExternalToolError:
                pass
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
        else:
            keys = grouped_numbers(documents)
            records, phi, res = self._run(documents, keys)
        stats = MappingStats()
        out = []
        for doc, key in zip(documents, keys):
            source = f"{phi.source} (record patient {key[0]} note {key[1]}, document {doc.id!r})"
            if key not in phi.records:
                raise ExternalOutputError(f"{phi.source}: no entry for record patient {key[0]} note {key[1]} (document {doc.id!r})")
            spans = self._spans_of(doc, records.get(key, doc.text), phi.records[key], phi, res.get(key) if res else None, source)
            out.append(map_spans(spans, self.category_map_, stats, source))
        self._note_mapping(stats)
        return out

    def _spans_of(self, doc: Document, record_text: str, entries, phi: PhiFile, res_text, source) -> list[ForeignSpan]:
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
            spans.append((start, end, e.category))
        names: dict[tuple[int, int], str] = {}
        if not phi.categorised and res_text is not None:
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
            prefix = Path(tmp) / "records"
            prefix.with_suffix(".text").write_text(text, encoding="utf-8")
            try:
                proc = subprocess.run(
                    [perl, str(program), str(prefix), str(config)], cwd=str(program.parent),
                    stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=self.timeout,
                )
            except subprocess.TimeoutExpired:
                raise ExternalToolError(f"deid.pl did not finish within {self.timeout} s") from None
            if proc.returncode != 0:
                # Its output is not shown: it may quote the notes.
                raise ExternalToolError(f"deid.pl exited with status {proc.returncode} ({program})")
            phi_path = prefix.with_suffix(".phi")
            if not phi_path.is_file():
                raise ExternalToolError(f"deid.pl wrote no {phi_path.name} (check its config {config})")
            phi = parse_phi(read_text_file(phi_path, "deid.pl output"), "deid.pl output " + phi_path.name)
            res_path = prefix.with_suffix(".res")
            res = parse_records(read_text_file(res_path, "deid.pl .res output"), res_path.name) if res_path.is_file() else None
        records = parse_records(text, "records written for deid.pl")
        return records, phi, res


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
