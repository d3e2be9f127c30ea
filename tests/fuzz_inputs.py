"""Fuzzing every corpus loader entry point with mutated i2b2 XML and BRAT files.

Seed notes carry planted PHI strings (each holds a space, so no id- or
name-shaped field can ever show one). Some cases also put a single PHI word
where metadata belongs: a BRAT type column, an XML element name, a TYPE or
an id attribute (issue 35 item 15); such a word must never be printed either
(checked without regard to case: BRAT types are upper-cased). Each case is a mutation of a seed (byte
flips, cut or copied ranges, hostile snippets such as DTDs, encodings, BOMs,
markup in TEXT, BRAT fragments and broken lines, odd file names). Cases go in
folders of ``BATCH`` files; every folder goes through ``read_directory``
(``corpus check``'s loader), ``load_directory`` (``evaluate``'s and the
workspace's), and the ``corpus check``, ``corpus add`` and ``evaluate``
commands. A finding is a traceback (any exception but the toolkit's own
errors, any CLI exit but 0/1 with a message) or a planted PHI string in any
message, warning, output or written file.

    python -m tests.fuzz_inputs --cases 2000 --seed 21    # prints figures
    python -m tests.fuzz_inputs --bundles --cases 300 --seed 35   # tampered model bundles (see below)

``deidentify`` gets its own cases (``run_deid_fuzz``, ``--deidentify N``):
folders of seed notes (plain ``.txt``, BRAT, XML, some mutated) plus one
special file each: a FIFO or a link to a device named ``x.txt``/``x.xml``, a
link loop, a dangling link, a folder named ``x.txt``, names of 240 to 255
bytes or not UTF-8; run in tag and surrogate mode under a watchdog. A
finding is also a run that hangs, or one that neither succeeds nor names
the special file.
"""
from __future__ import annotations

import argparse
import logging
import os
import random
import re
import shutil
import tempfile
import time
import traceback
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from click.testing import CliRunner

from ensemble_deid.cli import main
from ensemble_deid.corpus.document import Annotation, Document
from ensemble_deid.corpus.formats import load_directory, read_directory, to_i2b2_xml
from ensemble_deid.errors import EnsembleDeidError

PHI = ("Zacarias Quintanilla", "Calle de Toledo 42", "03 de abril de 2019", "Hospital San Ysidro", "Dra. Olga Berrocal")
# Single PHI words put in metadata fields (no space: they fit every id and name shape).
PHI_WORDS = ("Zacarias", "Quintanilla", "Berrocal", "Ysidro")
METADATA_RATE = 0.3
BATCH = 20

_SNIPPETS_XML = [
    b'<!DOCTYPE deIdi2b2 SYSTEM "file:///etc/passwd">', b'<!DOCTYPE r PUBLIC "-//A//B//EN" "http://x/y.dtd">',
    b'<!DOCTYPE r [<!ENTITY a "aaaa"><!ENTITY b "&a;&a;&a;">]>', b'<!DOCTYPE r [<!ENTITY x SYSTEM "file:///etc/passwd">]>',
    b"&x;", b"&b;", b"<b>", b"</b>", b'<xi:include xmlns:xi="http://www.w3.org/2001/XInclude" href="/etc/passwd"/>',
    b"<![CDATA[", b"]]>", b"\x00", b"\xff\xfe", b"\xef\xbb\xbf", b"\xc3\x28", b"\xed\xa0\x80", b"<!--", b"-->",
    b"<?pi x?>", b' start="-5"', b' end="99999999999999999999"', b' start="4" end="2"', b' TYPE=""', b"<TAGS>",
    b"</TAGS>", b"<TEXT>", b"</TEXT>", b"<NAME/>", b'<DATE id="P0" start="0" end="1" TYPE="DATE"/>',
    "\u2028\u0085\r\n\t".encode(), b"&#0;", b"&#xD800;", b"&#65535;",
]
_DECLARATIONS = [b"UTF-8", b"TTF-8", b"Shift_JIS", b"UTF-7", b"UTF-16", b"latin-1", b"rot13", b"EUC-JP", b"x" * 80]
_SNIPPETS_BRAT = [
    b"\t", b"\n", b"\r\n", b";", b" ", b"T1", b"T1\tNAME 0 5\tx\n", b"T9\tFECHAS 3 1;0 2\n", b"-1", b"99999999999",
    b";5 9", b"\xff", b"\x00", "\u2028".encode(), b"#1\tAnnotatorNotes T1\tnote\n", b"R1\tRel Arg1:T1 Arg2:T2\n",
    b"A1\tNeg T1\n", b"T1 NOMBRE_SUJETO_ASISTENCIA 0 5 ",
]
_NAMES = ["100-01", "bad\nname", "esc\x1b[2Jape", "tab\tname", "dot.d.ots", "space name", "ü-名前", "x" * 120]


def seed_documents() -> list[Document]:
    """Notes in which each planted PHI string is annotated (also inside the
    text attribute), with CR LF, tabs and non-ASCII text around them."""
    docs = []
    rng = random.Random(7)
    fillers = ["Paciente ", " visto el ", " en ", ".\r\nRemitido por ", " al ", "; control\ten ", " ñandú ± ", "\n"]
    labels = ["NAME:PATIENT", "LOCATION:STREET", "DATE:DATE", "LOCATION:HOSPITAL", "NAME:DOCTOR"]
    for k in range(6):
        text, anns = "", []
        for i in rng.sample(range(len(PHI)), len(PHI)):
            text += rng.choice(fillers)
            category, type_ = labels[i].split(":")
            anns.append(Annotation(len(text), len(text) + len(PHI[i]), category, type_, PHI[i], f"P{len(anns)}"))
            text += PHI[i]
        docs.append(Document(f"{100 + k}-01", text + ".\n", anns))
    return docs


def _brat_pair(doc: Document) -> tuple[bytes, bytes]:
    types = {"PATIENT": "NOMBRE_SUJETO_ASISTENCIA", "STREET": "CALLE", "DATE": "FECHAS",
             "HOSPITAL": "HOSPITAL", "DOCTOR": "NOMBRE_PERSONAL_SANITARIO"}
    lines = [f"T{i + 1}\t{types.get(a.type, a.type)} {a.start} {a.end}\t{doc.text[a.start:a.end]}"
             for i, a in enumerate(doc.annotations)]
    return doc.text.encode("utf-8"), ("\n".join(lines) + "\n").encode("utf-8")


