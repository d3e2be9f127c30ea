"""Apply a reviewer's decisions to a run's outputs (``review apply``).

The outputs are rewritten as the run wrote them (``run.json``: mode, span
formats, patient grouping, surrogate seed, date order and locale), for the
notes with decisions only. Each note's final spans are a function of its
spans before any review and of the decisions, taken in queue order:

- ``accept``: the item's extent is PHI of its label (spans it overlaps are
  merged with it into one span of that label);
- ``reject``: an item masked now (``current: phi``) is unmasked (spans are
  cut back to outside its extent); an item readable now stays readable;
- ``edit``: as ``reject``, then the edited extent is PHI of the edited label.

The spans before review are kept in ``review/applied.json`` (offsets and
labels, no text) before the first output is rewritten, so applying twice
is applying once, an interrupted apply is finished by running it again, and
a later decisions file replaces an earlier one (notes it no longer decides
go back to the run's spans). One apply or deidentify run at a time holds
the folder's lock.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from ..corpus.document import Annotation, Document, split_label
from ..corpus.formats import group_ids, read_i2b2_xml
from ..errors import CorpusError, printable
from ..files import file_sha256, read_json, write_private_json
from .batch import RUN_RECORD, SPAN_FORMATS, FolderDeidentifier, _locked, _read_ann, _remove_leftovers, seed_matches, \
    read_note, scan_notes
from .names import SCHEMES, output_names
from .redact import MODES
from .review import REVIEW_DIR, Decision, Queue, ReviewError, ReviewItem, queue_path, read_decisions, read_queue

APPLIED = "applied.json"


# -- the run's options -----------------------------------------------------------

def run_record(out: str | Path) -> dict:
    """``out``'s run record (``run.json``), checked to be one."""
    path = Path(out) / RUN_RECORD
    if not path.exists():
        raise ReviewError(f"{printable(path)}: missing (not the output folder of a deidentify run)")
    record = read_json(path, ReviewError, "run record")
    if not isinstance(record, dict) or record.get("version") != 1 or not isinstance(record.get("options"), dict):
        raise ReviewError(f"{printable(path)}: not a run record of this version")
    return record


def release_writer(out: str | Path, seed: int | None = None) -> FolderDeidentifier:
    """A writer of ``out``'s outputs with the options its run recorded
    (``seed``: the run's --seed, needed in surrogate mode when the run was
    given one; a drawn seed is in the record)."""
    path = Path(out) / RUN_RECORD
    record = run_record(out)
    opts = record["options"]
    mode, spans, pattern = opts.get("mode"), opts.get("spans"), opts.get("group_pattern")
    if mode not in MODES or not isinstance(mode, str):
        raise ReviewError(f"{printable(path)}: field 'mode': expected one of {', '.join(MODES)}")
    if not (isinstance(spans, list) and all(isinstance(s, str) and s in SPAN_FORMATS for s in spans)):
        raise ReviewError(f"{printable(path)}: field 'spans': expected a list of {', '.join(SPAN_FORMATS)}")
    if pattern is not None and not isinstance(pattern, str):
        raise ReviewError(f"{printable(path)}: field 'group_pattern': expected a string or null")
    surrogates = None
    if mode == "surrogate":
        from .surrogate import Surrogator

        drawn = record.get("drawn_seed")
        if seed is None and _is_int(drawn) and seed_matches(opts.get("seed"), drawn):
            seed = drawn
        if seed is None:
            raise ReviewError(f"{printable(path)}: the run was given --seed: pass the same one (--seed)")
        if not seed_matches(opts.get("seed"), seed):
            raise ReviewError(f"{printable(path)}: field 'seed': the run used another seed; pass the run's --seed")
        surrogates = Surrogator(seed=seed, date_order=opts.get("date_order", "mdy"), locale=opts.get("locale", "en_US"))
    rename = opts.get("rename")
    if rename is not None and rename not in SCHEMES:
        raise ReviewError(f"{printable(path)}: field 'rename': expected one of {', '.join(SCHEMES)} or null")
    # the marked copy (--mark-surrogates) is kept up to date where the run wrote one
    mark = mode == "surrogate" and (Path(out) / "marked").is_dir()
    return FolderDeidentifier(None, mode, spans, surrogates, pattern, mark=mark, rename=rename)



def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


# -- inputs -------------------------------------------------------------------------

def run_queue(out: Path) -> tuple[Path, Queue]:
    """The run's queue file and its items (offsets not yet checked against
    the notes), refused when made with another bundle than the run's."""
    qpath = queue_path(out)
    if not qpath.exists():
        raise ReviewError(f"{printable(qpath)}: missing (the run wrote no review queue)")
    queue = read_queue(qpath)
    model = run_record(out)["options"].get("model")
    if queue.bundle is not None and model is not None and queue.bundle != model:
        raise ReviewError(f"{printable(qpath)}: field 'bundle': made with another bundle than the run's "
                          f"({printable(out / RUN_RECORD)})")
    return qpath, queue


