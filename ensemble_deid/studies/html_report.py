"""An error-analysis page: one self-contained static HTML file (inline CSS and
JavaScript, nothing fetched) showing members, ensembles and gold on one split.

Every figure comes from the toolkit's own scoring: strict micro and
per-category scores and leak rates from ``evaluation.evaluate`` (what the
``evaluate`` and ``compare`` commands print), entity and token leaks with
95% document-bootstrap intervals and the members' union as the ceiling from
``studies.leaks``, error kinds and the category
confusion matrix from ``evaluation.overlap``, member agreement and marginal
contributions from ``ensemble.diagnostics``.

Note text is in the page only when asked for (``include_text``); the page then
carries a banner saying so. Without it, the per-document views show offsets,
labels and counts, never text. Everything written into the page is escaped:
HTML fragments with ``html.escape``, the data as JSON whose ``<``, ``>`` and
``&`` are \\u-escaped (a note containing ``</script>`` stays data), and the
script puts text into the page with ``textContent`` only.

More sections (e.g. precision-recall plots) plug in as ``Section`` objects:
``build_page(..., extra_sections=[Section("pr", "Precision-recall", fragment)])``.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from html import escape
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from ..corpus.document import PARENT_CATEGORIES, Annotation, Document
from ..ensemble.diagnostics import MemberDiagnostics
from ..evaluation import EvaluationReport, evaluate
from ..evaluation.overlap import KINDS, Confusion, DocumentOverlap, confusion, document_overlap, nonspace_mask
from ..files import private_dir, write_private


@dataclass(frozen=True)
class Section:
    """One part of the page. ``html`` is a trusted fragment: whoever builds it
    escapes what it inserts (``html.escape``)."""

    id: str
    title: str
    html: str


@dataclass
class ReportData:
    """What the page shows. ``systems``: name -> document id -> spans, in lane
    order; ``ensembles``: which of them are ensembles; ``focus``: the system
    the documents are ranked by (default: the best ensemble by strict F1, or
    the best system when there is none); ``shown_names``: a system's name as
    the page shows it, where it says more than the name (an ensemble's
    objective: two runs of one method differ by it)."""

    title: str
    documents: Sequence[Document]
    systems: Mapping[str, Mapping[str, Sequence[Annotation]]]
    ensembles: frozenset[str] = frozenset()
    diagnostics: MemberDiagnostics | None = None
    focus: str | None = None
    shown_names: Mapping[str, str] = field(default_factory=dict)
    reports: dict[str, EvaluationReport] = field(default_factory=dict, init=False)
    overlaps: dict[str, dict[str, DocumentOverlap]] = field(default_factory=dict, init=False)
    confusions: dict[str, Confusion] = field(default_factory=dict, init=False)
    labels: list[str] = field(default_factory=list, init=False)
    leaks: dict[str, dict] = field(default_factory=dict, init=False)  # system -> studies.leaks.leak_table
    ceiling: dict | None = field(default=None, init=False)  # leak_table of the members' union

    def __post_init__(self):
        if not self.systems:
            raise ValueError("a report needs at least one system")
        unknown = set(self.ensembles) - set(self.systems)
        if unknown:
            raise ValueError(f"ensembles {sorted(unknown)} are not among the systems")
        if self.focus is not None and self.focus not in self.systems:
            raise ValueError(f"focus {self.focus!r} is not among the systems {list(self.systems)}")
        docs = list(self.documents)
        for name, spans in self.systems.items():  # the scorer would skip them; a report must not
            missing = [d.id for d in docs if d.id not in spans]
            if missing:
                raise ValueError(f"system {name!r} has no predictions for {len(missing)} document(s), e.g. {missing[0]!r}")
        self.labels = _ordered_labels(docs, self.systems)
        nonspace = {d.id: nonspace_mask(d.text) for d in docs}
        for name, spans in self.systems.items():
            self.reports[name] = evaluate(docs, spans, criteria="strict", leak_documents=True)
            self.overlaps[name] = {d.id: document_overlap(d.annotations, spans[d.id], nonspace[d.id]) for d in docs}
            self.confusions[name] = confusion(docs, spans, self.overlaps[name], self.labels)
        from .leaks import bootstrap_leaks, leak_table, union_spans

        self.leaks = {name: bootstrap_leaks(self.reports[name].leak) for name in self.systems}
        members = {n: s for n, s in self.systems.items() if n not in self.ensembles}
        if len(members) > 1:
            self.ceiling = leak_table(docs, union_spans(docs, members))
        if self.focus is None:
            pool = [n for n in self.systems if n in self.ensembles] or list(self.systems)
            self.focus = max(pool, key=lambda n: self.reports[n]["strict"].micro.f1)


def cached_report(workspace, corpus_name: str, members: str, ensembles: str = "", *, split: str = "test",
                  rank_by: str | None = None, folds: int = 10, seed: int = 0) -> ReportData:
    """The ``report`` step: the ReportData of ``members`` (tagger specs, comma
    separated) and ``ensembles`` (``voting`` or ``ensemble.voting[:hash=P]``)
    on a split of a registered corpus, read from the cache. Nothing is
    computed: every option is checked first, then a missing or corrupt cache
    part is an error naming the command that makes it."""
    from ..ensemble.caching import ENSEMBLE_PREFIX, is_ensemble_spec, load_ensemble_member
    from ..ensemble.diagnostics import member_diagnostics
    from ..errors import EnsembleDeidError, ParameterError
    from ..experiment.cache import PredictionCache
    from ..experiment.cv import CrossValidation, parse_tagger_specs
    from .summary import prediction_spans

    if split not in ("test", "train"):
        raise ParameterError(f"split {split!r}: choose test or train", "--split")
    specs = known_specs(members, "--members")  # the full check (parse_tagger_specs) loads the taggers' libraries
    if len(specs) < 2:
        raise ParameterError("name at least two members", "--members")
    ensemble_names = [e.strip() if is_ensemble_spec(e) else ENSEMBLE_PREFIX + e.strip()
                      for e in ensembles.split(",") if e.strip()]
    labels = [s.label for s in specs] + ensemble_names
    if len(set(labels)) != len(labels):
        raise ParameterError("a system is named twice", "--ensembles")
    if rank_by is not None and rank_by not in labels:
        raise ParameterError(f"{rank_by!r} is not one of the systems {labels}", "--rank-by")
    corpus = workspace.load(corpus_name)
    engine = CrossValidation(corpus.train, {"test": corpus.test}, PredictionCache(workspace.cache_dir), k=folds, seed=seed)
    # Every ensemble is looked up before the members are read (tens of seconds on
    # MEDDOCAN), and all that are missing are named at once (issue 53 item 6).
    member_labels = [s.label for s in specs]
    check_ensembles(engine, ensemble_names, member_labels, split == "train", corpus_name, members, folds, seed)
    specs = parse_tagger_specs(members, "--members")
    pending = engine.pending(specs)
    if pending:
        raise EnsembleDeidError(
            f"{len(pending)} cached part(s) of the members missing or corrupt (e.g. {pending[0].part}); run "
            f"'ensemble-deid cv --corpus {corpus_name} --taggers {members}' (--folds {folds} --seed {seed}) first")
    runs = engine.collect(specs)
    documents = corpus.splits[split]
    oof = {label: run.oof for label, run in runs.items()}
    scored = dict(oof) if split == "train" else {label: run.targets["test"] for label, run in runs.items()}
    shown = {}
    for name in ensemble_names:
        member = load_ensemble_member(engine, name, oof=split == "train", members=member_labels)
        scored[name] = member.oof if split == "train" else member.test
        objective = next((r["selection"].get("objective") for r in member.records
                          if r.get("kind") == "predict" and isinstance(r.get("selection"), dict)), None)
        if objective:
            shown[name] = f"{name} (objective {objective})"
    systems = {label: prediction_spans(documents, scored[label]) for label in labels}
    diagnostics = member_diagnostics(oof, corpus.train, {s.label: scored[s.label] for s in specs}, documents)
    try:
        return ReportData(f"{corpus_name} {split}: {len(specs)} members, {len(ensemble_names)} ensembles",
                          documents, systems, frozenset(ensemble_names), diagnostics, rank_by, shown)
    except ValueError as exc:  # e.g. a system without predictions for some documents
        raise EnsembleDeidError(str(exc)) from None


def known_specs(value: str, option: str):
    """The tagger specs of ``value``, each naming a known tagger, without
    loading any (``parse_tagger_specs`` checks parameters and availability,
    and imports deep-learning libraries to do so: seconds)."""
    from ..errors import ParameterError
    from ..experiment.cv import TaggerSpec, split_specs
    from ..taggers.registry import UnknownTagger, tagger_class

    specs = []
    for chunk in split_specs(value):
        try:
            spec = TaggerSpec.parse(chunk)
            tagger_class(spec.name)
        except (ValueError, UnknownTagger) as exc:
            raise ParameterError(str(exc), option) from None
        specs.append(spec)
    return specs


def check_ensembles(engine, names: Sequence[str], members: Sequence[str], oof: bool, corpus_name: str,
                    member_specs: str, folds: int, seed: int) -> None:
    """Every ensemble in ``names`` is cached with the parts the page needs
    (fitted on ``members`` where several are), else one error naming them
    all, the ones never made apart, with the command that makes them."""
    from ..ensemble.caching import EnsembleNotCached, locate_ensemble
    from ..errors import EnsembleDeidError

    absent, other = [], []
    for name in names:
        try:
            locate_ensemble(engine, name, oof=oof, members=members)
        except EnsembleNotCached:
            absent.append(name)
        except EnsembleDeidError as exc:  # ambiguous, or parts missing
            other.append(str(exc))
    if not absent and not other:
        return
    lines = []
    if absent:
        lines.append(f"{len(absent)} of the {len(names)} ensembles named are not cached for this training set: "
                     f"{', '.join(absent)}. Make each first with 'ensemble-deid ensemble --corpus {corpus_name} "
                     f"--method METHOD --members \"{member_specs}\"' (--folds {folds} --seed {seed}; "
                     "docs/report.md lists the runs and their times)")
    lines += other
    raise EnsembleDeidError("; ".join(lines))


def _ordered_labels(documents: Sequence[Document], systems: Mapping[str, Mapping[str, Sequence[Annotation]]]) -> list[str]:
    """Every CATEGORY:TYPE label of gold and systems, by parent category (in
    the i2b2 order), then type."""
    found = {a.label for d in documents for a in d.annotations}
    found |= {a.label for spans in systems.values() for doc_spans in spans.values() for a in doc_spans}
    order = {c: i for i, c in enumerate(PARENT_CATEGORIES)}
    return sorted(found, key=lambda lab: (order.get(lab.split(":", 1)[0], len(order)), lab))


# -- figures -----------------------------------------------------------------

def _f(x: float) -> str:
    return f"{x:.4f}"


def _cell(value, text: str | None = None, cls: str = "") -> str:
    """A table cell sorting by ``value``."""
    shown = text if text is not None else (_f(value) if isinstance(value, float) else str(value))
    attr = f' class="{cls}"' if cls else ""
    return f'<td{attr} data-v="{escape(str(value))}">{escape(shown)}</td>'


def _table(headers: Sequence[str], rows: Sequence[str], cls: str = "sortable", attrs: str = "") -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    return f'<table class="{cls}"{attrs}><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'


def _leak_cells(leaks: dict, key: str) -> list[str]:
    """Token leak interval, entity leak rate and its interval (blank where
    there is no gold PHI of ``key``)."""
    tok, ent = leaks["token"].get(key), leaks["entity"].get(key)
    return [_cell(tok.low, f"{tok.low:.4f}-{tok.high:.4f}") if tok else _cell("", ""),
            _cell(ent.rate) if ent else _cell(""), _cell(ent.low, f"{ent.low:.4f}-{ent.high:.4f}") if ent else _cell("", "")]


def _ceiling_note(data: ReportData) -> str:
    from .leaks import OVERALL

    c = data.ceiling
    if c is None or OVERALL not in c["token"]:
        return ""
    tok, ent = c["token"][OVERALL], c["entity"][OVERALL]
    return (f"<p>Ceiling: the members' union (every span of the {len(data.systems) - len(data.ensembles)} members "
            f"together) leaks {ent.rate:.4f} of the gold entities (95% CI {ent.low:.4f}-{ent.high:.4f}) and "
            f"{tok.rate:.4f} of the PHI tokens ({tok.low:.4f}-{tok.high:.4f}); no ensemble of these members leaks "
            "less.</p>")


def _kind_of(data: ReportData, name: str) -> str:
    return "ensemble" if name in data.ensembles else "member"


def _shown(data: ReportData, name: str) -> str:
    return data.shown_names.get(name, name)


def summary_section(data: ReportData) -> Section:
    rows = []
    for name in data.systems:
        rep = data.reports[name]
        s, leak = rep["strict"].micro, rep.leak.overall
        rows.append(f'<tr data-sys="{escape(name)}">' + "".join([
            _cell(name, _shown(data, name)), _cell(_kind_of(data, name)), _cell(s.precision), _cell(s.recall), _cell(s.f1),
            _cell(int(s.tp)), _cell(int(s.fp)), _cell(int(s.fn)),
            _cell(leak.token_rate), _cell(leak.char_rate), *_leak_cells(data.leaks[name], "all")]) + "</tr>")
    n_gold = sum(len(d.annotations) for d in data.documents)
    note = (f"<p>{len(data.documents)} documents, {n_gold} gold spans. Strict micro scores (exact offsets and "
            "label) as <code>evaluate</code> and <code>compare</code> print them; leak rates: share of gold PHI "
            "tokens, characters (white space excepted) and entities (one of whose tokens leaks) that no span of the "
            "system covers, with 95% document-bootstrap intervals. Click a header to "
            f"sort. Documents are ranked by <b>{escape(_shown(data, str(data.focus)))}</b>.</p>") + _ceiling_note(data)
    headers = ["system", "kind", "P", "R", "F1", "TP", "FP", "FN", "leaked tokens", "leaked chars",
               "95% CI (tokens)", "leaked entities", "95% CI (entities)"]
    return Section("summary", "Systems", note + _table(headers, rows, attrs=' id="systems"'))


def categories_section(data: ReportData) -> Section:
    rows = []
    for name in data.systems:
        rep = data.reports[name]
        for cat, s in rep["strict"].by_category.items():
            leak = rep.leak.by_category.get(cat)
            if s.tp + s.fn + s.fp == 0:
                continue
            rows.append(f'<tr data-cat="{escape(cat)}" data-sys="{escape(name)}">' + "".join([
                _cell(name, _shown(data, name)), _cell(cat), _cell(int(s.tp + s.fn)), _cell(s.precision), _cell(s.recall), _cell(s.f1),
                _cell(int(s.fp)), _cell(int(s.fn)),
                _cell(leak.token_rate if leak else 0.0), _cell(leak.leaked_tokens if leak else 0),
                *_leak_cells(data.leaks[name], cat)]) + "</tr>")
    note = ("<p>Strict scores per parent category (tags filtered to the category before matching, as the official "
            "program does) and the category's token and entity leak rates with 95% document-bootstrap intervals. "
            "The category filter of the documents applies here too.</p>")
    headers = ["system", "category", "gold", "P", "R", "F1", "FP", "FN", "leak rate (tokens)", "leaked tokens",
               "95% CI (tokens)", "leak rate (entities)", "95% CI (entities)"]
    return Section("categories", "Per category", note + _table(headers, rows, attrs=' id="category-table"'))


def _heat(share: float, rgb: str) -> str:
    return f' style="background: rgba({rgb}, {min(max(share, 0.0), 1.0):.3f})"'


def confusion_section(data: ReportData) -> Section:
    options, tables = [], []
    for k, name in enumerate(data.systems):
        conf = data.confusions[name]
        counts = conf.counts
        row_total = counts.sum(axis=1)
        short = [lab.split(":", 1)[-1] for lab in conf.labels]
        head = "<th>gold \\ system</th>" + "".join(f'<th title="{escape(lab)}">{escape(s)}</th>'
                                                     for lab, s in zip(conf.labels, short))
        body = []
        for i, lab in enumerate(conf.labels):
            if row_total[i] == 0 and counts[:, i].sum() == 0:
                continue
            cells = []
            for j in range(len(conf.labels)):
                c = int(counts[i, j])
                share = c / row_total[i] if row_total[i] else 0.0
                rgb = "46, 125, 50" if i == j else "198, 40, 40"
                cells.append(f'<td{_heat(share, rgb)} title="{escape(lab)} / {escape(conf.labels[j])}">'
                             f'{c if c else ""}</td>')
            body.append(f'<tr><th title="{escape(lab)}">{escape(short[i])}</th>{"".join(cells)}</tr>')
        hidden = "" if name == data.focus else " hidden"
        tables.append(f'<div class="conf" data-sys="{escape(name)}"{hidden}><table class="matrix">'
                      f'<thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table></div>')
        selected = " selected" if name == data.focus else ""
        options.append(f'<option value="{k}"{selected}>{escape(_shown(data, name))}</option>')
    note = ("<p>Gold label (rows) against system label (columns) for every pair of overlapping gold and system "
            "spans; <i>(none)</i> counts spans that overlap nothing (a leak or a false alarm). Shading: share of "
            "the row.</p>")
    select = f'<label>system <select id="conf-system">{"".join(options)}</select></label>'
    return Section("confusion", "Confusion matrix", note + select + "".join(tables))


def members_section(data: ReportData) -> Section | None:
    diag = data.diagnostics
    if diag is None:
        return None
    names = diag.members
    head = "<th></th>" + "".join(f'<th title="{escape(n)}">[{i}]</th>' for i, n in enumerate(names))
    body = []
    for i, n in enumerate(names):
        cells = []
        for j in range(len(names)):
            if i == j:
                cells.append("<td></td>")
            elif j > i:
                v = float(diag.jaccard[i, j])
                cells.append(f'<td{_heat(v, "21, 101, 192")} title="Jaccard {escape(n)} / {escape(names[j])}">{v:.2f}</td>')
            else:
                v = float(diag.double_fault[i, j])
                cells.append(f'<td{_heat(v * 10, "230, 81, 0")} title="double fault {escape(n)} / {escape(names[j])}">'
                             f'{v:.3f}</td>')
        body.append(f"<tr><th>[{i}] {escape(n)}</th>{''.join(cells)}</tr>")
    heat = f'<table class="matrix" id="agreement"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'
    rows = [f"<tr>{_cell(c.member)}{_cell(c.precision)}{_cell(c.recall)}{_cell(c.f1)}{_cell(c.unique_true)}"
            f"{_cell(c.unique_false)}{_cell(c.delta, f'{c.delta:+.4f}')}</tr>" for c in diag.contributions]
    o = diag.oracle
    note = (f"<p>Upper triangle: Jaccard overlap of two members' span sets (label included; blue); lower triangle: "
            f"double fault, the share of gold spans both miss (orange, full at 0.1). Oracle: {o.found} of {o.n_gold} "
            f"gold spans found by some member (recall {o.recall:.4f}).</p>")
    contrib_note = (f"<p>Marginal contributions: gold spans only this member found, false spans only it produced, "
                    f"and the change in F1 of voting at threshold {diag.threshold} (chosen on the training split's "
                    "out-of-fold predictions) when it is left out.</p>")
    headers = ["member", "P", "R", "F1", "only it right", "only it wrong", "Δ F1 of voting"]
    return Section("members", "Member agreement", note + heat + contrib_note
                   + _table(headers, rows, attrs=' id="contributions"'))


def documents_section(data: ReportData, include_text: bool) -> Section:
    kinds = "".join(f'<label><input type="checkbox" class="kind" value="{k}" checked> {escape(KINDS[k])}</label> '
                    for k in range(1, len(KINDS)))
    cats = "".join(f'<option value="{escape(c)}">{escape(c)}</option>' for c in _categories(data))
    systems = "".join(f'<option value="{k}"{" selected" if n == data.focus else ""}>{escape(_shown(data, n))}</option>'
                      for k, n in enumerate(data.systems))
    what = ("the note with one lane per system under the text" if include_text
            else "offsets, labels and counts only (the page holds no note text)")
    return Section("documents", "Documents", f"""
