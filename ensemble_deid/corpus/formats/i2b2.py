"""i2b2 2014 / N-GRID 2016 / MEDDOCAN XML: any root element holding TEXT and TAGS.

Parsing goes through defusedxml, so entity expansion, external entities and
external DTDs are refused rather than followed.
"""
from __future__ import annotations

import codecs
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from xml.etree.ElementTree import ParseError, TreeBuilder

import defusedxml
import defusedxml.ElementTree as SafeET

from ..document import PARENT_CATEGORIES, Annotation, Document
from ...errors import ERROR, WARNING, Problem
from ...files import write_private
from .schemes import PHI_ELEMENTS, is_known_name, shown_id
from .source import read_source, too_large

ROOTS = ("deIdi2b2", "MEDDOCAN")
_ENCODING_DECL = re.compile(rb"^<\?xml[^>]*encoding\s*=\s*[\"']([A-Za-z0-9._-]+)[\"']")
# Byte order marks, longest first (a UTF-32 LE mark starts like UTF-16 LE's).
_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32-le"), (codecs.BOM_UTF32_BE, "utf-32-be"), (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be"),
)
# Characters XML 1.0 cannot carry at all.
_ATTR_WS = re.compile(r"\r\n|[\t\n\r]")
_INVALID_XML_CHARS = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def read_i2b2_xml(path: str | Path, doc_id: str | None = None) -> tuple[Document | None, list[Problem]]:
    """Read one record. Returns the document (None when the file is unusable)
    and every problem found in it."""
    path = Path(path)
    name = str(path)
    doc_id = doc_id or path.stem
    raw, problems = read_source(path)
    if raw is None:
        return None, problems
    if not raw.strip():
        return None, [Problem(ERROR, name, "file is empty")]
    source, problem = _decode(raw, name)
    if problem is not None:
        return None, [problem]
    try:
        root = _parse(source)
    except _ExternalDTD:
        return None, [Problem(ERROR, name, "refused: the file names an external DTD (document type declaration)", field="DOCTYPE")]
    except defusedxml.EntitiesForbidden as exc:
        # Every entity declaration is refused here, before any reference to it
        # is followed, so an external entity (XXE) also lands in this branch.
        if exc.sysid or exc.pubid:
            return None, [Problem(ERROR, name, "refused: the file declares an external entity (possible XXE attack)")]
        return None, [Problem(ERROR, name, "refused: the file declares XML entities (possible entity-expansion attack)")]
    except defusedxml.ExternalReferenceForbidden:
        return None, [Problem(ERROR, name, "refused: the file references an external entity")]
    except defusedxml.DefusedXmlException as exc:
        return None, [Problem(ERROR, name, f"refused: unsafe XML ({type(exc).__name__})")]
    except ParseError as exc:
        line, col = getattr(exc, "position", (None, None))
        return None, [Problem(ERROR, name, f"malformed XML at line {line}, column {col}")]

    text_el, problem = _single(root, "TEXT", name)
    if problem is not None:
        return None, [problem]
    too_long = too_large(len(text_el.text or ""), name, "TEXT")
    if too_long is not None:
        return None, [too_long]
    if len(text_el):
        # ElementTree would keep only the text before the first child: the
        # note would be cut silently. Element names are not shown (note text).
        return None, [Problem(ERROR, name, "TEXT holds markup (an element inside the note, e.g. <b> or xi:include); "
                                           "escape < and & or wrap the note in CDATA", field="TEXT")]
    text = text_el.text or ""
    if not text.strip():
        problems.append(Problem(WARNING, name, "TEXT is empty", field="TEXT"))
    ignored = [child.tag for child in root if child.tag not in ("TEXT", "TAGS")]
    if ignored:
        problems.append(Problem(WARNING, name, f"{_counted(ignored)} ignored (a record holds TEXT and TAGS)"))

    annotations: list[Annotation] = []
    all_tags = root.findall("TAGS")
    if len(all_tags) > 1:
        return None, problems + [Problem(ERROR, name, f"{len(all_tags)} TAGS elements: a record holds one "
                                                      "(the others would be ignored)", field="TAGS")]
    tags_el = all_tags[0] if all_tags else None
    if tags_el is None:
        problems.append(Problem(WARNING, name, "no TAGS element: document has no annotations", field="TAGS"))
    seen_ids: set[str] = set()
    duplicates: list[str] = []
    for i, el in enumerate(tags_el if tags_el is not None else ()):
        tag_id = shown_id(el.get("id"), f"#{i}")
        if tag_id in seen_ids:
            duplicates.append(tag_id)
        seen_ids.add(tag_id)
        if el.tag not in PARENT_CATEGORIES:
            problems.append(Problem(WARNING, name, f"unknown category element {_element(el.tag)}", tag=tag_id))
        ann = _annotation(el, tag_id, text, name, problems)
        if ann is not None:
            annotations.append(ann)
    if duplicates:
        problems.append(Problem(WARNING, name, f"{len(duplicates)} duplicate tag id(s)", tag=duplicates[0], field="id"))
    problems.extend(overlap_problems(annotations, name))
    problems = capped(problems)
    if any(p.severity == ERROR for p in problems):
        return None, problems
    return Document(doc_id, text, annotations, {"source": name, "format": "i2b2-xml", "root": root.tag}), problems


