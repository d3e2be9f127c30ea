"""The release report: what a data steward needs to judge a release, and no
PHI (``OUT/release-report.json`` and ``.md``, rewritten by every
``deidentify`` run and every ``review apply``).

It holds the bundle's checksum, objective and operating point; the leak to
expect per category, from the bundle's out-of-fold predictions on its
training notes (``fit`` keeps per-document counts in the manifest) with 95%
document-bootstrap intervals; the review budget, the queue's items and what
the reviewer decided; the spans released per category; the notes done and
skipped; and the SHA-256 of every output file. Counts, labels and checksums
only: no note text, no document id and no file name (a note's file name may
be a record number), so the file lists are digests, sorted.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from ..corpus.document import I2B2_PARENT_OF
from ..files import file_sha256, read_json, write_private, write_private_json
from .review import REVIEW_DIR, ReviewError, queue_path, read_queue

RUN_RECORD = "run.json"  # a deidentify run's options (written by ``batch``)
REPORT_JSON = "release-report.json"
REPORT_MD = "release-report.md"
REPORT_VERSION = 1
OUTPUT_FOLDERS = ("text", "spans")


def bundle_summary(manifest: Mapping) -> dict:
    """The bundle's checksum and what its ensemble was chosen for."""
    sel = manifest.get("selection") if isinstance(manifest.get("selection"), dict) else {}
    return {"manifest_sha256": manifest.get("manifest_sha256"), "method": sel.get("method"),
            "objective": sel.get("objective", "f1" if sel else None), "operating_point": sel.get("operating_point"),
            "targets_reached": sel.get("targets_reached"), "members": sel.get("members_used")}


def expected_leak(manifest: Mapping, reps: int = 1000, seed: int = 0) -> dict:
    """Token and entity leak per category of the bundle's out-of-fold
    predictions, with 95% bootstrap intervals over its training documents;
    ``available: false`` and why when the bundle keeps no such counts (a
    bundle from elsewhere is checked: malformed counts are not used)."""
    record = manifest.get("oof_leaks")
    if record is None:
        return {"available": False, "why": "the bundle keeps no out-of-fold leak counts (fitted before they were "
                                           "recorded, or a single tagger)"}
    docs = record.get("documents") if isinstance(record, dict) else None
    if not _valid_counts(docs):
        return {"available": False, "why": "the bundle's out-of-fold leak counts are malformed (not used)"}
    from ..studies.leaks import bootstrap_documents

    table = bootstrap_documents([{k: {u: tuple(c) for u, c in units.items()} for k, units in d.items()} for d in docs],
                                reps, seed)
    return {"available": True, "documents": len(docs), "source": "the bundle's out-of-fold predictions on its "
            "training notes", "interval": f"95% bootstrap over documents, {reps} resamples",
            **{unit: {key: leak.to_dict() for key, leak in by_key.items()} for unit, by_key in table.items()}}


def _valid_counts(docs) -> bool:
    if not isinstance(docs, list) or len(docs) > 10_000_000:
        return False
    for d in docs:
        if not isinstance(d, dict):
            return False
        for key, units in d.items():
            if not (isinstance(key, str) and len(key) <= 100 and isinstance(units, dict)):
                return False
            for unit, pair in units.items():
                if unit not in ("token", "entity") or not (isinstance(pair, list) and len(pair) == 2):
                    return False
                n, k = pair
                if not all(isinstance(x, int) and not isinstance(x, bool) for x in pair) or not 0 <= k <= n:
                    return False
    return True


def _digests(folder: Path) -> list[str]:
    if not folder.is_dir():
        return []
    return sorted(file_sha256(p) for p in folder.iterdir() if p.is_file() and not p.name.startswith("."))


def output_manifest(out: Path) -> dict:
    """Per output folder, its file count and the SHA-256 of every file
    (sorted digests: a file's name is not in the report)."""
    return {sub: {"files": len(d := _digests(out / sub)), "sha256": d} for sub in OUTPUT_FOLDERS}


@dataclass(frozen=True)
class Counted:
    """Spans per category of the spans files (``fmt``: "xml" or "brat")
    named in ``files``, counted as :func:`span_counts` reads them."""

    fmt: str
    files: frozenset[str]
    counts: Mapping[str, int]