def _mutate(data: bytes, rng: random.Random, snippets: list[bytes]) -> bytes:
    data = bytearray(data)
    for _ in range(rng.choice((0, 1, 1, 1, 2, 3, 6))):
        op = rng.randrange(8)
        i = rng.randrange(len(data) + 1)
        if op == 0 and data:  # flip bytes
            for _ in range(rng.randint(1, 4)):
                data[rng.randrange(len(data))] = rng.randrange(256)
        elif op == 1:  # delete a range
            del data[i:i + rng.randint(1, 40)]
        elif op == 2 and data:  # copy a range elsewhere
            j = rng.randrange(len(data))
            data[i:i] = data[j:j + rng.randint(1, 60)]
        elif op == 3:  # hostile snippet
            data[i:i] = rng.choice(snippets)
        elif op == 4:  # cut off
            del data[i:]
        elif op == 5:  # change a digit run (offsets)
            digits = [k for k, b in enumerate(data) if 48 <= b <= 57]
            if digits:
                k = rng.choice(digits)
                data[k:k + 1] = str(rng.choice((0, -1, 1, 7, 10 ** 6, rng.randrange(400)))).encode()
        else:  # swap two lines, or a line's tabs become spaces
            lines = bytes(data).split(b"\n")
            if len(lines) > 2:
                a, b = rng.sample(range(len(lines)), 2)
                if op == 6:
                    lines[a], lines[b] = lines[b], lines[a]
                else:
                    lines[a] = lines[a].replace(b"\t", b" ")
                data = bytearray(b"\n".join(lines))
    return bytes(data)


def _mutate_xml(doc: Document, rng: random.Random) -> bytes:
    data = to_i2b2_xml(doc, rng.choice(("deIdi2b2", "MEDDOCAN"))).encode("utf-8")
    roll = rng.random()
    if roll < 0.12:  # another declared encoding
        data = data.replace(b'encoding="UTF-8"', b'encoding="' + rng.choice(_DECLARATIONS) + b'"')
    elif roll < 0.2:  # re-encoded, with or without a byte order mark
        enc = rng.choice(("utf-16-le", "utf-16-be", "utf-32-le", "utf-16"))
        text = data.decode("utf-8").replace('encoding="UTF-8"', 'encoding="UTF-16"')
        return (b"\xff\xfe" if rng.random() < 0.5 and enc == "utf-16-le" else b"") + text.encode(enc)
    elif roll < 0.3:  # text not in CDATA: markup and entities inside it
        text = data.decode("utf-8").replace("<![CDATA[", "").replace("]]>", "")
        data = text.encode("utf-8")
    return _mutate(data, rng, _SNIPPETS_XML)


def _xml_metadata_word(data: bytes, rng: random.Random) -> bytes:
    """A PHI word as a tag's element name, TYPE or id, or as an element of the root."""
    word = rng.choice(PHI_WORDS).encode()
    where = rng.randrange(4)
    if where == 0:  # a tag's element name
        return re.sub(rb"<(NAME|LOCATION|DATE) ", b"<" + word + b" ", data, count=1)
    if where == 1:
        return re.sub(rb'TYPE="[^"]*"', b'TYPE="' + word + b'"', data, count=1)
    if where == 2:
        return re.sub(rb'id="[^"]*"', b'id="' + word + b'"', data, count=1)
    return data.replace(b"</TEXT>", b"</TEXT><" + word + b"/>", 1)


def _brat_metadata_word(ann: bytes, rng: random.Random) -> bytes:
    """A PHI word in the type column or the id column of a ``T`` line."""
    word = rng.choice(PHI_WORDS).encode()
    if rng.random() < 0.7:
        return re.sub(rb"^(T\d+\t)[A-Z_]+", rb"\g<1>" + word, ann, count=1, flags=re.M)
    return re.sub(rb"^T\d+\t", b"T" + word + b"\t", ann, count=1, flags=re.M)


def _name(rng: random.Random, k: int) -> bytes:
    if rng.random() < 0.9:
        return f"{100 + k:03d}-{rng.randrange(100):02d}".encode()
    if rng.random() < 0.2:
        return b"caf\xe9-%d" % k  # not UTF-8
    return f"{rng.choice(_NAMES)}-{k}".encode()


@dataclass
class Findings:
    cases: int = 0
    metadata_cases: int = 0  # files with a PHI word in a metadata field
    folders: int = 0
    xml_files: int = 0
    brat_files: int = 0
    problems_reported: int = 0
    documents_loaded: int = 0
    seconds: float = 0.0
    tracebacks: list[str] = field(default_factory=list)
    phi_leaks: list[str] = field(default_factory=list)

    def summary(self) -> str:
        return (f"{self.cases} mutated files ({self.xml_files} XML, {self.brat_files} BRAT pairs; "
                f"{self.metadata_cases} with a PHI word in a metadata field) in "
                f"{self.folders} folders, {self.documents_loaded} documents loaded, {self.problems_reported} "
                f"problems reported; {len(self.tracebacks)} tracebacks, {len(self.phi_leaks)} PHI leaks; "
                f"{self.seconds:.1f} s")


def _where(exc: BaseException) -> str:
    """Exception type and the innermost frame (never its message: it may quote the input)."""
    frames = traceback.extract_tb(exc.__traceback__)
    last = frames[-1] if frames else None
    return f"{type(exc).__name__} at {Path(last.filename).name}:{last.lineno}" if last else type(exc).__name__


def meddocan_seeds(directory: Path, n: int = 40) -> tuple[list[Document], tuple[str, ...]]:
    """The first ``n`` MEDDOCAN documents as seeds, and their PHI strings
    that hold a space (those no id- or name-shaped field can show)."""
    docs = load_directory(directory)[:n]
    phi = {d.text[a.start:a.end] for d in docs for a in d.annotations}
    return docs, tuple(sorted(p for p in phi if " " in p.strip() and len(p) >= 8))


def _write_case(folder: Path, rng: random.Random, fmt: str, k: int, docs: list[Document]) -> bool:
    """Write one case; whether it holds a PHI word in a metadata field."""
    doc = rng.choice(docs)
    name = _name(rng, k)
    base = os.fsencode(folder) + b"/" + name
    metadata = rng.random() < METADATA_RATE
    if fmt == "xml":
        data = to_i2b2_xml(doc, rng.choice(("deIdi2b2", "MEDDOCAN"))).encode("utf-8")
        data = _mutate(_xml_metadata_word(data, rng), rng, _SNIPPETS_XML) if metadata else _mutate_xml(doc, rng)
        with open(base + b".xml", "wb") as fh:
            fh.write(data)
        return metadata
    txt, ann = _brat_pair(doc)
    if metadata:
        ann = _brat_metadata_word(ann, rng)
    if rng.random() < 0.25:
        txt = _mutate(txt, rng, _SNIPPETS_BRAT)
    if rng.random() < 0.9:
        ann = _mutate(ann, rng, _SNIPPETS_BRAT)
    with open(base + b".txt", "wb") as fh:
        fh.write(txt)
    if rng.random() < 0.95:
        with open(base + b".ann", "wb") as fh:
            fh.write(ann)
    return metadata


