"""``mist``: the MITRE Identification Scrubber Toolkit (MIST, built on MAT) as
an external ensemble member.

Run mode: point it at a MIST installation with ``mist_home`` or the
environment variable ``ENSEMBLE_DEID_MIST_HOME`` (the folder holding
``bin/MATEngine``, or ``src/MAT/bin/MATEngine``). The documents are written as
raw UTF-8 files to a private temporary folder and tagged by::

    MATEngine --task TASK --workflow WORKFLOW --steps STEPS
              --input_dir IN --input_file_type raw --input_encoding utf-8
              --output_dir OUT --output_file_type mat-json --output_fsuff .json
              --tagger_local [--tagger_model MODEL] [EXTRA_ARGS]

(``--tagger_local``: MAT otherwise asks a running MAT web server to tag.
MIST ships no trained model: give ``model=`` a model trained with
``MATModelBuilder``, or a task whose default model you have built.)

Text: a ``clean`` step may rewrite carriage returns and non-ASCII characters
in the signal. A signal that differs from the gold text only there is aligned
with it and its spans mapped back (``realigned_documents_`` counts them); any
other difference is an error naming the first differing offset.

Import mode: ``import_dir`` holds MAT outputs made elsewhere, one per
document and named by document id: MAT JSON (``ID.json``, also
``ID.txt.json``) or inline XML (``ID.xml``). Each signal must equal the gold
text. Tag names map to i2b2 types by ``labelmaps/mist.toml`` (or
``label_map=FILE``); structural sets (lex, zone, SEGMENT) are ignored.
"""
from __future__ import annotations

import logging
import os
import shlex
import subprocess
import tempfile
from pathlib import Path
from typing import Sequence

from ensemble_deid.corpus.document import Annotation, Document
from ensemble_deid.taggers.external.base import (
    ExternalOutputError, ExternalTagger, ExternalToolError, ForeignSpan, MappingStats, check_bounds, check_text,
    files_digest, hybridmethod, label_map_problem, load_category_map, map_spans,
)
from ensemble_deid.taggers.external.mat_format import CleanedTextMap, NotCleanedText, read_mat_file
from ensemble_deid.taggers.constraints import MAX_SECONDS, Interval, Options

ENV = "ENSEMBLE_DEID_MIST_HOME"
log = logging.getLogger(__name__)
_SUFFIXES = (".json", ".txt.json", ".xml")


def _cleaned_text_map(doc: Document, signal: str, source: str) -> CleanedTextMap | None:
    """None when the signal is the gold text; the offset map when it differs
    only where MIST's clean step rewrites (carriage returns, non-ASCII);
    otherwise an error naming the first differing offset."""
    if signal == doc.text:
        return None
    try:
        return CleanedTextMap.align(doc.text, signal)
    except NotCleanedText as exc:
        raise ExternalOutputError(
            f"{source}: its text differs from the gold text of document {doc.id!r} ({len(signal)} vs "
            f"{len(doc.text)} characters; first difference at offset {exc.offset} of the gold text that is not "
            "a carriage return or non-ASCII character, the only ones MIST's clean step rewrites)"
        ) from None


def find_engine(home: str | Path) -> Path | None:
    home = Path(home)
    for rel in ("bin/MATEngine", "src/MAT/bin/MATEngine", "MATEngine"):
        if (home / rel).is_file():
            return home / rel
    return None