def queue_notes(notes_dir: str | Path, queue: Queue, group_pattern: str | None = None) -> dict[str, Document]:
    """The input notes the queue's items are in (doc id -> document with its
    patient group), read and checked; a note missing from the folder is an
    error naming the first item in it (not the note)."""
    wanted = {}
    for item in queue.items:
        wanted.setdefault(item.doc, item.item)
    found = {n.doc_id: n for n in scan_notes(notes_dir) if n.doc_id in wanted}
    missing = [item for doc, item in wanted.items() if doc not in found]
    if missing:
        raise ReviewError(f"{printable(notes_dir)}: holds no note for item {missing[0]} of the review queue "
                          f"({len(missing)} note(s) missing): give the run's notes folder")
    groups = group_ids(sorted(found), group_pattern)
    docs = {}
    for doc_id, note in sorted(found.items()):
        doc, problems = read_note(note)
        if doc is None:
            raise CorpusError([p for p in problems] or f"{printable(note.path)}: cannot be read")
        doc.metadata["group"] = groups[doc_id]
        docs[doc_id] = doc
    return docs


def current_spans(out: Path, writer: FolderDeidentifier, doc: Document, labels: Sequence[str] = (),
                  name: str | None = None) -> list[Annotation]:
    """The spans the run wrote for ``doc`` (its XML, else its BRAT file),
    refused when the note's text is not the one the run read."""
    paths = writer.outputs(out, name or doc.id)  # name: the note's output name (neutral under --rename)
    if "xml" in paths and paths["xml"].exists():
        pred, problems = read_i2b2_xml(paths["xml"], doc_id=doc.id)
        if pred is not None and pred.text != doc.text:
            raise ReviewError(f"{printable(paths['xml'])}: the note's text differs from the one the run read "
                              "(give the run's notes folder)")
    elif "brat" in paths and paths["brat"].exists():
        pred, problems = _read_ann(doc, paths["brat"], labels)
    else:
        raise ReviewError(f"{printable(paths['text'])}: the run has not written this note's outputs yet "
                          "(finish the deidentify run first)")
    if pred is None:
        raise CorpusError([p for p in problems] or f"{printable(out)}: cannot read a note's spans")
    if any(a.end > len(doc.text) for a in pred.annotations):
        raise ReviewError(f"{printable(out)}: a note's spans lie beyond its text (give the run's notes folder)")
    return sorted(pred.annotations, key=lambda a: (a.start, a.end))


# -- the decided spans -------------------------------------------------------------

def _annotation(start: int, end: int, label: str) -> Annotation:
    category, type_ = split_label(label)
    return Annotation(start, end, category, type_)


def mark(spans: Sequence[Annotation], start: int, end: int, label: str) -> list[Annotation]:
    """``[start, end)`` is PHI of ``label``: spans overlapping it merge into it."""
    over = [a for a in spans if a.start < end and start < a.end]
    rest = [a for a in spans if not (a.start < end and start < a.end)]
    merged = _annotation(min([start] + [a.start for a in over]), max([end] + [a.end for a in over]), label)
    return sorted(rest + [merged], key=lambda a: (a.start, a.end))


def unmark(spans: Sequence[Annotation], start: int, end: int, text: str) -> list[Annotation]:
    """``[start, end)`` is not PHI: spans are cut back to outside it (white
    space at the cut dropped; nothing left, no span)."""
    out = []
    for a in spans:
        if a.end <= start or a.start >= end:
            out.append(a)
            continue
        for lo, hi in ((a.start, min(a.end, start)), (max(a.start, end), a.end)):
            while lo < hi and text[lo].isspace():
                lo += 1
            while hi > lo and text[hi - 1].isspace():
                hi -= 1
            if lo < hi:
                out.append(Annotation(lo, hi, a.category, a.type))
    return sorted(out, key=lambda a: (a.start, a.end))


def decided_spans(base: Sequence[Annotation], decided: Sequence[tuple[ReviewItem, Decision]],
                  text: str) -> list[Annotation]:
    """A note's final spans: ``base`` (the run's) with the decisions on its
    items applied in queue order."""
    spans = sorted(base, key=lambda a: (a.start, a.end))
    for item, decision in decided:
        if decision.action in ("reject", "edit") and item.current == "phi":
            spans = unmark(spans, item.start, item.end, text)
        if decision.action in ("accept", "edit"):
            spans = mark(spans, decision.start, decision.end, decision.label)
    return spans


# -- the apply -------------------------------------------------------------------------

@dataclass
class Applied:
    """What an apply did (counts only)."""

    decided: dict[str, int] = field(default_factory=dict)  # action -> items
    undecided: int = 0
    notes_rewritten: int = 0
    notes_changed: int = 0  # notes whose final spans differ from the run's
    queue_sha256: str = ""
    decisions_sha256: str = ""


def _span_rows(spans: Sequence[Annotation]) -> list[list]:
    return [[a.start, a.end, a.category, a.type] for a in spans]