def _check_folder(folder: Path, fmt: str, workspace: Path, findings: Findings, phi: tuple[str, ...]) -> None:
    label = f"{folder.name} ({fmt})"
    captured: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record):
            captured.append(self.format(record))

    handler = Collect()
    logging.getLogger().addHandler(handler)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            docs = []
            try:
                docs, problems = read_directory(folder, fmt)
                findings.documents_loaded += len(docs)
                findings.problems_reported += len(problems)
                captured += [str(p) for p in problems]
            except EnsembleDeidError as exc:
                captured.append(str(exc))
            except Exception as exc:  # noqa: BLE001 - a finding
                findings.tracebacks.append(f"read_directory {label}: {_where(exc)}")
            try:
                load_directory(folder, fmt)
            except EnsembleDeidError as exc:
                captured.append(str(exc))
            except Exception as exc:  # noqa: BLE001
                findings.tracebacks.append(f"load_directory {label}: {_where(exc)}")
        captured += [str(w.message) for w in caught]
    finally:
        logging.getLogger().removeHandler(handler)

    # The files that loaded go on alone through registration, fingerprints,
    # tokenization and scoring (a folder with any fatal file stops before).
    survivors = folder / "loaded"
    survivors.mkdir()
    for doc in docs:
        source = Path(doc.metadata["source"])
        for path in ([source] if fmt == "xml" else [source, source.with_suffix(".ann")]):
            if path.exists():
                shutil.copyfile(path, survivors / path.name)
    runner = CliRunner()
    env = {"ENSEMBLE_DEID_HOME": str(workspace)}
    commands = []
    for where in (folder, survivors):
        commands += [
            ["corpus", "check", "--format", fmt, str(where)],
            ["corpus", "add", "fuzz", "--format", fmt, "--train", str(where), "--test", str(where), "--replace"],
            ["evaluate", "--input-format", fmt, "--gold", str(where), "--system", str(where), "--format", "json"],
        ]
    commands.append(["corpus", "show", "fuzz"])
    for args in commands:
        result = runner.invoke(main, args, env=env)
        exc = result.exception
        if (exc is not None and not isinstance(exc, SystemExit)) or result.exit_code not in (0, 1) or "Traceback" in result.output:
            findings.tracebacks.append(f"{args[0]} {args[1]} {label}: {_where(exc) if exc else result.exit_code}")
        captured.append(result.output)
    for path in workspace.rglob("*"):
        if path.is_file():
            captured.append(path.read_text(encoding="utf-8", errors="replace"))
    for text in captured:
        for leaked in (p for p in phi if p in text):
            findings.phi_leaks.append(f"{label}: {leaked!r}")
        lowered = text.lower()
        for leaked in (w for w in PHI_WORDS if w.lower() in lowered):
            findings.phi_leaks.append(f"{label}: metadata word {leaked!r}")


def run_fuzz(cases: int, seed: int, budget_s: float | None = None, keep: Path | None = None,
             seeds: tuple[list[Document], tuple[str, ...]] | None = None) -> Findings:
    """Generate ``cases`` mutated files (half XML, half BRAT pairs) of the
    seed documents (default: ours, with ``PHI`` planted) and run every loader
    entry point on them; stops early once ``budget_s`` is spent."""
    rng = random.Random(seed)
    docs, phi = seeds or (seed_documents(), PHI)
    findings = Findings()
    start = time.perf_counter()
    root = Path(tempfile.mkdtemp(prefix="edeid-fuzz-"))
    try:
        workspace = root / "workspace"
        workspace.mkdir()
        while findings.cases < cases:
            if budget_s is not None and time.perf_counter() - start > budget_s:
                break
            fmt = "xml" if findings.folders % 2 == 0 else "brat"
            folder = root / f"f{findings.folders:04d}"
            folder.mkdir()
            n = min(BATCH, cases - findings.cases)
            for k in range(n):
                findings.metadata_cases += _write_case(folder, rng, fmt, k, docs)
            findings.cases += n
            findings.folders += 1
            if fmt == "xml":
                findings.xml_files += n
            else:
                findings.brat_files += n
            _check_folder(folder, fmt, workspace, findings, phi)
            if keep is None:
                shutil.rmtree(folder)
    finally:
        if keep is not None:
            shutil.copytree(root, keep, dirs_exist_ok=True)
        shutil.rmtree(root, ignore_errors=True)
    findings.seconds = time.perf_counter() - start
    return findings


# --- deidentify ------------------------------------------------------------------------

SPECIALS = ("fifo-txt", "fifo-xml", "urandom-txt", "zero-xml", "loop-txt", "dangling-txt", "folder-txt",
            "name-240", "name-251", "name-not-utf8", "fifo-ann")
DEID_SECONDS = 60  # one deidentify run on a handful of notes takes a few seconds


@dataclass
class DeidFindings(Findings):
    """``run_deid_fuzz``'s counts: ``documents_loaded`` are runs that
    succeeded, ``problems_reported`` runs that refused a file by name."""

    def summary(self) -> str:
        return (f"deidentify: {self.folders} folders with a special file ({self.xml_files} XML notes, "
                f"{self.brat_files} BRAT pairs beside them), {self.documents_loaded} runs succeeded, "
                f"{self.problems_reported} refused the file by name; {len(self.tracebacks)} tracebacks or hangs, "
                f"{len(self.phi_leaks)} PHI leaks; {self.seconds:.1f} s")


class _Hung(BaseException):
    """Raised in the main thread by the watchdog (no CLI handler catches it)."""