class MistTagger(ExternalTagger):
    name = "mist"
    version = "1"
    description = "MIST / MAT: run MATEngine, or import MAT JSON / inline XML outputs"

    _parameter_constraints = {
        "mist_home": [None, str], "task": [str], "workflow": [str], "steps": [str], "model": [None, str],
        "extra_args": [str], "import_dir": [None, str], "import_format": [Options("auto", "json", "xml-inline")],
        "label_map": [None, str], "timeout": [Interval(float, 0, MAX_SECONDS, closed="right")],
    }
    program_param = "mist_home"
    local_params = ("model", "extra_args", "import_dir", "label_map")  # extra_args: the program's command line

    def __init__(self, mist_home=None, task="HIPAA Deidentification", workflow="Demo", steps="zone,tag", model=None,
                 extra_args="", import_dir=None, import_format="auto", label_map=None, timeout=3600):
        self._store_params(locals())

    @property
    def mode(self) -> str:
        return "import" if self.import_dir else "run"

    def _availability(self_or_cls):
        if isinstance(self_or_cls, type):
            env = os.environ.get(ENV)
            if env:
                return (True, "") if find_engine(env) else (False, f"{ENV}={env} holds no bin/MATEngine")
            # Parameters may still configure one instance (cv checks instances).
            return False, f"not configured: set {ENV}, or give mist_home=... (run) or import_dir=... (import)"
        self = self_or_cls
        if self.import_format not in ("auto", "json", "xml-inline"):
            return False, f"import_format must be auto, json or xml-inline, not {self.import_format!r}"
        if problem := label_map_problem(self.label_map):
            return False, problem
        if self.mode == "import":
            if not Path(self.import_dir).is_dir():
                return False, f"import_dir {self.import_dir} is not a directory"
            return True, ""
        home = self.mist_home or os.environ.get(ENV)
        if not home:
            return False, f"MIST is not configured: set {ENV} or give mist_home=PATH (or import outputs with import_dir=...)"
        if find_engine(home) is None:
            return False, f"no bin/MATEngine under {home}"
        if self.model and not Path(self.model).exists():
            return False, f"model {self.model} not found"
        return True, ""

    availability = hybridmethod(_availability)

    def input_digest(self) -> str:
        ok, _ = self.availability()
        if not ok:
            return ""
        files: list = []
        if self.mode == "import":
            files = [p for p in sorted(Path(self.import_dir).iterdir()) if p.name.endswith(_SUFFIXES)]
        else:
            files = [find_engine(self.mist_home or os.environ[ENV])] + ([self.model] if self.model and Path(self.model).is_file() else [])
        if self.label_map:
            files.append(self.label_map)
        return files_digest(files)

    def environment(self) -> dict[str, str]:
        env = super().environment()
        env["mode"] = self.mode
        if self.mode == "run":
            env["task"], env["workflow"], env["steps"] = self.task, self.workflow, self.steps
        env["realigned_documents"] = str(getattr(self, "realigned_documents_", 0))
        return env

    def _prepare(self) -> None:
        self.category_map_ = load_category_map(self.label_map, "mist")
        if self.mode == "import":
            index = {}
            for p in sorted(Path(self.import_dir).iterdir()):
                for suffix in _SUFFIXES[::-1]:  # longest first: ID.txt.json before ID.json
                    if p.name.endswith(suffix):
                        doc_id = p.name[: -len(suffix)]
                        if doc_id in index:
                            raise ExternalOutputError(f"{self.import_dir}: two outputs for document {doc_id!r} ({Path(index[doc_id]).name}, {p.name})")
                        index[doc_id] = str(p)
                        break
            self.index_ = index

    def _foreign_spans(self, documents: Sequence[Document]) -> list[list[Annotation]]:
        if self.mode == "import":
            missing = [d.id for d in documents if d.id not in self.index_]
            if missing:
                shown = ", ".join(repr(m) for m in missing[:20])
                raise ExternalOutputError(
                    f"mist: {self.import_dir} has no output for {len(missing)} of {len(documents)} document(s): "
                    f"{shown}{' ...' if len(missing) > 20 else ''}"
                )
            return self._read_all(documents, [self.index_[d.id] for d in documents], self.import_format)
        with tempfile.TemporaryDirectory(prefix="edeid-mist-") as tmp:
            os.chmod(tmp, 0o700)
            paths = self._run(documents, Path(tmp))
            return self._read_all(documents, paths, "json")

    def _read_all(self, documents, paths, fmt) -> list[list[Annotation]]:
        stats = MappingStats()
        out = []
        realigned = 0
        for doc, path in zip(documents, paths):
            signal, spans = read_mat_file(path, fmt)
            cleaned = _cleaned_text_map(doc, signal, str(path))
            realigned += cleaned is not None
            foreign = []
            for s in spans:
                start, end = (cleaned.start(s.start), cleaned.end(s.end)) if cleaned else (s.start, s.end)
                check_bounds(doc, start, end, str(path), s.label)
                if end > start:
                    foreign.append(ForeignSpan(start, end, s.label))
            out.append(map_spans(foreign, self.category_map_, stats, f"{path} (document {doc.id!r})"))
        self._note_mapping(stats)
        self.realigned_documents_ = realigned
        if realigned:
            log.info("mist: %d of %d signal(s) had carriage returns or non-ASCII characters rewritten "
                     "(MIST's clean step); their spans were mapped back to the gold text", realigned, len(documents))
        return out

    def _run(self, documents: Sequence[Document], tmp: Path) -> list[Path]:
        engine = find_engine(self.mist_home or os.environ[ENV])
        src, dst = tmp / "in", tmp / "out"
        src.mkdir()
        dst.mkdir()
        names = []
        for i, doc in enumerate(documents):  # file names from positions: ids may hold any character
            name = f"doc{i:06d}.txt"
            (src / name).write_text(doc.text, encoding="utf-8", newline="")
            names.append(name)
        cmd = [
            str(engine), "--task", self.task, "--workflow", self.workflow, "--steps", self.steps,
            "--input_dir", str(src), "--input_file_type", "raw", "--input_encoding", "utf-8",
            "--output_dir", str(dst), "--output_file_type", "mat-json", "--output_fsuff", ".json",
            "--tagger_local",  # without it MAT asks a MAT web server to tag
        ]
        if self.model:
            cmd += ["--tagger_model", str(self.model)]
        cmd += shlex.split(self.extra_args or "")
        try:
            proc = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=self.timeout)
        except subprocess.TimeoutExpired:
            raise ExternalToolError(f"MATEngine did not finish within {self.timeout} s") from None
        except OSError as exc:
            raise ExternalToolError(f"cannot run {engine} ({exc.strerror})") from None
        if proc.returncode != 0:
            raise ExternalToolError(f"MATEngine exited with status {proc.returncode} (its output is not shown: it may quote the notes)")
        paths = []
        for name in names:
            candidates = [dst / (name + ".json"), dst / (Path(name).stem + ".json")]
            found = next((c for c in candidates if c.is_file()), None)
            if found is None:
                raise ExternalToolError(f"MATEngine wrote no output for input {name}")
            paths.append(found)
        return paths
