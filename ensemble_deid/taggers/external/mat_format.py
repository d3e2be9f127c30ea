"""Documents of MITRE's MAT / MIST toolkits: MAT JSON and inline XML.

MAT JSON (the ``mat-json`` reader/writer; versions 1 and 2)::

    {"signal": "<the text>", "metadata": {...}, "version": 2,
     "asets": [{"type": "NAME", "hasID": false, "hasSpan": true,
                "attrs": [{"name": ...}, ...],
                "annots": [[START, END, <id if hasID>, <attribute values>...], ...]},
               ...]}

Version 1 has ``"attrs": [<name>*]`` and every annotation spanned. Offsets
are character offsets into the signal (end exclusive). Spanless annotation
sets are skipped; structural sets (``lex``, ``zone``, ``SEGMENT``) are left to
the category map's ``ignore`` list.

Inline XML (the ``xml-inline`` writer): the signal with each annotation as an
element around its text, ``<NAME>John Smith</NAME>``; an optional XML
declaration, comments and CDATA are understood, entities are decoded, and the
element nesting must balance. A wrapper element (e.g. ``<doc>``) is fine when
the category map ignores it; blanks between an XML declaration and the first
element, and after a wrapper element, are not part of the signal.
"""
from __future__ import annotations

import bisect
import json
import re
from dataclasses import dataclass

from .base import ExternalOutputError


@dataclass(frozen=True)
class MatSpan:
    start: int
    end: int
    label: str


def parse_mat_json(data: str | bytes, source: str) -> tuple[str, list[MatSpan]]:
    """The signal and every spanned annotation of a MAT JSON document."""
    try:
        doc = json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        where = f" at line {exc.lineno}, column {exc.colno}" if isinstance(exc, json.JSONDecodeError) else ""
        raise ExternalOutputError(f"{source}: not valid JSON{where}") from None
    if not isinstance(doc, dict):
        raise ExternalOutputError(f"{source}: a MAT JSON document is an object with 'signal' and 'asets'")
    signal = doc.get("signal")
    if not isinstance(signal, str):
        raise ExternalOutputError(f"{source}: missing or non-string 'signal'")
    version = doc.get("version", 1)
    if version not in (1, 2):
        raise ExternalOutputError(f"{source}: unsupported MAT JSON version {version!r} (1 and 2 are read)")
    asets = doc.get("asets", [])
    if not isinstance(asets, list):
        raise ExternalOutputError(f"{source}: 'asets' must be a list")
    spans: list[MatSpan] = []
    for i, aset in enumerate(asets):
        if not isinstance(aset, dict) or not isinstance(aset.get("type"), str):
            raise ExternalOutputError(f"{source}: annotation set #{i} has no string 'type'")
        label = aset["type"]
        has_span = aset.get("hasSpan", True) if version == 2 else True
        if not isinstance(has_span, bool):
            raise ExternalOutputError(f"{source}: annotation set {label!r}: 'hasSpan' must be true or false")
        annots = aset.get("annots", [])
        if not isinstance(annots, list):
            raise ExternalOutputError(f"{source}: annotation set {label!r}: 'annots' must be a list")
        if not has_span:
            continue
        for j, annot in enumerate(annots):
            if (
                not isinstance(annot, list) or len(annot) < 2
                or not all(isinstance(x, int) and not isinstance(x, bool) for x in annot[:2])
            ):
                raise ExternalOutputError(
                    f"{source}: annotation set {label!r}, annotation #{j}: expected [START, END, ...] with integer offsets"
                )
            start, end = annot[0], annot[1]
            if not (0 <= start <= end <= len(signal)):
                raise ExternalOutputError(
                    f"{source}: annotation set {label!r}, annotation #{j}: span [{start}, {end}) lies off the "
                    f"signal ({len(signal)} characters)"
                )
            spans.append(MatSpan(start, end, label))
    return signal, spans