<p>Documents ranked by the errors of the chosen system (strict false positives and negatives, counted by kind:
a <b>leak</b> is a gold span with characters no system span covers, a <b>false alarm</b> a system span overlapping no
gold span, a <b>wrong type</b> exact offsets with another label, a <b>boundary</b> error overlapping spans with other
offsets). The filters keep the documents and spans with errors of the chosen kinds and category. A document view
shows {what}.</p>
<div class="filters">
<label>ranked by <select id="focus">{systems}</select></label>
<label>category <select id="category"><option value="">all</option>{cats}</select></label>
{kinds}
</div>
<p id="doc-count"></p>
<div class="docs"><div class="doc-list"><table id="doc-table" class="plain"><thead><tr><th>#</th><th>document</th>
<th>errors</th><th>shown</th><th>leak</th><th>false alarm</th><th>wrong type</th><th>boundary</th></tr></thead>
<tbody></tbody></table></div>
<div id="doc-view"><p class="muted">Choose a document.</p></div></div>""")


def _categories(data: ReportData) -> list[str]:
    seen = []
    for lab in data.labels:
        c = lab.split(":", 1)[0]
        if c not in seen:
            seen.append(c)
    return seen


# -- the page ----------------------------------------------------------------

def page_data(data: ReportData, include_text: bool, include_ids: bool | None = None) -> dict:
    """The JSON the script reads: labels, systems, and per document the spans
    of every lane (gold first), their error kinds and the strict counts.
    Documents are named by position (``doc-1``...) unless ``include_ids``
    (default: with the text): a document id is a file name, which often
    holds a patient's name or record number."""
    if include_ids is None:
        include_ids = include_text
    label_index = {lab: i for i, lab in enumerate(data.labels)}
    names = list(data.systems)
    counts = {n: data.reports[n]["strict"].documents for n in names}
    docs = []
    for d_i, doc in enumerate(data.documents):
        lanes = [[[a.start, a.end, label_index[a.label]] for a in doc.annotations]]
        lanes += [[[a.start, a.end, label_index[a.label]] for a in data.systems[n][doc.id]] for n in names]
        entry = {
            "id": doc.id if include_ids else f"doc-{d_i + 1}", "n": len(doc.text), "lanes": lanes,
            "gk": [list(data.overlaps[n][doc.id].gold_kinds) for n in names],
            "sk": [list(data.overlaps[n][doc.id].system_kinds) for n in names],
            "c": [[int(counts[n].tp[d_i]), int(counts[n].fp[d_i]), int(counts[n].fn[d_i])] for n in names],
        }
        if include_text:
            entry["text"] = doc.text
        docs.append(entry)
    return {
        "labels": data.labels, "categories": [lab.split(":", 1)[0] for lab in data.labels],
        "palette": _categories(data), "kinds": list(KINDS),
        "systems": [{"name": n, "shown": _shown(data, n), "kind": _kind_of(data, n)} for n in names],
        "focus": names.index(data.focus), "text": include_text, "docs": docs,
    }