def _read_state(path: Path, queue_sha: str) -> dict:
    if not path.exists():
        return {"version": 1, "queue": queue_sha, "base": {}, "changed": []}
    state = read_json(path, ReviewError, "apply record")
    ok = (isinstance(state, dict) and state.get("version") == 1 and isinstance(state.get("base"), dict)
          and isinstance(state.get("changed"), list) and all(isinstance(d, str) for d in state["changed"])
          and all(isinstance(d, str) and isinstance(rows, list) and all(
              isinstance(r, list) and len(r) == 4 and _is_int(r[0]) and _is_int(r[1]) and 0 <= r[0] < r[1]
              and isinstance(r[2], str) and isinstance(r[3], str) for r in rows) for d, rows in state["base"].items()))
    if not ok:
        raise ReviewError(f"{printable(path)}: not an apply record of this version (remove the output folder's "
                          "review results and run deidentify again)")
    if state.get("queue") != queue_sha:
        raise ReviewError(f"{printable(path)}: decisions on another review queue were applied to this folder; "
                          "apply to a new deidentify run")
    return state


def apply_decisions(out: str | Path, notes_dir: str | Path, decisions_path: str | Path,
                    seed: int | None = None) -> Applied:
    """Apply the decisions file to ``out`` (see the module docstring).
    Everything is read and checked before any output is rewritten."""
    out = Path(out)
    writer = release_writer(out, seed)
    with _locked(out):
        _remove_leftovers(out, None)
        qpath, queue = run_queue(out)
        queue_sha = file_sha256(qpath)
        docs = queue_notes(notes_dir, queue, writer.group_pattern)
        texts = {d: doc.text for d, doc in docs.items()}
        queue = read_queue(qpath, texts)
        decisions = read_decisions(decisions_path, queue, queue_sha, texts)
        state_path = out / REVIEW_DIR / APPLIED
        state = _read_state(state_path, queue_sha)
        by_doc: dict[str, list[tuple[ReviewItem, Decision]]] = {}
        for item in queue.items:
            if item.item in decisions:
                by_doc.setdefault(item.doc, []).append((item, decisions[item.item]))
        labels = sorted({i.label for i in queue.items} | set(queue.header.get("labels", [])))
        names = output_names(out)
        for doc_id in sorted(set(by_doc) - set(state["base"])):  # the run's spans, kept before any rewrite
            if doc_id not in docs:
                continue
            state["base"][doc_id] = _span_rows(current_spans(out, writer, docs[doc_id], labels,
                                                             names.get(doc_id)))
        affected = sorted(set(by_doc) | set(state["changed"]))
        unknown = [d for d in affected if d not in docs or d not in state["base"]]
        if unknown:
            raise ReviewError(f"{printable(state_path)}: records notes that are not in the review queue")
        done = Applied(queue_sha256=queue_sha, decisions_sha256=file_sha256(decisions_path),
                       undecided=len(queue.items) - len(decisions))
        for d in decisions.values():
            done.decided[d.action] = done.decided.get(d.action, 0) + 1
        state.update(changed=affected, result=_result(done, False))
        write_private_json(state_path, state, fsync=True)
        for doc_id in affected:
            doc = docs[doc_id]
            base = [Annotation(s, e, c, t) for s, e, c, t in state["base"][doc_id]]
            final = decided_spans(base, by_doc.get(doc_id, []), doc.text)
            writer._write(out, names.get(doc_id, doc_id), doc, final)
            done.notes_rewritten += 1
            done.notes_changed += final != sorted(base, key=lambda a: (a.start, a.end))
        state.update(changed=sorted(by_doc), result=_result(done, True))
        write_private_json(state_path, state, fsync=True)
    return done


def _result(done: Applied, complete: bool) -> dict:
    """What the release report says of an apply (counts and checksums)."""
    return {"decisions_sha256": done.decisions_sha256, "decided": dict(sorted(done.decided.items())),
            "undecided": done.undecided, "notes_changed": done.notes_changed if complete else None,
            "complete": complete}



def write_page_for_run(out: str | Path, notes_dir: str | Path, seed: int | None = None,
                       writer: FolderDeidentifier | None = None) -> Path:
    """(Re)write ``OUT/review/review.html`` for the run's queue: each item's
    note window beside the output as released now (``writer``: the run's own,
    when the caller has it; else one from ``run.json`` and ``seed``)."""
    from .redact import pieces
    from .review_page import write_review_page

    out = Path(out)
    writer = writer or release_writer(out, seed)
    qpath, queue = run_queue(out)
    docs = queue_notes(notes_dir, queue, writer.group_pattern)
    queue = read_queue(qpath, {d: doc.text for d, doc in docs.items()})
    labels = sorted({i.label for i in queue.items} | set(queue.header.get("labels", [])))
    names = output_names(out)
    current = {d: current_spans(out, writer, doc, labels, names.get(d)) for d, doc in docs.items()}
    out_pieces = {d: pieces(doc, current[d], writer.mode, writer.surrogates) for d, doc in docs.items()}
    return write_review_page(out, queue, docs, current, out_pieces)