def _single(root, element: str, name: str) -> tuple:
    """The one ``element`` child of the root, or the problem: none, or several
    (ElementTree's find would keep the first and drop the others' text silently)."""
    found = root.findall(element)
    if not found:
        return None, Problem(ERROR, name, f"no {element} element", field=element)
    if len(found) > 1:
        return None, Problem(ERROR, name, f"{len(found)} {element} elements: a record holds one note "
                                          "(the others would be ignored)", field=element)
    return found[0], None


def _element(tag: str) -> str:
    """An element name as a message prints it: a known one as ``<NAME>``, any
    other (a word typed as an element name may be PHI) without its name."""
    return f"<{tag}>" if is_known_name(tag) else "(name not shown: not a known element)"


def _counted(elements: list[str]) -> str:
    """``"2 <NAME> element(s), 1 element(s) of another name"``: known names, counts for the rest."""
    known = Counter(e for e in elements if is_known_name(e))
    others = len(elements) - sum(known.values())
    parts = [f"{n} <{e}> element(s)" for e, n in sorted(known.items())]
    return ", ".join(parts + ([f"{others} element(s) of another name"] if others else []))


def _decode(raw: bytes, name: str) -> tuple[str, Problem | None]:
    """The file as text: a byte order mark wins, then the XML declaration's
    encoding (any text encoding Python knows), then UTF-8. Decoding here, not
    in expat, gives one clear problem for an unknown or multi-byte encoding."""
    for bom, encoding in _BOMS:
        if raw.startswith(bom):
            raw = raw[len(bom):]
            break
    else:
        if raw.startswith(b"<\0?\0"):
            encoding = "utf-16-le"
        elif raw.startswith(b"\0<\0?"):
            encoding = "utf-16-be"
        else:
            declared = _ENCODING_DECL.match(raw)
            encoding = declared.group(1).decode("ascii") if declared else "utf-8"
    try:
        if codecs.lookup(encoding).name in ("utf-16", "utf-32"):  # declared without a BOM: ambiguous
            raise LookupError(encoding)
        text = raw.decode(encoding)
    except LookupError:
        return "", Problem(ERROR, name, f"unknown or unsupported encoding {encoding!r} in the XML declaration", field="encoding")
    except UnicodeDecodeError as exc:
        label = "UTF-8" if codecs.lookup(encoding).name == "utf-8" else encoding
        return "", Problem(ERROR, name, f"not valid {label} (bad byte at offset {exc.start})")
    return text, None


class _ExternalDTD(Exception):
    pass


def _refuse_external_dtd(name, sysid, pubid, has_internal_subset):
    if sysid or pubid:
        raise _ExternalDTD