def _script_json(obj) -> str:
    """JSON safe inside <script>: no '<', '>' or '&' can end the element."""
    text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
    for ch, esc in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        text = text.replace(ch, esc)
    return text


def default_sections(data: ReportData) -> list[Section]:
    return [s for s in (summary_section(data), categories_section(data), confusion_section(data),
                        members_section(data)) if s is not None]


def build_page(data: ReportData, include_text: bool = False, extra_sections: Sequence[Section] = (),
               include_ids: bool | None = None) -> str:
    """The whole page as one string. ``extra_sections`` come after the
    default figures and before the documents. ``include_ids``: the
    documents' own ids (default: only with the text; see ``page_data``)."""
    sections = [*default_sections(data), *extra_sections, documents_section(data, include_text)]
    ids = [s.id for s in sections]
    if len(set(ids)) != len(ids):
        raise ValueError(f"section ids must be unique: {ids}")
    nav = " · ".join(f'<a href="#{escape(s.id)}">{escape(s.title)}</a>' for s in sections)
    body = "".join(f'<section id="{escape(s.id)}"><h2>{escape(s.title)}</h2>{s.html}</section>' for s in sections)
    if include_text:
        banner = PHI_BANNER
    else:
        banner = ('<div class="banner" id="banner">No note text: the document views show offsets, labels and '
                  "counts only.</div>")
    return html_page(data.title, banner, f"<nav>{nav}</nav>{body}", page_data(data, include_text, include_ids), _JS)