def span_counts(out: Path, counted: "Counted | None" = None) -> dict[str, int]:
    """Spans released per category, read from the outputs (``spans/``).
    ``counted``: the counts of the files a run has just written, as reading
    them gives them: those files are not read again."""
    from ..corpus.formats import read_i2b2_xml

    counts: dict[str, int] = {}
    folder = out / "spans"
    if not folder.is_dir():
        return counts
    xml = sorted(p for p in folder.glob("*.xml") if not p.name.startswith("."))
    skip: frozenset[str] = frozenset()
    if counted is not None and counted.fmt == ("xml" if xml else "brat"):
        counts.update(counted.counts)
        skip = counted.files
    if xml:
        for path in xml:
            if path.name in skip:
                continue
            doc, _ = read_i2b2_xml(path)
            for a in doc.annotations if doc is not None else ():
                counts[a.category] = counts.get(a.category, 0) + 1
    else:
        import re

        for path in sorted(folder.glob("*.ann")):
            if path.name in skip:
                continue
            for m in re.finditer(r"^T\d+\t(\S+) ", path.read_text(encoding="utf-8"), re.MULTILINE):
                cat = I2B2_PARENT_OF.get(m.group(1), m.group(1))
                counts[cat] = counts.get(cat, 0) + 1
    return dict(sorted(counts.items()))


def review_summary(out: Path) -> dict | None:
    """The review queue's budget and items, and what was decided (None: no queue)."""
    qpath = queue_path(out)
    if not qpath.exists():
        return None
    try:
        queue = read_queue(qpath)
    except ReviewError:
        return {"queue": "unreadable"}
    kinds: dict[str, int] = {}
    for item in queue.items:
        kinds[item.kind] = kinds.get(item.kind, 0) + 1
    summary = {"queue_sha256": file_sha256(qpath), "budget": queue.budget, "items": len(queue.items),
               "items_by_kind": dict(sorted(kinds.items())),
               "notes_with_items": len({i.doc for i in queue.items}), "decisions": None}
    applied = out / REVIEW_DIR / "applied.json"
    if applied.exists():
        state = read_json(applied, ReviewError, "apply record")
        result = state.get("result") if isinstance(state, dict) else None
        if isinstance(result, dict):
            summary["decisions"] = {k: result.get(k) for k in ("decisions_sha256", "decided", "undecided",
                                                               "notes_changed", "complete")}
    return summary


def release_report(out: str | Path, command: str, bundle: Mapping | None = None, run: Mapping | None = None,
                   counted: Counted | None = None) -> dict:
    """The report of ``out`` as it is now. ``bundle``: the bundle's manifest
    (deidentify); without it (review apply) the bundle's part of the
    previous report is kept. ``run``: counts of the command's own work
    (added to the previous report's: deidentify's notes stay after an apply).
    ``counted``: the spans of the files the command wrote (``span_counts``)."""
    out = Path(out)
    previous = {}
    if (out / REPORT_JSON).exists():
        old = read_json(out / REPORT_JSON, ReviewError, "release report")
        previous = old if isinstance(old, dict) else {}
    counts = previous.get("run") if isinstance(previous.get("run"), dict) else {}
    record = read_json(out / RUN_RECORD, ReviewError, "run record") if (out / RUN_RECORD).exists() else {}
    options = record.get("options", {}) if isinstance(record, dict) else {}
    return {
        "release_report": REPORT_VERSION, "command": command,
        "bundle": bundle_summary(bundle) if bundle is not None else previous.get("bundle", {}),
        "expected_leak": expected_leak(bundle) if bundle is not None else previous.get("expected_leak", {}),
        "mode": options.get("mode"), "span_formats": options.get("spans"),
        # sorted as the JSON is read back, so a resume writes the same report
        "run": dict(sorted({**counts, **dict(run or {})}.items())),
        "review": review_summary(out), "spans_released": span_counts(out, counted),
        "outputs": output_manifest(out),
    }