def _parse(source: str | bytes):
    """Parse with the hardened parser; an external DTD is refused too
    (defusedxml only refuses all DTDs or none)."""
    parser = SafeET.DefusedXMLParser(target=TreeBuilder(), forbid_dtd=False, forbid_entities=True, forbid_external=True)
    parser.parser.StartDoctypeDeclHandler = _refuse_external_dtd
    parser.feed(source)
    return parser.close()


def _annotation(el, tag_id: str, text: str, file: str, problems: list[Problem]) -> Annotation | None:
    values: dict[str, int] = {}
    for attr in ("start", "end"):
        raw = el.get(attr)
        if raw is None:
            problems.append(Problem(ERROR, file, "missing attribute", tag=tag_id, field=attr))
            continue
        try:
            values[attr] = int(raw)
        except ValueError:
            problems.append(Problem(ERROR, file, "not an integer", tag=tag_id, field=attr))
    type_ = el.get("TYPE")
    if not type_:
        problems.append(Problem(ERROR, file, "missing attribute", tag=tag_id, field="TYPE"))
    if len(values) < 2 or not type_:
        return None
    start, end = values["start"], values["end"]
    if not (0 <= start < end <= len(text)):
        problems.append(Problem(
            ERROR, file, f"offsets [{start}, {end}) out of range for a text of {len(text)} characters",
            tag=tag_id, field="start/end",
        ))
        return None
    covered = el.get("text")
    # An XML parser normalises white space inside attribute values (tab, CR
    # and LF become spaces), so a tag spanning a line break has a text
    # attribute with a space where TEXT has the break: compare likewise.
    if covered is not None and covered != text[start:end] and covered != _ATTR_WS.sub(" ", text[start:end]):
        problems.append(Problem(ERROR, file, "text attribute differs from the TEXT slice at its offsets", tag=tag_id, field="text"))
        return None
    return Annotation(start, end, el.tag.upper(), type_.upper(), covered, tag_id, el.get("comment") or "")


MAX_LISTED_PROBLEMS = 50  # per file and severity; the rest are counted in one line


def capped(problems: list[Problem]) -> list[Problem]:
    """At most ``MAX_LISTED_PROBLEMS`` problems of each severity and file,
    then one that counts the rest: a file of a million bad or overlapping
    lines gives a readable report, not a million lines."""
    counts: Counter = Counter((p.file, p.severity) for p in problems)
    if all(n <= MAX_LISTED_PROBLEMS for n in counts.values()):
        return problems
    out, listed = [], Counter()
    for p in problems:
        listed[p.file, p.severity] += 1
        if listed[p.file, p.severity] <= MAX_LISTED_PROBLEMS:
            out.append(p)
    for (file, severity), n in counts.items():
        if n > MAX_LISTED_PROBLEMS:
            out.append(Problem(severity, file, f"... and {n - MAX_LISTED_PROBLEMS} more {severity}(s) in this file, not listed"))
    return out


def overlap_problems(annotations: list[Annotation], file: str) -> list[Problem]:
    """One warning for each span that overlaps an earlier one (in offset order).

    Each span is compared with the earlier span reaching furthest right, not
    just its predecessor: in [0, 10), [2, 3), [5, 8) the third overlaps the first.
    """
    problems = []
    a: Annotation | None = None  # the earlier span reaching furthest right
    for b in sorted(annotations):
        if a is not None and a.overlaps(b):
            problems.append(Problem(
                WARNING, file, f"gold spans overlap ([{a.start}, {a.end}) and [{b.start}, {b.end}))",
                tag=f"{a.id}/{b.id}",
            ))
        if a is None or b.end > a.end:
            a = b
    return problems


def _attr(value: str) -> str:
    return (
        value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
        .replace('"', "&quot;").replace("\n", "&#10;").replace("\r", "&#13;").replace("\t", "&#9;")
    )


def _cdata(text: str) -> str:
    # "]]>" cannot appear inside CDATA and a bare CR would be normalised away
    # by every XML parser, so both are written outside CDATA sections.
    body = text.replace("]]>", "]]]]><![CDATA[>").replace("\r", "]]>&#13;<![CDATA[")
    return f"<![CDATA[{body}]]>"