PHI_BANNER = ('<div class="banner phi" id="banner">This page contains note text (PHI). Keep it owner-only; '
              "do not share, upload or commit it.</div>")


def html_page(title: str, banner: str, body: str, data, script: str, css: str = "", data_id: str = "report-data") -> str:
    """A self-contained page: the report's style (plus ``css``), a
    content-security policy that lets it load nothing, ``banner`` and
    ``body`` (trusted fragments), ``data`` as escaped JSON in the element
    ``data_id`` and ``script`` (which reads it)."""
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{escape(title)}</title><style>{_CSS}{css}</style></head>
<body>{banner}<h1>{escape(title)}</h1>{body}
<script type="application/json" id="{escape(data_id)}">{_script_json(data)}</script>
<script>{script}</script></body></html>
"""


def write_page(path: str | os.PathLike, page: str) -> Path:
    """Write the page owner-only (0600, whatever the umask), creating missing
    folders owner-only; existing folders are left as they are."""
    target = Path(os.path.abspath(path))
    private_dir(target.parent)
    return write_private(target, page, fsync=True)


_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:0 1.5em 2em;color:#212121}
h1{font-size:1.4em;margin:.6em 0 .2em}h2{font-size:1.15em;border-bottom:1px solid #ccc;margin-top:1.6em}
nav a{margin-right:.3em}code{background:#f3f3f3;padding:0 .2em}
.banner{margin:0 -1.5em;padding:.5em 1.5em;background:#e8f5e9;border-bottom:1px solid #a5d6a7}
.banner.phi{background:#b71c1c;color:#fff;font-weight:bold;border:0}
table{border-collapse:collapse;margin:.5em 0}td,th{padding:2px 6px;border:1px solid #ddd;font-size:12px}
td[data-v]{text-align:right}td[data-v]:first-child{text-align:left}
table.sortable th{cursor:pointer;background:#f5f5f5;user-select:none}
table.sortable th.asc:after{content:" \\25B2"}table.sortable th.desc:after{content:" \\25BC"}
table.matrix td{text-align:right;min-width:2.2em}table.matrix th{font-weight:normal;background:#fafafa;white-space:nowrap}
.filters label{margin-right:1em}.lanes label{margin-right:.6em;white-space:nowrap}.muted{color:#777}
.docs{display:flex;gap:1em;align-items:flex-start}
.doc-list{max-height:80vh;overflow:auto;flex:0 0 auto}#doc-view{flex:1 1 auto;min-width:0;overflow-x:auto}
#doc-table tbody tr{cursor:pointer}#doc-table tbody tr:hover{background:#eef}#doc-table tr.sel{background:#dde}
.legend span.sw{display:inline-block;width:1.2em;height:.8em;margin:0 .3em 0 .8em;vertical-align:middle}
.textview{font:13px/1.3 ui-monospace,monospace;border:1px solid #ddd;padding:.5em;overflow-wrap:anywhere}
.line{min-height:1em;margin-bottom:2px}.seg{display:inline-block;vertical-align:top}
.seg .t{white-space:pre}.seg.dis .t{background:#fff59d}.seg.leak .t{background:#ef9a9a;text-decoration:underline wavy #b71c1c}
.lane{height:5px;margin-top:1px}.lane.on{opacity:.9}.lane.st{margin-left:1px}.lane.en{margin-right:1px}
.lane.ov{outline:1px solid #000;outline-offset:-1px}
.lane.k1{box-shadow:0 0 0 1px #b71c1c;height:7px}
.lane.k2{background-image:repeating-linear-gradient(90deg,transparent 0 3px,#fff 3px 5px)}
.lane.k3{box-shadow:inset 0 -2px 0 #000}.lane.k4{opacity:.45}
table.regions td{font-size:12px;white-space:nowrap}table.regions td.k1{background:#ffcdd2}
table.regions td.k2{background:#ffe0b2}table.regions td.k3{background:#e1bee7}table.regions td.k4{background:#fff9c4}
table.regions tr.dis td:first-child{border-left:4px solid #f9a825}
"""