_MARKUP = re.compile(
    r"<!--.*?-->|<!\[CDATA\[(?P<cdata>.*?)\]\]>|<\?.*?\?>|<!DOCTYPE[^>]*>"
    r"|<(?P<close>/)?(?P<name>[A-Za-z_][\w.\-:]*)(?P<attrs>(?:\s+[^\s=/>]+\s*=\s*(?:\"[^\"]*\"|'[^']*'))*)\s*(?P<empty>/)?>",
    re.DOTALL,
)
_ENTITY = re.compile(r"&(#\d+|#x[0-9A-Fa-f]+|[A-Za-z]+);")
_BARE_AMP = re.compile(r"&(?!(?:#\d+|#x[0-9A-Fa-f]+|[A-Za-z]+);)")
_XML_ENTITIES = {"lt": "<", "gt": ">", "amp": "&", "quot": '"', "apos": "'"}


def _unescape(text: str, source: str, line: int) -> str:
    def repl(m):
        ent = m.group(1)
        if ent.startswith("#x"):
            return chr(int(ent[2:], 16))
        if ent.startswith("#"):
            return chr(int(ent[1:]))
        if ent in _XML_ENTITIES:
            return _XML_ENTITIES[ent]
        raise ExternalOutputError(f"{source}: line {line}: unknown entity &{ent};")

    if _BARE_AMP.search(text):
        raise ExternalOutputError(f"{source}: line {line}: bare '&' (write &amp;)")
    return _ENTITY.sub(repl, text)


def parse_inline_xml(text: str, source: str) -> tuple[str, list[MatSpan]]:
    """The signal and the spans of an inline-XML document."""
    signal: list[str] = []
    length = 0
    stack: list[tuple[str, int, int]] = []  # (name, start offset, line)
    spans: list[MatSpan] = []
    pos = 0

    def line_of(offset: int) -> int:
        return text.count("\n", 0, offset) + 1

    def add_text(chunk: str, at: int) -> None:
        nonlocal length
        if "<" in chunk:
            raise ExternalOutputError(f"{source}: line {line_of(at + chunk.index('<'))}: malformed markup (a '<' that opens no element)")
        piece = _unescape(chunk, source, line_of(at))
        signal.append(piece)
        length += len(piece)

    declared = False  # after an XML declaration, blanks before the first element are prolog
    started = False
    closed_wrapper = False  # the last end tag closed an element spanning everything so far
    for m in _MARKUP.finditer(text):
        chunk = text[pos:m.start()]
        if not (declared and not started and not chunk.strip()):
            add_text(chunk, pos)
        pos = m.end()
        token = m.group(0)
        if token.startswith("<?xml"):
            declared = True
            continue
        if m.group("cdata") is not None:
            signal.append(m.group("cdata"))
            length += len(m.group("cdata"))
            continue
        if token.startswith("<!--") or token.startswith("<?") or token.startswith("<!DOCTYPE"):
            continue
        name = m.group("name")
        if m.group("close"):
            if m.group("attrs") or m.group("empty"):
                raise ExternalOutputError(f"{source}: line {line_of(m.start())}: malformed end tag </{name}>")
            if not stack:
                raise ExternalOutputError(f"{source}: line {line_of(m.start())}: end tag </{name}> with no open element")
            open_name, start, open_line = stack.pop()
            if open_name != name:
                raise ExternalOutputError(
                    f"{source}: line {line_of(m.start())}: end tag </{name}> does not match <{open_name}> opened at line {open_line}"
                )
            spans.append(MatSpan(start, length, name))
            closed_wrapper = not stack and start == 0
        elif m.group("empty"):
            continue  # a zero-length element marks no text
        else:
            started = True
            closed_wrapper = False
            stack.append((name, length, line_of(m.start())))
    tail = text[pos:]
    if not (closed_wrapper and not tail.strip()):  # blanks after a wrapper element are epilog
        add_text(tail, pos)
    if stack:
        name, _, line = stack[-1]
        raise ExternalOutputError(f"{source}: line {line}: element <{name}> is never closed")
    spans.sort(key=lambda s: (s.start, -s.end))
    return "".join(signal), spans


def read_mat_file(path, fmt: str = "auto") -> tuple[str, list[MatSpan]]:
    """Read ``.json`` (MAT JSON) or ``.xml`` (inline XML); ``fmt`` forces one."""
    from pathlib import Path

    from ...files import read_utf8

    path = Path(path)
    text = read_utf8(path, ExternalOutputError, bom=True)
    if fmt == "auto":
        fmt = "json" if path.suffix.lower() == ".json" or text.lstrip().startswith("{") else "xml-inline"
    if fmt == "json":
        return parse_mat_json(text, str(path))
    if fmt == "xml-inline":
        return parse_inline_xml(text, str(path))
    raise ExternalOutputError(f"unknown MAT format {fmt!r}; expected json, xml-inline or auto")