def to_i2b2_xml(document: Document, root: str = "deIdi2b2") -> str:
    """The record as i2b2 XML text, in the layout the official scorer reads."""
    bad = _INVALID_XML_CHARS.search(document.text)
    if bad:
        raise ValueError(
            f"document {document.id!r}: character U+{ord(bad.group()):04X} at offset "
            f"{bad.start()} cannot be written in XML"
        )
    lines = ['<?xml version="1.0" encoding="UTF-8" ?>', f"<{root}>", f"<TEXT>{_cdata(document.text)}</TEXT>", "<TAGS>"]
    for i, ann in enumerate(document.annotations):
        covered = document.text[ann.start:ann.end]
        lines.append(
            f'<{ann.category} id="{_attr(ann.id or f"P{i}")}" start="{ann.start}" end="{ann.end}" '
            f'text="{_attr(covered)}" TYPE="{_attr(ann.type)}" comment="{_attr(ann.comment)}" />'
        )
    lines += ["</TAGS>", f"</{root}>", ""]
    return "\n".join(lines)


def write_i2b2_xml(document: Document, path: str | Path, root: str = "deIdi2b2") -> Path:
    """Write atomically (temp file + rename) with owner-only permissions."""
    return write_private(path, to_i2b2_xml(document, root))


# -- Reading for scoring: the official program's view of a file --------------
#
# Kept apart from read_i2b2_xml (the strict reader corpora are loaded with):
# the official i2b2 2014 / N-GRID 2016 program reads only these elements,
# spelled exactly so, keeps names and TYPE as written, and scores tags a
# training corpus must not contain (zero-length, past the end of TEXT, a
# `text` attribute that disagrees with TEXT, no TYPE). `evaluate` reads files
# this way and warns about each of those.

_PHI_ELEMENT_SET = frozenset(PHI_ELEMENTS)
_SHOWN_IDS = 5


@dataclass(frozen=True)
class ScoringRecord:
    """A record as the official scorer sees it: TEXT and the PHI tags in file
    order, as ``(start, end, element name, TYPE)`` with name and TYPE exactly
    as written. Its repr shows no text."""

    id: str
    text: str = field(repr=False)
    annotations: tuple = field(repr=False)
    source: str = ""


_PLAIN_ENCODINGS = {b"utf-8", b"utf8", b"us-ascii", b"ascii", b"iso-8859-1", b"latin-1", b"latin1"}


def _plainly_without_entities(raw: bytes) -> bool:
    """Whether the bytes visibly declare no entities: an ASCII-compatible
    encoding (so a DOCTYPE could not hide in UTF-16 or UTF-7) and no DOCTYPE."""
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")) or b"\x00" in raw[:4]:
        return False
    declared = _ENCODING_DECL.match(raw)
    if declared and declared.group(1).lower() not in _PLAIN_ENCODINGS:
        return False
    return b"<!DOCTYPE" not in raw and b"<!doctype" not in raw


def _parse_for_scoring(raw: bytes):
    """The XML tree, or a reason it cannot be read (no text from the file).

    A file that plainly has no DOCTYPE cannot declare entities, so the C
    parser is safe and fast there; anything else goes through defusedxml,
    which refuses entity declarations and external references."""
    try:
        if _plainly_without_entities(raw):
            import xml.etree.ElementTree as ET

            return ET.fromstring(raw), None
        try:
            return _parse(raw), None
        except _ExternalDTD:
            return None, "refused: the file names an external DTD (document type declaration)"
        except defusedxml.DefusedXmlException as exc:
            return None, f"refused: unsafe XML ({type(exc).__name__}: entity declarations or external references)"
    except ParseError as exc:
        line, col = getattr(exc, "position", (None, None))
        return None, f"malformed XML at line {line}, column {col}"
    except (LookupError, ValueError, UnicodeError):
        return None, "the XML declaration names an unknown or unusable encoding"