def _special(folder: Path, kind: str, rng: random.Random, docs: list[Document]) -> str:
    """Make one special file in ``folder``; the name a refusal must show (or "" when the run must succeed)."""
    text, ann = _brat_pair(rng.choice(docs))
    if kind.startswith("fifo-"):
        ext = kind.split("-")[1]
        if ext == "ann":
            (folder / "x.txt").write_bytes(text)
        os.mkfifo(folder / f"x.{ext}")
        return f"x.{ext}"
    if kind in ("urandom-txt", "zero-xml"):
        name = "x.txt" if kind == "urandom-txt" else "x.xml"
        (folder / name).symlink_to("/dev/urandom" if kind == "urandom-txt" else "/dev/zero")
        return name
    if kind == "loop-txt":
        (folder / "x.txt").symlink_to(folder / "y.txt")
        (folder / "y.txt").symlink_to(folder / "x.txt")
        return "x.txt"
    if kind == "dangling-txt":
        (folder / "x.txt").symlink_to(folder / "missing")
        return "x.txt"
    if kind == "folder-txt":
        (folder / "x.txt").mkdir()
        return "x.txt"
    if kind == "name-not-utf8":
        with open(os.fsencode(folder) + b"/caf\xe9.txt", "wb") as fh:
            fh.write(text)
        return "caf"
    stem = "7" * (int(kind.split("-")[1]) - 4)  # 240 or 251 bytes with ".txt": the outputs' names too
    (folder / f"{stem}.txt").write_bytes(text)
    (folder / f"{stem}.ann").write_bytes(ann)
    return ""


def _deid_bundle(root: Path) -> Path:
    from ensemble_deid.deid import Deidentifier
    from ensemble_deid.taggers.registry import make_tagger

    path = root / "bundle"
    Deidentifier({"rules": make_tagger("rules").fit([])}).save(path, {"labels": ["DATE:DATE"]})
    return path


def _watched(seconds: float, call):
    """``call()``, or _Hung in the main thread after ``seconds``."""
    import signal
    import threading

    def hung(*_):
        raise _Hung

    previous = signal.signal(signal.SIGUSR1, hung)
    timer = threading.Timer(seconds, os.kill, (os.getpid(), signal.SIGUSR1))
    timer.start()
    try:
        return call()
    finally:
        timer.cancel()
        signal.signal(signal.SIGUSR1, previous)


def _invoke_watched(runner: CliRunner, args: list[str], label: str, tracebacks: list[str]):
    """The command's result, or None with a finding in ``tracebacks`` when
    it hangs or ends in an exception that is not a CLI exit."""
    try:
        result = _watched(DEID_SECONDS, lambda: runner.invoke(main, args))
    except _Hung:
        tracebacks.append(f"{label}: still running after {DEID_SECONDS} s")
        return None
    exc = result.exception
    if (exc is not None and not isinstance(exc, SystemExit)) or "Traceback" in result.output:
        tracebacks.append(f"{label}: {_where(exc) if exc else 'Traceback'}")
        return None
    return result