# Categories get fixed colours (c0, c1, ... in palette order); error kinds the k1-k4 classes above.
_COLOURS = ["#1565c0", "#6a1b9a", "#2e7d32", "#ef6c00", "#00838f", "#ad1457", "#4e342e", "#546e7a",
            "#9e9d24", "#5d4037", "#283593", "#c62828"]
_CSS += "".join(f".c{i}{{background-color:{c}}}" for i, c in enumerate(_COLOURS))

_JS = r"""
"use strict";
(function(){
const D = JSON.parse(document.getElementById('report-data').textContent);
const NCOL = %(ncol)d;
function el(tag, attrs, text){
  const e = document.createElement(tag);
  if (attrs) for (const k in attrs) e.setAttribute(k, attrs[k]);
  if (text !== undefined && text !== null) e.textContent = String(text);
  return e;
}
function catColour(labelIndex){ return 'c' + (D.palette.indexOf(D.categories[labelIndex]) %% NCOL); }

// sortable tables
document.querySelectorAll('table.sortable').forEach(function(table){
  table.querySelectorAll('th').forEach(function(th, col){
    th.addEventListener('click', function(){
      const asc = !th.classList.contains('asc');
      table.querySelectorAll('th').forEach(function(h){ h.classList.remove('asc', 'desc'); });
      th.classList.add(asc ? 'asc' : 'desc');
      const body = table.tBodies[0];
      const rows = Array.from(body.rows);
      rows.sort(function(a, b){
        const x = a.cells[col].dataset.v, y = b.cells[col].dataset.v;
        const nx = parseFloat(x), ny = parseFloat(y);
        const c = (!isNaN(nx) && !isNaN(ny)) ? nx - ny : String(x).localeCompare(String(y));
        return asc ? c : -c;
      });
      rows.forEach(function(r){ body.appendChild(r); });
    });
  });
});

// confusion matrix: one system at a time
const confSelect = document.getElementById('conf-system');
if (confSelect) confSelect.addEventListener('change', function(){
  const name = D.systems[+confSelect.value].name;
  document.querySelectorAll('div.conf').forEach(function(div){ div.hidden = div.dataset.sys !== name; });
});

// documents
const focusSel = document.getElementById('focus'), catSel = document.getElementById('category');
const kindBoxes = Array.from(document.querySelectorAll('input.kind'));
let current = -1;
const hiddenLanes = new Set();  // lanes (0 = gold) the user hid
function chosenKinds(){ const s = new Set(); kindBoxes.forEach(function(b){ if (b.checked) s.add(+b.value); }); return s; }
function inCategory(labelIndex){ return !catSel.value || D.categories[labelIndex] === catSel.value; }
// Errors of system s in document d, by kind, keeping the chosen category: gold-side kinds
// (leak, wrong type, boundary) by the gold label, system-side ones (false alarm, boundary) by the system's.
function errors(d, s){
  const out = [0, 0, 0, 0, 0];
  const gold = d.lanes[0], sys = d.lanes[s + 1];
  d.gk[s].forEach(function(k, i){ if (k && inCategory(gold[i][2])) out[k]++; });
  d.sk[s].forEach(function(k, i){ if ((k === 2 || k === 4) && inCategory(sys[i][2])) out[k]++; });
  return out;
}
function refreshList(){
  const s = +focusSel.value, kinds = chosenKinds();
  const rows = [];
  D.docs.forEach(function(d, i){
    const e = errors(d, s);
    let shown = 0; kinds.forEach(function(k){ shown += e[k]; });
    if (shown > 0) rows.push({i: i, e: e, shown: shown, total: d.c[s][1] + d.c[s][2]});
  });
  rows.sort(function(a, b){ return b.shown - a.shown || b.total - a.total || a.i - b.i; });
  const body = document.querySelector('#doc-table tbody');
  body.textContent = '';
  rows.forEach(function(r, rank){
    const tr = el('tr', {'data-doc': r.i});
    if (r.i === current) tr.className = 'sel';
    [rank + 1, D.docs[r.i].id, r.total, r.shown, r.e[1], r.e[2], r.e[3], r.e[4]].forEach(function(v){ tr.appendChild(el('td', null, v)); });
    tr.addEventListener('click', function(){ showDoc(r.i); });
    body.appendChild(tr);
  });
  document.getElementById('doc-count').textContent = rows.length + ' of ' + D.docs.length +
    ' documents with errors of the chosen kinds by ' + D.systems[s].shown + '.';
  if (current >= 0) showDoc(current);
}
[focusSel, catSel].concat(kindBoxes).forEach(function(x){ x.addEventListener('change', refreshList); });
catSel.addEventListener('change', function(){
  document.querySelectorAll('#category-table tbody tr').forEach(function(tr){
    tr.hidden = !!catSel.value && tr.dataset.cat !== catSel.value;
  });
});

function laneNames(){ return ['gold'].concat(D.systems.map(function(s){ return s.shown; })); }
// The kind of span i of lane l (gold spans: as the focus system gets them wrong).
function kindOf(d, l, i, s){ return l === 0 ? d.gk[s][i] : d.sk[l - 1][i]; }

// Clusters of overlapping spans over every lane, in text order.
function regions(d){
  const all = [];
  d.lanes.forEach(function(spans, l){ spans.forEach(function(sp, i){ all.push([sp[0], sp[1], l, i]); }); });
  all.sort(function(a, b){ return a[0] - b[0] || a[1] - b[1]; });
  const out = [];
  all.forEach(function(x){
    const last = out[out.length - 1];
    if (last && x[0] < last.end){ last.end = Math.max(last.end, x[1]); last.items.push(x); }
    else out.push({start: x[0], end: x[1], items: [x]});
  });
  return out;
}

function regionTable(d, s, kinds){
  const names = laneNames();
  const table = el('table', {'class': 'regions plain', 'id': 'region-table'});
  const head = el('tr');
  head.appendChild(el('th', null, 'offsets'));
  names.forEach(function(n, l){ if (!hiddenLanes.has(l)) head.appendChild(el('th', null, n)); });
  table.appendChild(el('thead')).appendChild(head);
  const body = table.appendChild(el('tbody'));
  let shown = 0;
  regions(d).forEach(function(r){
    const perLane = names.map(function(){ return []; });
    r.items.forEach(function(x){ if (!hiddenLanes.has(x[2])) perLane[x[2]].push(x); });
    const sig = perLane.map(function(xs){ return xs.map(function(x){ const sp = d.lanes[x[2]][x[3]]; return sp.join(','); }).join(';'); })
      .filter(function(v, l){ return !hiddenLanes.has(l); });
    const disagree = sig.some(function(v){ return v !== sig[0]; });
    // kept when the focus system has an error of a chosen kind and category here
    const keep = r.items.some(function(x){
      if (x[2] !== 0 && x[2] !== s + 1) return false;
      const k = kindOf(d, x[2], x[3], s), lab = d.lanes[x[2]][x[3]][2];
      if (x[2] === s + 1 && !(k === 2 || k === 4)) return false;
      return k > 0 && kinds.has(k) && inCategory(lab);
    });
    if (!keep) return;
    shown++;
    const tr = el('tr', disagree ? {'class': 'dis'} : null);
    tr.appendChild(el('td', null, '[' + r.start + ', ' + r.end + ')'));
    perLane.forEach(function(xs, l){
      if (hiddenLanes.has(l)) return;
      const td = el('td');
      let worst = 0;
      xs.forEach(function(x, n){
        const sp = d.lanes[x[2]][x[3]];
        const k = kindOf(d, l, x[3], s);
        if (k > worst) worst = k;
        const off = (sp[0] === r.start && sp[1] === r.end) ? '' : ' [' + sp[0] + ', ' + sp[1] + ')';
        td.appendChild(el('div', {'title': D.kinds[k]}, D.labels[sp[2]].split(':').pop() + off));
      });
      if (worst) td.className = 'k' + worst;
      tr.appendChild(td);
    });
    body.appendChild(tr);
  });
  return [table, shown];
}

// The note with one lane per system under it: the text is cut at every span boundary and line break, and
// each piece carries one cell per lane, so lanes stay aligned whatever the characters' widths.
function textView(d, s){
  const chars = Array.from(d.text);  // code points, as the offsets count them
  const n = chars.length, cuts = new Set([0, n]);
  d.lanes.forEach(function(spans){ spans.forEach(function(sp){ cuts.add(sp[0]); cuts.add(sp[1]); }); });
  chars.forEach(function(c, i){ if (c === '\n'){ cuts.add(i); cuts.add(i + 1); } });
  const pts = Array.from(cuts).filter(function(x){ return x >= 0 && x <= n; }).sort(function(a, b){ return a - b; });
  const view = el('div', {'class': 'textview', 'id': 'text-view'});
  let line = view.appendChild(el('div', {'class': 'line'}));
  for (let p = 0; p + 1 < pts.length; p++){
    const a = pts[p], b = pts[p + 1];
    const piece = chars.slice(a, b).join('');
    if (piece === '\n'){ line = view.appendChild(el('div', {'class': 'line'})); continue; }
    const cover = d.lanes.map(function(spans, l){
      const out = [];
      if (hiddenLanes.has(l)) return out;
      spans.forEach(function(sp, i){ if (sp[0] <= a && sp[1] >= b) out.push(i); });
      return out;
    });
    if (cover.every(function(c){ return c.length === 0; })){
      piece.split(/(\s+)/).forEach(function(w){
        if (!w) return;
        const seg = line.appendChild(el('div', {'class': 'seg'}));
        seg.appendChild(el('div', {'class': 't'}, w));
      });
      continue;
    }
    const seg = line.appendChild(el('div', {'class': 'seg'}));
    const t = seg.appendChild(el('div', {'class': 't'}, piece));
    const sig = cover.map(function(c, l){ return c.map(function(i){ const sp = d.lanes[l][i]; return sp.join(','); }).join(';'); })
      .filter(function(v, l){ return !hiddenLanes.has(l); });
    if (sig.some(function(v){ return v !== sig[0]; })) seg.classList.add('dis');
    if (cover[0].some(function(i){ return d.gk[s][i] === 1; })) seg.classList.add('leak');
    cover.forEach(function(c, l){
      if (hiddenLanes.has(l)) return;
      const lane = seg.appendChild(el('div', {'class': 'lane'}));
      if (!c.length) return;
      const sp = d.lanes[l][c[0]];
      const k = kindOf(d, l, c[0], s);
      lane.classList.add('on', catColour(sp[2]), 'k' + k);
      if (sp[0] === a) lane.classList.add('st');
      if (sp[1] === b) lane.classList.add('en');
      if (c.length > 1) lane.classList.add('ov');
      lane.dataset.spans = c.map(function(i){ return l + ':' + i; }).join(' ');
      lane.title = laneNames()[l] + ': ' + D.labels[sp[2]] + ' [' + sp[0] + ', ' + sp[1] + ') ' + D.kinds[k];
    });
    t.title = cover.map(function(c, l){ return c.length ? laneNames()[l] : null; }).filter(Boolean).join(', ');
  }
  return view;
}

function showDoc(i){
  current = i;
  const d = D.docs[i], s = +focusSel.value, kinds = chosenKinds();
  document.querySelectorAll('#doc-table tbody tr').forEach(function(tr){ tr.classList.toggle('sel', +tr.dataset.doc === i); });
  const view = document.getElementById('doc-view');
  view.textContent = '';
  const e = errors(d, s);
  view.appendChild(el('h3', null, d.id));
  view.appendChild(el('p', null, d.n + ' characters, ' + d.lanes[0].length + ' gold spans; ' + D.systems[s].shown +
    ': ' + d.c[s][0] + ' correct, ' + d.c[s][1] + ' false positives, ' + d.c[s][2] + ' false negatives (' +
    [1, 2, 3, 4].map(function(k){ return e[k] + ' ' + D.kinds[k]; }).join(', ') + ')'));
  const lanes = view.appendChild(el('p', {'class': 'lanes'}));
  lanes.appendChild(el('span', null, 'Lanes, top to bottom (untick to hide): '));
  laneNames().forEach(function(n, l){
    const label = lanes.appendChild(el('label'));
    const box = label.appendChild(el('input', {'type': 'checkbox', 'class': 'lane-box', 'value': l}));
    box.checked = !hiddenLanes.has(l);
    box.addEventListener('change', function(){ if (box.checked) hiddenLanes.delete(l); else hiddenLanes.add(l); showDoc(current); });
    label.appendChild(document.createTextNode(' ' + n));
    lanes.appendChild(document.createTextNode(' '));  // a place to wrap
  });
  const legend = view.appendChild(el('p', {'class': 'legend'}));
  legend.appendChild(el('span', null, 'Colours:'));
  D.palette.forEach(function(c, j){
    legend.appendChild(el('span', {'class': 'sw c' + (j %% NCOL)}));
    legend.appendChild(el('span', null, c));
  });
  legend.appendChild(el('span', null, '. Error kinds of ' + D.systems[s].shown + ': red frame leak, stripes false alarm, ' +
    'underline wrong type, pale boundary; yellow text: the lanes disagree; red text: leaked.'));
  if (D.text) view.appendChild(textView(d, s));
  const rt = regionTable(d, s, kinds);
  view.appendChild(el('p', null, rt[1] + ' span region(s) with errors of the chosen kinds by ' + D.systems[s].shown +
    ' (a yellow edge: the lanes disagree).'));
  view.appendChild(rt[0]);
}
refreshList();
})();
""" % {"ncol": len(_COLOURS)}