def _ids(ids: list[str]) -> str:
    return ", ".join(ids[:_SHOWN_IDS]) + (f" and {len(ids) - _SHOWN_IDS} more" if len(ids) > _SHOWN_IDS else "")


def read_scoring_xml(path: str | Path, doc_id: str | None = None) -> tuple[ScoringRecord | None, list[Problem]]:
    """Read one record the way the official scorer does (see above).

    Errors (the record cannot be scored): unreadable or malformed file, no
    TEXT, a tag whose start or end is missing, not an integer, negative, or
    reversed (the official program crashes or slices from the other end).
    Warnings, one per kind and file, naming tag ids: ignored elements,
    zero-length tags, tags past the end of TEXT, a `text` attribute that
    differs from TEXT, a missing TYPE (scored as TYPE "", as officially)."""
    path = Path(path)
    name = str(path)
    raw, problems = read_source(path)  # regular files only, UTF-8 names, never blocks
    if raw is None:
        return None, problems
    root, reason = _parse_for_scoring(raw)
    if root is None:
        return None, [Problem(ERROR, name, reason)]
    text_el, problem = _single(root, "TEXT", name)
    if problem is not None:
        return None, [problem]
    text = text_el.text or ""
    too_long = too_large(len(text), name, "TEXT")
    if too_long is not None:
        return None, [too_long]
    n = len(text)
    tags: list[tuple[int, int, str, str]] = []
    ignored: list[str] = []
    odd: dict[str, list[str]] = {"zero": [], "past": [], "text": [], "type": []}
    tags_el = root.find("TAGS")
    known = _PHI_ELEMENT_SET
    append = tags.append
    for i, el in enumerate(tags_el if tags_el is not None else ()):
        element = el.tag
        if element not in known:
            ignored.append(element)
            continue
        attrib = el.attrib
        try:
            start, end = int(attrib["start"]), int(attrib["end"])
        except KeyError as exc:
            problems.append(Problem(ERROR, name, "missing attribute", tag=shown_id(attrib.get("id"), f"#{i}"), field=exc.args[0]))
            continue
        except ValueError:
            problems.append(Problem(ERROR, name, "offset is not an integer", tag=shown_id(attrib.get("id"), f"#{i}"), field="start/end"))
            continue
        type_ = attrib.get("TYPE")
        covered = attrib.get("text")
        if 0 <= start < end <= n and type_ is not None and (covered is None or covered == text[start:end]):
            append((start, end, element, type_))  # the common case, checked at once
            continue
        tag_id = shown_id(attrib.get("id"), f"#{i}")
        if start < 0 or end < start:
            problems.append(Problem(ERROR, name, f"offsets [{start}, {end}) negative or reversed", tag=tag_id, field="start/end"))
            continue
        if type_ is None:
            odd["type"].append(tag_id)
            type_ = ""
        if end == start:
            odd["zero"].append(tag_id)
        if end > n:
            odd["past"].append(tag_id)
        if covered is not None and covered != text[start:end] and covered != _ATTR_WS.sub(" ", text[start:end]):
            odd["text"].append(tag_id)
        append((start, end, element, type_))
    if ignored:
        problems.append(Problem(WARNING, name, f"{_counted(ignored)} ignored: not a PHI element the official "
                                f"program reads ({', '.join(PHI_ELEMENTS)}, exact spelling)", field="TAGS"))
    what = {
        "zero": ("zero-length tag(s)", "start/end"),
        "past": (f"tag(s) ending past the end of TEXT ({n} characters)", "end"),
        "text": ("tag(s) whose text attribute differs from TEXT at their offsets (the attribute is ignored)", "text"),
        "type": ("tag(s) without TYPE (scored with TYPE \"\")", "TYPE"),
    }
    for kind, ids in odd.items():
        if ids:
            message, attr = what[kind]
            problems.append(Problem(WARNING, name, f"{len(ids)} {message}; scored as the official program does",
                                    tag=_ids(ids), field=attr))
    problems = capped(problems)
    if any(p.severity == ERROR for p in problems):
        return None, problems
    return ScoringRecord(doc_id or path.stem, text, tuple(tags), name), problems