# --- text rewritten by MIST's "clean" step ----------------------------------------------

_REWRITABLE_RE = re.compile(r"[^\x00-\x0c\x0e-\x7f]+")  # runs of carriage returns and non-ASCII characters
MAX_REPLACEMENT = 8  # characters one rewritten character may become ("--" for a dash, "EUR"...)


class CleanedTextMap:
    """Offsets of a signal that MIST's ``clean`` step rewrote, mapped back to
    the original text. That step may only touch carriage returns and non-ASCII
    characters, so the original is read as runs it must leave as they are and
    runs of such characters, each of which the signal may replace by a short
    string (empty included: CRLF becomes LF). A span edge inside a replacement
    widens to the whole original run."""

    def __init__(self, segments: list[tuple[int, int, int, int, bool]]):
        self.segments = segments  # (signal start, signal end, original start, original end, kept), in order
        self._ends = [s[1] for s in segments]

    @classmethod
    def align(cls, original: str, signal: str) -> "CleanedTextMap":
        """The map; :class:`NotCleanedText` (with the furthest original offset
        that could be explained) when the signal is not the original with only
        those characters rewritten. A depth-first search over where each kept
        run starts in the signal (usually one choice), remembering dead ends."""
        runs = list(_REWRITABLE_RE.finditer(original))
        kept_at = [0] + [m.end() for m in runs]  # original start of each kept run (one more than runs)
        kept = [original[a:(runs[r].start() if r < len(runs) else len(original))] for r, a in enumerate(kept_at)]
        furthest = [0]

        def choices(r: int, j: int) -> list:
            """Where kept run r + 1 may start in the signal if kept run r starts at j ([None]: all placed)."""
            if not signal.startswith(kept[r], j):
                furthest[0] = max(furthest[0], kept_at[r] + _common_prefix(kept[r], signal[j:]))
                return []
            j += len(kept[r])
            if r == len(runs):
                return [None] if j == len(signal) else []
            follow = kept[r + 1]
            limit = min(MAX_REPLACEMENT * len(runs[r].group()), len(signal) - j)
            found = [j + k for k in range(limit + 1) if signal.startswith(follow, j + k)]
            if not found:
                best = max(_common_prefix(follow, signal[j + k:]) for k in range(limit + 1))
                furthest[0] = max(furthest[0], runs[r].end() + best)
            return found

        path, stack, dead = [0], [iter(choices(0, 0))], set()
        while stack:
            nxt = next(stack[-1], -1)
            if nxt == -1:
                dead.add((len(stack) - 1, path.pop()))
                stack.pop()
            elif nxt is None:
                break
            elif (len(stack), nxt) not in dead:
                path.append(nxt)
                stack.append(iter(choices(len(stack), nxt)))
        if not stack:
            raise NotCleanedText(furthest[0])
        segments = []
        for r, j in enumerate(path):
            segments.append((j, j + len(kept[r]), kept_at[r], kept_at[r] + len(kept[r]), True))
            if r < len(runs):
                segments.append((j + len(kept[r]), path[r + 1], runs[r].start(), runs[r].end(), False))
        return cls(segments)

    def start(self, offset: int) -> int:
        """The original offset of a span start (the segment holding ``offset``)."""
        idx = bisect.bisect_right(self._ends, offset)
        if idx == len(self.segments):
            return self.segments[-1][3]
        s0, _, o0, _, kept = self.segments[idx]
        return o0 + (offset - s0) if kept else o0

    def end(self, offset: int) -> int:
        """The original offset of a span end (the segment ending at or after ``offset``)."""
        if offset <= 0:
            return 0
        s0, _, o0, o1, kept = self.segments[bisect.bisect_left(self._ends, offset)]
        return o0 + (offset - s0) if kept else o1


class NotCleanedText(ValueError):
    def __init__(self, offset: int):
        super().__init__(f"differs at offset {offset} beyond carriage returns and non-ASCII characters")
        self.offset = offset


def _common_prefix(a: str, b: str) -> int:
    return next((n for n, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