def run_counts(run, input_dir: str | Path) -> dict:
    """A deidentify run's counts for the report, the same for a run and its
    resume: notes in the input, the input folder's other files (skipped: not
    read as notes)."""
    notes = {".txt", ".xml", ".ann"}
    other = sum(1 for p in Path(input_dir).iterdir() if not (p.is_file() and p.suffix in notes))
    return {"notes": run.notes, "input_files_skipped": other}


def write_release_report(out: str | Path, command: str, bundle: Mapping | None = None,
                         run: Mapping | None = None, counted: Counted | None = None) -> tuple[Path, Path]:
    out = Path(out)
    report = release_report(out, command, bundle, run, counted)
    return (write_private_json(out / REPORT_JSON, report), write_private(out / REPORT_MD, render_markdown(report)))


def _pairs(mapping) -> str:
    return ", ".join(f"{k} {v}" for k, v in mapping.items()) if isinstance(mapping, dict) else str(mapping or "")


def render_markdown(report: Mapping) -> str:
    b = report.get("bundle") or {}
    lines = ["# Release report", "",
             f"Written by `{report['command']}`. Counts, labels and checksums only: no note text, no document id, "
             "no file name.", "", "## Bundle", "",
             f"- manifest SHA-256: `{b.get('manifest_sha256')}`",
             f"- method: {b.get('method') or 'a single tagger'}; objective: {b.get('objective')}; operating point: "
             f"{b.get('operating_point') if b.get('operating_point') else 'the method’s own rule'}",
             f"- targets reached out of fold: {b.get('targets_reached')}",
             f"- output mode: {report.get('mode')}; span formats: {report.get('span_formats')}", "",
             "## Expected leak (before review)", ""]
    leak = report.get("expected_leak") or {}
    if leak.get("available"):
        lines += [f"From {leak['source']} ({leak['documents']} documents; {leak['interval']}): the share of gold PHI "
                  "the ensemble left readable.", "",
                  "| category | PHI tokens | leaked | token leak (95% CI) | entities | leaked | entity leak (95% CI) |",
                  "|---|--:|--:|--:|--:|--:|--:|"]
        for key in leak.get("token", {}):
            t, e = leak["token"][key], leak.get("entity", {}).get(key)
            ent = (f"{e['tokens']} | {e['leaked']} | {100 * e['rate']:.2f}% ({100 * e['ci95'][0]:.2f}-"
                   f"{100 * e['ci95'][1]:.2f})") if e else " | | "
            lines.append(f"| {key} | {t['tokens']} | {t['leaked']} | {100 * t['rate']:.2f}% "
                         f"({100 * t['ci95'][0]:.2f}-{100 * t['ci95'][1]:.2f}) | {ent} |")
    else:
        lines.append(f"Not available: {leak.get('why', 'unknown')}.")
    lines += ["", "## Review", ""]
    review = report.get("review")
    if not review:
        lines.append("No review queue in this run.")
    elif review.get("queue") == "unreadable":
        lines.append("The review queue is unreadable.")
    else:
        lines += [f"- budget: {_pairs(review['budget']) or 'none recorded'}",
                  f"- queue `{review['queue_sha256']}`: {review['items']} item(s) in {review['notes_with_items']} "
                  f"note(s); by kind: {_pairs(review['items_by_kind']) or 'none'}"]
        d = review.get("decisions")
        if d:
            lines.append(f"- decisions `{d.get('decisions_sha256')}`: {_pairs(d.get('decided')) or 'none'}; undecided "
                         f"{d.get('undecided')}; notes changed {d.get('notes_changed')}"
                         + ("" if d.get("complete") else " (apply not finished: run it again)"))
        else:
            lines.append("- no decisions applied yet")
    run = report.get("run") or {}
    lines += ["", "## Notes and spans", "", "- " + "; ".join(f"{k.replace('_', ' ')}: {v}" for k, v in run.items()),
              "- spans released per category: " + (", ".join(f"{k} {v}" for k, v in report["spans_released"].items())
                                                   or "none"), "", "## Output files (SHA-256, sorted)", ""]
    for sub, entry in report["outputs"].items():
        lines.append(f"- `{sub}/`: {entry['files']} file(s)")
        lines += [f"  - `{h}`" for h in entry["sha256"]]
    return "\n".join(lines) + "\n"