def run_deid_fuzz(folders: int, seed: int, budget_s: float | None = None,
                  seeds: tuple[list[Document], tuple[str, ...]] | None = None) -> Findings:
    """``folders`` folders of seed notes with one special file each (cycling
    through ``SPECIALS``) through ``deidentify`` in tag and surrogate mode."""
    rng = random.Random(seed)
    docs, phi = seeds or (seed_documents(), PHI)
    findings = DeidFindings()
    start = time.perf_counter()
    root = Path(tempfile.mkdtemp(prefix="edeid-fuzz-deid-"))
    runner = CliRunner()
    try:
        bundle = _deid_bundle(root)
        for k in range(folders):
            if budget_s is not None and time.perf_counter() - start > budget_s:
                break
            kind = SPECIALS[k % len(SPECIALS)]
            folder = root / f"d{k:04d}"
            folder.mkdir()
            refusable = []  # files a refusal may name: the special one, a mutated plain note
            for i, doc in enumerate(rng.sample(docs, min(3, len(docs)))):
                txt, ann = _brat_pair(doc)
                if i == 0:
                    (folder / "n0.xml").write_bytes(to_i2b2_xml(doc).encode("utf-8"))
                    findings.xml_files += 1
                elif i == 1:
                    (folder / "n1.txt").write_bytes(txt)
                    (folder / "n1.ann").write_bytes(ann)
                    findings.brat_files += 1
                elif rng.random() < 0.5:
                    (folder / "n2.txt").write_bytes(_mutate(txt, rng, _SNIPPETS_BRAT))
                    refusable.append("n2.txt")
                else:
                    (folder / "n2.txt").write_bytes(txt)
            named = _special(folder, kind, rng, docs)
            refusable += [named] if named else []
            findings.cases += 1
            findings.folders += 1
            for mode in ("tag", "surrogate"):
                args = ["deidentify", str(bundle), str(folder), "--out", str(root / f"out{k}-{mode}"), "--mode", mode,
                        "--spans", "brat", "--no-progress"]
                label = f"{folder.name} ({kind}, {mode})"
                result = _invoke_watched(runner, args, f"deidentify {label}", findings.tracebacks)
                if result is None:
                    continue
                if result.exit_code == 0:
                    findings.documents_loaded += 1
                elif result.exit_code == 1 and any(name in result.output for name in refusable):
                    findings.problems_reported += 1
                else:
                    findings.tracebacks.append(f"deidentify {label}: exit {result.exit_code} without naming the file")
                for leaked in (p for p in phi if p in result.output):
                    findings.phi_leaks.append(f"deidentify {label}: {leaked!r}")
            shutil.rmtree(folder, ignore_errors=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    findings.seconds = time.perf_counter() - start
    return findings


# --- deidentify's options (issue 52) --------------------------------------------------------
#
# Operating points (random JSON: NaN, infinities, huge, nested, unknown keys, values in and out of the
# scores' range), --jobs far above the notes, note names made of PHI (with and without --rename) and
# notes under extensions and in folders the scan skips. A finding is a traceback, a PHI word of a file
# name in the output, or a silent release: a run that exits 0 with every note's text/ file equal to
# the note, without a warning that nothing was tagged.

OPTION_KINDS = ("operating-point", "jobs", "names", "extensions")
_POINT_VALUES = ["NaN", "Infinity", "-Infinity", "1e999", "-1e999", "1e300", "-1e300", "1e-300", "0", "1", "2", "3",
                 "2.5", "-0.8", "99", '"2"', "[1]", '{"*": 1}', "true", "null", "123456789012345678901234567890"]
_POINT_KEYS = ['"*"', '"DATE"', '"NAME"', '"LOCATION"', '"date"', '"NAMEX"', '"Fecha"', '""', '"*"']


@dataclass
class OptionFindings:
    cases: dict = field(default_factory=dict)  # kind -> cases run
    exits: dict = field(default_factory=dict)  # exit code -> runs
    tracebacks: list[str] = field(default_factory=list)
    phi_leaks: list[str] = field(default_factory=list)
    silent_releases: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def summary(self) -> str:
        kinds = ", ".join(f"{n} {k}" for k, n in sorted(self.cases.items()))
        return (f"deidentify options: {sum(self.cases.values())} cases ({kinds}); exits {dict(sorted(self.exits.items()))}; "
                f"{len(self.tracebacks)} tracebacks, {len(self.phi_leaks)} PHI leaks, "
                f"{len(self.silent_releases)} silent releases; {self.seconds:.1f} s")


def random_operating_point(rng: random.Random) -> str:
    roll = rng.random()
    if roll < 0.08:
        depth = rng.choice([10, 1000, 100_000])
        return "[" * depth + "]" * depth if rng.random() < 0.5 else '{"*": ' * depth + "1" + "}" * depth
    if roll < 0.12:
        return rng.choice(["{*: 1}", "{", "", "NaN", "[]", '"x"', "1"])
    if roll < 0.4:  # the whole output's threshold alone: the shape that released every note
        return '{"*": ' + rng.choice(_POINT_VALUES) + "}"
    items = [f"{rng.choice(_POINT_KEYS)}: {rng.choice(_POINT_VALUES)}" for _ in range(rng.randint(0, 3))]
    return "{" + ", ".join(items) + "}"


def _phi_name(rng: random.Random) -> str:
    parts = [rng.choice(PHI_WORDS), rng.choice(PHI_WORDS), rng.choice(["MRN", "dob", ""]),
             str(rng.randrange(10 ** 5, 10 ** 8)), rng.choice(["2019-04-03", "03.04.2019", ""])]
    return "_".join(p for p in parts if p)


def _option_bundle(root: Path, docs: list[Document]) -> Path:
    """A voting bundle (threshold 1) over the rule tagger and a CRF fitted on the seed notes."""
    from ensemble_deid.deid import Deidentifier
    from ensemble_deid.ensemble.voting import Voting
    from ensemble_deid.taggers.registry import make_tagger

    members = {"rules": make_tagger("rules").fit([]), "crf": make_tagger("crf", max_iterations=20).fit(docs)}
    method = Voting(threshold=1).fit({k: {p.doc_id: p for p in t.predict(docs)} for k, t in members.items()}, docs)
    labels = sorted({f"{a.category}:{a.type}" for d in docs for a in d.annotations} | {"DATE:DATE"})
    path = root / "bundle"
    Deidentifier(members, method, {"labels": labels}).save(path)
    return path


def run_option_fuzz(cases: int, seed: int, budget_s: float | None = None) -> OptionFindings:
    rng = random.Random(seed)
    docs = seed_documents()
    findings = OptionFindings()
    start = time.perf_counter()
    root = Path(tempfile.mkdtemp(prefix="edeid-fuzz-options-"))
    runner = CliRunner()
    try:
        bundle = _option_bundle(root, docs)
        for k in range(cases):
            if budget_s is not None and time.perf_counter() - start > budget_s:
                break
            kind = OPTION_KINDS[k % len(OPTION_KINDS)]
            folder, out = root / f"in{k}", root / f"out{k}"
            folder.mkdir()
            extra: list[str] = []
            names, texts = [], {}
            for i, doc in enumerate(rng.sample(docs, rng.randint(1, len(docs)))):
                stem = _phi_name(rng) + f"_{i}" if kind in ("names", "extensions") else f"n{i}"
                names.append(stem)
                (folder / f"{stem}.txt").write_bytes(doc.text.encode("utf-8"))
                texts[stem] = doc.text
            if kind == "operating-point":
                extra = ["--operating-point", random_operating_point(rng)]
            elif kind == "jobs":
                extra = ["--jobs", str(rng.choice([1, 2, 3, 7, 64, 1000])), "--batch-size", str(rng.randint(1, 3))]
            elif kind == "names":
                rename = rng.choice([None, "hash", "index"])
                extra = ["--rename", rename] if rename else []
            else:
                for _ in range(rng.randint(1, 4)):
                    target = folder / f"{_phi_name(rng)}{rng.choice(['.TXT', '.text', '.Xml', '.md', '.ANN', '', '.Quintanilla'])}"
                    if rng.random() < 0.2:
                        target.mkdir(exist_ok=True)
                        (target / "inner.txt").write_bytes(docs[0].text.encode("utf-8"))
                    elif not target.exists():
                        data = docs[0].text.encode("utf-8")
                        target.write_bytes(to_i2b2_xml(docs[0]).encode("utf-8") if target.suffix == ".Xml" else data)
            findings.cases[kind] = findings.cases.get(kind, 0) + 1
            args = ["deidentify", str(bundle), str(folder), "--out", str(out), "--no-progress", *extra]
            label = f"case {k} ({kind})"
            result = _invoke_watched(runner, args, label, findings.tracebacks)
            if result is None:
                continue
            findings.exits[result.exit_code] = findings.exits.get(result.exit_code, 0) + 1
            said = result.output + (result.stderr if result.stderr_bytes is not None else "")
            if result.exit_code not in (0, 1, 2):
                findings.tracebacks.append(f"{label}: exit {result.exit_code}")
            # A refusal names the file it refuses (a folder named like a note, say); a run that goes
            # through never names one, nor prints a note's PHI.
            for word in PHI if result.exit_code else PHI_WORDS + PHI:
                if word.lower() in said.lower():
                    findings.phi_leaks.append(f"{label}: {word!r} in the output")
            if kind in ("names", "extensions") and result.exit_code == 0 and "--rename" in extra:
                for path in (out / "text").iterdir():
                    if any(w.lower() in path.name.lower() for w in PHI_WORDS):
                        findings.phi_leaks.append(f"{label}: a PHI word in the name of an output")
            if result.exit_code == 0 and (out / "text").is_dir():
                released = [p for p in (out / "text").iterdir() if p.suffix == ".txt"]
                untouched = [p for p in released if p.read_bytes().decode("utf-8") in texts.values()]
                if released and len(untouched) == len(released) and "no PHI tagged" not in said:
                    findings.silent_releases.append(f"{label}: every note released as it came in, exit 0, no warning")
            shutil.rmtree(folder, ignore_errors=True)
            shutil.rmtree(out, ignore_errors=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    findings.seconds = time.perf_counter() - start
    return findings


def main_cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=21)
    parser.add_argument("--meddocan", type=Path, help="seed from this MEDDOCAN folder (e.g. ../shared/corpora/meddocan/dev/xml)")
    parser.add_argument("--deidentify", type=int, default=0, metavar="N",
                        help="also run deidentify on N folders with special files (FIFOs, device links, loops, long names)")
    parser.add_argument("--bundles", action="store_true", help="fuzz tampered model bundles instead of corpus files")
    parser.add_argument("--options", action="store_true",
                        help="fuzz deidentify's options (operating points, --jobs, PHI file names, skipped files)")
    args = parser.parse_args()
    if args.options or args.bundles:
        found = (run_option_fuzz if args.options else run_bundle_fuzz)(args.cases, args.seed)
        lines = (found.tracebacks + found.phi_leaks + found.silent_releases if args.options
                 else found.tracebacks + found.outside_reads + found.probes + found.programs_run)
        print(found.summary())
        for line in lines[:50]:
            print("  " + line)
        raise SystemExit(1 if lines else 0)
    seeds = meddocan_seeds(args.meddocan) if args.meddocan else None
    runs = [run_fuzz(args.cases, args.seed, seeds=seeds)]
    if args.deidentify:
        runs.append(run_deid_fuzz(args.deidentify, args.seed, seeds=seeds))
    for findings in runs:
        print(findings.summary())
        for line in findings.tracebacks[:50] + findings.phi_leaks[:50]:
            print("  " + line)
    raise SystemExit(1 if any(f.tracebacks or f.phi_leaks for f in runs) else 0)



# --- tampered model bundles ----------------------------------------------------------------
#
# A bundle edited by hand, its checksums recomputed (they carry no key): member
# files damaged, manifest and state fields rewritten (folders and file names
# leaving the bundle, external systems pointing at a script inside it,
# parameters out of range, unknown kinds), symbolic links. Loading it and
# de-identifying one note must end in the model or a toolkit error, never a
# traceback, never a program run, never a file opened outside the bundle
# (watched with an audit hook; the interpreter's own files excepted).

_BUNDLE_NOTE = "Record date: 03/04/2012\nPatient " + PHI[0] + " was seen at " + PHI[3] + "."
_RUN_EVENTS = ("subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork", "pty.spawn")


@dataclass
class BundleFindings:
    cases: int = 0
    loaded: int = 0
    refused: int = 0
    seconds: float = 0.0
    tracebacks: list[str] = field(default_factory=list)
    outside_reads: list[str] = field(default_factory=list)
    programs_run: list[str] = field(default_factory=list)

    probes: list[str] = field(default_factory=list)  # paths a bundle named, stat'ed or access-checked

    def summary(self) -> str:
        return (f"{self.cases} tampered bundles: {self.loaded} loaded, {self.refused} refused; "
                f"{len(self.tracebacks)} tracebacks, {len(self.outside_reads)} reads outside the bundle, "
                f"{len(self.probes)} paths it named looked up, "
                f"{len(self.programs_run)} programs run; {self.seconds:.1f} s")


class _Watch:
    """Audit hook (installed once per process) recording, while armed, files
    opened outside ``allowed`` folders and any attempt to start a program."""

    installed: "_Watch | None" = None

    def __init__(self):
        self.armed = False
        self.allowed: tuple[str, ...] = ()
        self.opened: list[str] = []
        self.ran: list[str] = []
        # Paths a tampered bundle names (outside it): a stat or access check
        # of one tells the bundle whether it exists, though nothing is opened.
        self.named: tuple[str, ...] = ()
        self.probed: list[str] = []

    @classmethod
    def get(cls) -> "_Watch":
        import sys

        if cls.installed is None:
            cls.installed = cls()
            sys.addaudithook(cls.installed.hook)
            for name in ("stat", "lstat", "access"):  # not audited events: wrapped while this process fuzzes
                setattr(os, name, cls.installed._looking(getattr(os, name)))
        return cls.installed

    def _looking(self, real):
        def look(path, *args, **kwargs):
            if self.armed and self.named and isinstance(path, (str, bytes, os.PathLike)):
                name = os.fsdecode(path)
                if name.startswith(self.named):
                    self.probed.append(name)
            return real(path, *args, **kwargs)
        return look

    def hook(self, event, args):
        if not self.armed:
            return
        if event == "open" and isinstance(args[0], (str, bytes, os.PathLike)):
            path = os.path.realpath(os.fsdecode(args[0]))
            if not path.startswith(self.allowed):
                self.opened.append(path)
        elif event.startswith(_RUN_EVENTS):
            self.ran.append(event)


def _allowed_roots(bundle: Path) -> tuple[str, ...]:
    import site
    import sys

    import ensemble_deid

    code = Path(ensemble_deid.__file__).resolve().parents[1]
    roots = {os.path.realpath(bundle) + os.sep, os.path.realpath(sys.prefix), os.path.realpath(sys.base_prefix),
             str(code / "ensemble_deid"), str(code / "adapters"), str(code / ".devpath"), "/proc/self/", f"/proc/{os.getpid()}/", "/dev/",
             "/sys/devices/system/cpu"}
    roots |= {os.path.realpath(p) for p in site.getsitepackages() + [site.getusersitepackages()]}
    roots |= {os.path.realpath(p) + os.sep for p in sys.path if p and os.path.isdir(p)}  # imports, entry points
    roots.add(os.path.join(os.path.realpath(tempfile.gettempdir()), "edeid-probe-"))  # the load probe's own scratch
    return tuple(roots)


def fuzz_bundle(root: Path) -> Path:
    """A small voting bundle (a CRF and the rules) fitted on the seed notes."""
    from ensemble_deid.deid import Deidentifier
    from ensemble_deid.ensemble import make_method
    from ensemble_deid.taggers.registry import make_tagger

    docs = seed_documents()
    members = {"crf": make_tagger("crf", max_iterations=5).fit(docs), "rules": make_tagger("rules").fit(docs)}
    preds = {name: {p.doc_id: p for p in t.predict(docs)} for name, t in members.items()}
    method = make_method("voting", threshold=1).fit(preds, docs)
    return Deidentifier(members, method).save(root / "model", {"labels": sorted({a.label for d in docs for a in d.annotations})})


def reseal(root: Path) -> None:
    """Recompute the checksums of an edited bundle (files reached through links included)."""
    import json

    from ensemble_deid.deid.bundle import _manifest_checksum
    from ensemble_deid.files import file_sha256 as _sha256_file

    manifest = json.loads((root / "manifest.json").read_text(encoding="utf-8"))
    if not isinstance(manifest, dict):
        return
    names = sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file() and p.name != "manifest.json")
    files = manifest.get("files") if isinstance(manifest.get("files"), dict) else {}
    files.update({n: _sha256_file(root / n) for n in names})
    manifest["files"] = {n: (_sha256_file(root / n) if (root / n).is_file() else d) for n, d in files.items()}
    manifest["manifest_sha256"] = _manifest_checksum(manifest)
    (root / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")


_HOSTILE_VALUES = [-5, 0, 10 ** 30, 1e308, float("nan"), "abc", "../../x", "/etc/hostname", None, True, [], {"a": 1},
                   [[[[1]]]], "1; rm -rf /",
                   # issue 52: finite but absurd (past a 32-bit float, a C int), thread counts, devices
                   3.5e38, 1e-320, 2 ** 31, 2 ** 63, 1_000_000, "cuda:7"]
# Parameters a bundle may not set or whose value is the machine's (issue 52 items 3, 4), and values for them.
_MACHINE_AND_FILE_PARAMS = ["num_threads", "threads", "device", "embeddings_path", "ehr_names_path", "label_map",
                            "config", "model_path"]


def _within(copy: Path, path: Path) -> bool:
    """Whether ``path`` is strictly inside ``copy`` once links and '..' are
    resolved. An edit writes or deletes only there: an earlier edit may have
    pointed a member at '//etc' or linked a file to /etc/hostname, and this
    harness runs as root (a member folder '//etc' joined to the copy is /etc)."""
    root, resolved = copy.resolve(), path.resolve()
    return resolved != root and root in resolved.parents


def _member_folder(copy: Path, entry: dict) -> Path | None:
    """A manifest entry's folder in ``copy``, or None where it leads out of it or is a link."""
    folder = copy / str(entry.get("folder"))
    return folder if _within(copy, folder) and not folder.is_symlink() else None


def _tamper(copy: Path, rng: random.Random, outside: Path, marker: Path) -> bool:
    """One edit of the bundle ``copy``; returns whether to reseal it. Writes
    and deletes only inside ``copy`` (see :func:`_within`)."""
    import json

    files = sorted(p for p in copy.rglob("*") if p.is_file() and not p.is_symlink() and _within(copy, p))
    manifest_path = copy / "manifest.json"
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    states = [p for p in files if p.name == "state.json"]
    op = rng.randrange(16)
    if op == 0:  # damage any file: flips, cuts, random bytes
        target = rng.choice(files)
        data = target.read_bytes()
        target.write_bytes(_mutate(data, rng, [b"\x00", b"\xff" * 8, b"{", b"[" * 50]))
        return target != manifest_path or rng.random() < 0.5
    if op == 1:  # a member or the method folder leaves the bundle
        folder = rng.choice(["../outside", str(outside), "members/../../outside", "", ".", "members", "//etc"])
        if manifest.get("method") and rng.random() < 0.3:
            manifest["method"]["folder"] = folder
        else:
            rng.choice(manifest["members"])["folder"] = folder
    elif op == 2:  # a listed file outside the bundle
        manifest["files"][rng.choice(["../outside/state.json", str(outside / "state.json"), "/etc/hostname"])] = "0" * 64
        manifest_path.write_text(json.dumps(manifest), encoding="utf-8")
        return False
    elif op == 3:  # a symbolic link in place of a file or folder
        target = rng.choice(files[:-1] or files)
        if target != manifest_path:
            target.unlink()
            os.symlink(rng.choice([outside / "state.json", "/etc/hostname", outside]), target)
    elif op == 4:  # an external system whose program is a script inside the bundle
        name = rng.choice(["physionet-deid", "mist", "precomputed"])
        script = copy / "members" / "prog"
        script.mkdir(exist_ok=True)
        for rel in ("deid.pl", "bin/MATEngine"):
            (script / rel).parent.mkdir(parents=True, exist_ok=True)
            (script / rel).write_text(f"#!/bin/sh\necho ran > '{marker}'\n")
            (script / rel).chmod(0o700)
        (script / "deid.config").write_text("Gold standard comparison = 0\n")
        params = {"physionet-deid": {"deid_pl": str(script / "deid.pl")}, "mist": {"mist_home": str(script)},
                  "precomputed": {"test_dir": str(outside)}}[name]
        entry = rng.choice(manifest["members"])
        folder = _member_folder(copy, entry)
        if folder is None:
            return True
        state = folder / "state.json"
        body = json.loads(state.read_text(encoding="utf-8"))
        body["header"].update(name=name, params={"__dict__": [[k, v] for k, v in params.items()]})
        state.write_text(json.dumps(body), encoding="utf-8")
        from ensemble_deid.taggers.registry import tagger_class

        entry.update(name=name, version=tagger_class(name).version)
    elif op == 5 and states:  # a parameter out of its range, of the wrong type, or unknown
        state = rng.choice(states)
        body = json.loads(state.read_text(encoding="utf-8"))
        params = body["header"].get("params", {}).get("__dict__", [])
        if params:
            key = rng.choice(params)[0] if rng.random() < 0.9 else "no_such_parameter"
            body["header"]["params"]["__dict__"].append([key, rng.choice(_HOSTILE_VALUES)])
            state.write_text(json.dumps(body), encoding="utf-8")
    elif op == 6 and states:  # state values of other kinds: bytes files outside, unknown classes, arrays
        state = rng.choice(states)
        body = json.loads(state.read_text(encoding="utf-8"))
        value = rng.choice([{"__bytes__": "../../../outside/state.json"}, {"__bytes__": str(outside / "state.json")},
                            {"__object__": "Popen", "state": {}}, {"__array__": "nope"}, {"__csr__": {}},
                            {"__weird__": 1}, {"__dict__": [[[1], 2]]}])
        key = rng.choice(list(body["state"]) or ["x_"])
        body["state"][key] = value
        state.write_text(json.dumps(body), encoding="utf-8")
    elif op == 7:  # deep nesting (in the manifest or a state file)
        target = rng.choice([manifest_path] + states)
        target.write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
        return target != manifest_path
    elif op == 8 and states:  # a compressed arrays file (a zip bomb when large)
        import zipfile

        folder = rng.choice(states).parent
        with zipfile.ZipFile(folder / "arrays.npz", "w", compression=zipfile.ZIP_DEFLATED) as zf:
            zf.writestr("a0.npy", b"\x93NUMPY\x01\x00v\x00{'descr': '<f8', 'fortran_order': False, 'shape': (100000000,), }"
                        .ljust(128, b" ")[:127] + b"\n" + bytes(1 << 20))
    elif op == 9:  # manifest fields of the wrong shape
        key = rng.choice(["members", "method", "files", "labels", "format_version"])
        manifest[key] = rng.choice(_HOSTILE_VALUES)
    elif op == 10:  # a member of another name or version
        entry = rng.choice(manifest["members"])
        entry[rng.choice(["name", "version", "label"])] = rng.choice(["lstm-l", "svm", "nope", 7, None, "../x"])
    elif op == 12 and manifest.get("method"):  # a method parameter fit refuses against the members (issue 52 item 5)
        state = copy / str(manifest["method"].get("folder")) / "state.json"
        body = json.loads(state.read_text(encoding="utf-8"))
        n = len(manifest["members"])
        body["header"].setdefault("params", {"__dict__": []}).setdefault("__dict__", []).append(
            ["threshold", rng.choice([n + 1, n + 2, 2 ** 31, 10 ** 6])])
        state.write_text(json.dumps(body), encoding="utf-8")
    elif op == 13 and states:  # a file, thread count or device set by the bundle (issue 52 items 3, 4)
        state = rng.choice(states)
        body = json.loads(state.read_text(encoding="utf-8"))
        value = rng.choice([str(outside / "state.json"), str(outside / "missing.txt"), "/etc/passwd",
                            "/etc/no-such-file", 1_000_000, "cuda:7"])
        body["header"].setdefault("params", {"__dict__": []}).setdefault("__dict__", []).append(
            [rng.choice(_MACHINE_AND_FILE_PARAMS), value])
        state.write_text(json.dumps(body), encoding="utf-8")
    elif op == 14 and states:  # an absurd finite number for a numeric parameter (issue 52 item 10)
        state = rng.choice(states)
        body = json.loads(state.read_text(encoding="utf-8"))
        params = body["header"].get("params", {}).get("__dict__", [])
        numeric = [p for p in params if isinstance(p[1], (int, float)) and not isinstance(p[1], bool)]
        if numeric:
            rng.choice(numeric)[1] = rng.choice([1e308, -1e308, 3.5e38, 2 ** 31, 2 ** 63, 1e-320])
            state.write_text(json.dumps(body), encoding="utf-8")
    elif op == 15:  # a checkpoint whose tensor entry is compressed: 200 MB from a few hundred KB (issue 52 item 13)
        import io
        import zipfile

        entry = rng.choice(manifest["members"])
        folder = _member_folder(copy, entry)
        if folder is None:
            return True
        if folder.is_dir():
            shutil.rmtree(folder)
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w") as zf:
            zf.writestr("archive/data.pkl", b"\x80\x02}q\x00.")
            bomb = zipfile.ZipInfo("archive/data/0")
            bomb.compress_type = zipfile.ZIP_DEFLATED
            with zf.open(bomb, "w", force_zip64=True) as fh:
                for _ in range(200):
                    fh.write(bytes(1 << 20))
            zf.writestr("archive/version", b"3\n")
        folder.write_bytes(buf.getvalue())
        entry["name"] = "lstm-l"
        from ensemble_deid.taggers.registry import tagger_class

        entry["version"] = tagger_class("lstm-l").version
    else:  # a torch pickle in place of a member folder
        entry = rng.choice(manifest["members"])
        folder = _member_folder(copy, entry)
        if folder is not None and folder.is_dir():
            shutil.rmtree(folder)
            folder.write_bytes(b"\x80\x04\x95\x1c\x00\x00\x00\x00\x00\x00\x00\x8c\x02os\x94\x8c\x06system\x94\x93\x94"
                               b"\x8c\x04true\x94\x85\x94R\x94.")
            entry["name"] = "lstm-l"
    manifest_path.write_text(json.dumps(manifest), encoding="utf-8")
    return True


def run_bundle_fuzz(cases: int, seed: int, budget_s: float | None = None) -> BundleFindings:
    """``cases`` tampered copies of a fitted bundle, each loaded and used on
    one note under the audit hook."""
    from ensemble_deid.corpus.document import Document as Doc
    from ensemble_deid.deid import Deidentifier

    rng = random.Random(seed)
    findings = BundleFindings()
    start = time.perf_counter()
    root = Path(tempfile.mkdtemp(prefix="edeid-bfuzz-"))
    watch = _Watch.get()
    try:
        bundle = fuzz_bundle(root)
        outside = root / "outside"
        shutil.copytree(bundle / "members" / "00-crf", outside)
        marker = root / "program-ran"
        while findings.cases < cases and (budget_s is None or time.perf_counter() - start < budget_s):
            copy = root / f"b{findings.cases:04d}"
            shutil.copytree(bundle, copy)
            ops = rng.choice((1, 1, 1, 2, 3))
            reseal_it = True
            for _ in range(ops):
                try:
                    reseal_it = _tamper(copy, rng, outside, marker) and reseal_it
                except (ValueError, KeyError, TypeError, AttributeError, IndexError, OSError, RecursionError):
                    break  # an earlier edit left nothing this one can parse: the case as it stands
            if reseal_it:
                try:
                    reseal(copy)
                except (ValueError, OSError, RecursionError):
                    pass  # a manifest too damaged to reseal is a case as it stands
            findings.cases += 1
            watch.allowed, watch.opened, watch.ran = _allowed_roots(copy), [], []
            watch.named, watch.probed = (str(outside), "/etc/passwd", "/etc/no-such-file", "/etc/hostname"), []
            watch.armed = True
            try:
                model = Deidentifier.load(copy)
                model.spans([Doc("note", _BUNDLE_NOTE)])
                findings.loaded += 1
            except EnsembleDeidError as exc:
                findings.refused += 1
                if any(p in str(exc) for p in PHI):
                    findings.tracebacks.append(f"case {findings.cases}: PHI in the message")
            except Exception as exc:  # noqa: BLE001 - a finding
                findings.tracebacks.append(f"case {findings.cases}: {_where(exc)}")
            finally:
                watch.armed = False
            findings.outside_reads += [f"case {findings.cases}: {p}" for p in watch.opened]
            findings.probes += [f"case {findings.cases}: {p}" for p in watch.probed]
            findings.programs_run += [f"case {findings.cases}: {e}" for e in watch.ran]
            if marker.exists():
                findings.programs_run.append(f"case {findings.cases}: the bundle's script ran")
                marker.unlink()
            shutil.rmtree(copy, ignore_errors=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    findings.seconds = time.perf_counter() - start
    return findings


if __name__ == "__main__":
    main_cli()
