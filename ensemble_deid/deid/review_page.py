"""The review page: one static HTML file (the report page's machinery,
``studies.html_report.html_page``: inline style and script, a policy that
lets it load nothing) where a person goes through the review queue by
keyboard and downloads the decisions as a file for ``review apply``.

Each item shows a window of the note around it, with the item's extent and
the spans masked now marked, beside the same window of the output as it is
released now. Keys: ``j``/``k`` next/previous item, ``a`` accept, ``r``
reject, ``e`` edit the extent (``←``/``→`` move its end, shift+``←``/``→``
its start, within the window shown; ``Enter`` keeps the edit, ``Escape``
drops it), ``t`` cycle the
type (an edit), ``u`` undo the item's decision, ``s`` save the decisions
file. Decisions are kept in the browser's storage for this queue (offsets
and labels only) until saved.

The page shows note text, so it is PHI: it carries a banner saying so and is
written owner-only into ``OUT/review/``, outside ``text/`` (the folder meant
for sharing). Text reaches the page only as JSON data that the script puts
in place with ``textContent``.
"""
from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

from ..corpus.document import Annotation, Document
from ..files import file_sha256
from .review import REVIEW_DIR, Queue, queue_path

PAGE = "review.html"
CONTEXT = 160  # characters of the note on either side of an item


def page_path(out: str | Path) -> Path:
    return Path(out) / REVIEW_DIR / PAGE


def page_data(queue: Queue, queue_sha256: str, docs: Mapping[str, Document],
              current: Mapping[str, Sequence[Annotation]], pieces: Mapping[str, list[tuple[int, int, str]]],
              context: int = CONTEXT) -> dict:
    """What the script reads: per item its fields, the window of its note
    (code-point offsets, as Python counts them), the spans masked now in the
    window and the output pieces overlapping it."""
    labels = list(queue.header.get("labels") or [])
    for item in queue.items:
        if item.label not in labels:
            labels.append(item.label)
    doc_index = {d: i for i, d in enumerate(dict.fromkeys(i.doc for i in queue.items))}
    items = []
    for item in queue.items:
        text = docs[item.doc].text
        lo, hi = max(0, item.start - context), min(len(text), item.end + context)
        spans = [[a.start, a.end, a.label] for a in current[item.doc] if a.start < hi and a.end > lo]
        out = [[s, e, o, o != text[s:e]] for s, e, o in pieces[item.doc] if s < hi and e > lo]
        items.append({"id": item.item, "doc": item.doc, "d": doc_index[item.doc], "start": item.start,
                      "end": item.end, "label": item.label, "risk": item.risk, "kind": item.kind,
                      "current": item.current, "members": list(item.members), "w0": lo, "w": text[lo:hi],
                      "spans": spans, "out": out})
    return {"queue": queue_sha256, "labels": labels, "items": items, "budget": queue.budget}


def build_review_page(queue: Queue, queue_sha256: str, docs: Mapping[str, Document],
                      current: Mapping[str, Sequence[Annotation]], pieces: Mapping[str, list[tuple[int, int, str]]],
                      context: int = CONTEXT) -> str:
    from html import escape

    from ..studies.html_report import PHI_BANNER, html_page

    data = page_data(queue, queue_sha256, docs, current, pieces, context)
    body = f"""
<p>{len(queue.items)} item(s) in {len({i.doc for i in queue.items})} note(s) to review (queue
<code>{escape(queue_sha256[:12])}</code>). Keys: <kbd>j</kbd>/<kbd>k</kbd> next/previous, <kbd>a</kbd> accept (it is
PHI: mask it), <kbd>r</kbd> reject (it is not PHI: leave or make it readable), <kbd>e</kbd> edit the extent
(<kbd>←</kbd>/<kbd>→</kbd> move its end, <kbd>shift</kbd>+<kbd>←</kbd>/<kbd>→</kbd> its start, <kbd>Enter</kbd> keep,
<kbd>Escape</kbd> drop), <kbd>t</kbd> cycle the type, <kbd>u</kbd> undo, <kbd>s</kbd> save the decisions file
(then: <code>ensemble-deid review apply OUT --notes NOTES --decisions FILE</code>).</p>
<p id="progress"></p><p><button id="save" type="button">Save decisions</button></p>
<div class="rv"><div class="rv-list"><p id="page"></p><table id="items" class="plain"><thead><tr><th>#</th><th>note</th><th>kind</th>
<th>risk</th><th>type</th><th>now</th><th>decision</th></tr></thead><tbody></tbody></table></div>
<div id="item-view"></div></div>"""
    return html_page("Review queue", PHI_BANNER, body, data, _JS, _CSS, data_id="review-data")


def write_review_page(out: str | Path, queue: Queue, docs: Mapping[str, Document],
                      current: Mapping[str, Sequence[Annotation]], pieces: Mapping[str, list[tuple[int, int, str]]],
                      context: int = CONTEXT) -> Path:
    """Write ``OUT/review/review.html`` (owner-only) for the queue file of ``out``."""
    from ..studies.html_report import write_page

    page = build_review_page(queue, file_sha256(queue_path(out)), docs, current, pieces, context)
    return write_page(page_path(out), page)


_CSS = """
kbd{border:1px solid #bbb;border-radius:3px;padding:0 .3em;background:#f7f7f7;font-size:12px}
.rv{display:flex;gap:1em;align-items:flex-start}
.rv-list{width:40em;flex:0 0 auto}
#items{table-layout:fixed;width:38em}#items td{overflow:hidden;white-space:nowrap;text-overflow:ellipsis}
#items th:nth-child(1){width:3.5em}#items th:nth-child(2){width:8em}#items th:nth-child(3){width:8em}
#items th:nth-child(4){width:3.5em}#items th:nth-child(5){width:7em}#items th:nth-child(6){width:4.5em}
#items tbody tr{cursor:pointer}#items tr.sel{background:#dde;outline:2px solid #3949ab}
#items td.accept{color:#2e7d32;font-weight:bold}#items td.reject{color:#c62828;font-weight:bold}
#items td.edit{color:#6a1b9a;font-weight:bold}
#item-view{flex:1 1 auto;min-width:0}.panes{display:flex;gap:1em}.pane{flex:1 1 50%;min-width:0}
.win{font:13px/1.5 ui-monospace,monospace;border:1px solid #ddd;padding:.5em;white-space:pre-wrap;overflow-wrap:anywhere}
.win .phi{background:#cfd8dc;text-decoration:underline}.win .cand{background:#fff176;outline:2px solid #f9a825}
.win .cand.editing{background:#b3e5fc;outline-color:#0277bd}.win .rep{background:#c8e6c9}
.win .cand.phi{background:#ffe082}
#decision{font-weight:bold}
"""

_JS = r"""
"use strict";
(function(){
const D = JSON.parse(document.getElementById('review-data').textContent);
const KEY = 'ensemble-deid-review-' + D.queue;
const decisions = {};
try { Object.assign(decisions, JSON.parse(localStorage.getItem(KEY) || '{}')); } catch (e) { /* none kept */ }
Object.keys(decisions).forEach(function(k){ if (!D.items.some(function(it){ return it.id === k; })) delete decisions[k]; });
let cur = 0, editing = null;
function el(tag, attrs, text){
  const e = document.createElement(tag);
  if (attrs) for (const k in attrs) e.setAttribute(k, attrs[k]);
  if (text !== undefined && text !== null) e.textContent = String(text);
  return e;
}
function keep(){ try { localStorage.setItem(KEY, JSON.stringify(decisions)); } catch (e) { /* storage off */ } }
function extentOf(it){
  if (editing) return editing;
  const d = decisions[it.id];
  return d ? {start: d.start, end: d.end, label: d.label} : {start: it.start, end: it.end, label: it.label};
}
function decide(it, action, ext){
  decisions[it.id] = {action: action, start: ext.start, end: ext.end, label: ext.label};
  keep();
}
// Pieces of a window cut at every boundary (code points, as the offsets count them).
function marked(container, text, w0, marks){
  const chars = Array.from(text), n = chars.length, cuts = new Set([0, n]);
  marks.forEach(function(m){ cuts.add(Math.max(0, Math.min(n, m[0] - w0))); cuts.add(Math.max(0, Math.min(n, m[1] - w0))); });
  const pts = Array.from(cuts).sort(function(a, b){ return a - b; });
  for (let p = 0; p + 1 < pts.length; p++){
    const a = pts[p], b = pts[p + 1];
    const cls = [];
    marks.forEach(function(m){ if (m[0] - w0 <= a && m[1] - w0 >= b) cls.push(m[2]); });
    const piece = chars.slice(a, b).join('');
    container.appendChild(cls.length ? el('span', {'class': cls.join(' ')}, piece) : document.createTextNode(piece));
  }
}
// The item list shows one page of rows around the current item: a table of thousands of rows would be laid
// out again on every key press (a quarter of a second each at 5,000 items).
const PAGE = 40;
function render(){
  const body = document.querySelector('#items tbody');
  body.textContent = '';
  const first = Math.floor(cur / PAGE) * PAGE, last = Math.min(D.items.length, first + PAGE);
  for (let i = first; i < last; i++){
    const it = D.items[i], d = decisions[it.id];
    const tr = el('tr', {'data-item': it.id, 'class': i === cur ? 'sel' : ''});
    [i + 1, it.doc, it.kind, it.risk.toFixed(2), it.label.split(':').pop(), it.current === 'phi' ? 'masked' : 'readable']
      .forEach(function(v){ tr.appendChild(el('td', null, v)); });
    tr.appendChild(el('td', d ? {'class': d.action} : null, d ? d.action : ''));
    tr.addEventListener('click', function(){ editing = null; cur = i; render(); });
    body.appendChild(tr);
  }
  document.getElementById('page').textContent = D.items.length ? 'items ' + (first + 1) + '-' + last + ' of ' +
    D.items.length + ' (j/k move through them all)' : '';
  const done = Object.keys(decisions).length;
  document.getElementById('progress').textContent = done + ' of ' + D.items.length + ' item(s) decided' +
    (editing ? ' (editing: arrows move the end, shift+arrows the start, Enter keeps, Escape drops)' : '');
  const view = document.getElementById('item-view');
  view.textContent = '';
  if (!D.items.length){ view.appendChild(el('p', null, 'Nothing to review.')); return; }
  const it = D.items[cur], ext = extentOf(it), d = decisions[it.id];
  view.appendChild(el('h3', null, 'Item ' + (cur + 1) + ' of ' + D.items.length + ': ' + it.id));
  view.appendChild(el('p', null, 'Note ' + it.doc + ', [' + ext.start + ', ' + ext.end + ') ' + ext.label +
    '; ' + it.kind + ', risk ' + it.risk.toFixed(3) + '; ' + (it.current === 'phi' ? 'masked now' : 'readable now') +
    (it.members.length ? '; proposed by ' + it.members.join(', ') : '')));
  view.appendChild(el('p', {'id': 'decision'}, d ? 'Decision: ' + d.action + (d.action === 'edit' ?
    ' to [' + d.start + ', ' + d.end + ') ' + d.label : '') : 'Not decided yet.'));
  const panes = view.appendChild(el('div', {'class': 'panes'}));
  const left = panes.appendChild(el('div', {'class': 'pane'}));
  left.appendChild(el('h4', null, 'The note (yellow: this item; grey: masked now)'));
  const win = left.appendChild(el('div', {'class': 'win', 'id': 'note-window'}));
  const marks = it.spans.map(function(s){ return [s[0], s[1], 'phi']; });
  marks.push([ext.start, ext.end, editing ? 'cand editing' : 'cand']);
  marked(win, it.w, it.w0, marks);
  const right = panes.appendChild(el('div', {'class': 'pane'}));
  right.appendChild(el('h4', null, 'Released now (green: replaced)'));
  const outWin = right.appendChild(el('div', {'class': 'win', 'id': 'output-window'}));
  const wEnd = it.w0 + Array.from(it.w).length;
  it.out.forEach(function(p){
    if (p[3]) { outWin.appendChild(el('span', {'class': 'rep'}, p[2])); return; }
    const chars = Array.from(p[2]);  // unchanged text: only the part inside the window
    outWin.appendChild(document.createTextNode(chars.slice(Math.max(0, it.w0 - p[0]), Math.min(chars.length, wEnd - p[0])).join('')));
  });
}
function save(){
  const items = {};
  D.items.forEach(function(it){ if (decisions[it.id]) items[it.id] = decisions[it.id]; });
  const blob = new Blob([JSON.stringify({decisions: 1, queue: D.queue, items: items}, null, 1) + '\n'],
                        {type: 'application/json'});
  const a = el('a', {'href': URL.createObjectURL(blob), 'download': 'decisions-' + D.queue.slice(0, 12) + '.json'});
  document.body.appendChild(a);
  a.click();
  a.remove();
}
document.getElementById('save').addEventListener('click', save);
document.addEventListener('keydown', function(ev){
  if (ev.ctrlKey || ev.metaKey || ev.altKey || !D.items.length) return;
  const it = D.items[cur], n = Array.from(it.w).length;
  if (editing){
    if (ev.key === 'ArrowLeft' || ev.key === 'ArrowRight'){
      const step = ev.key === 'ArrowLeft' ? -1 : 1;
      if (ev.shiftKey) editing.start = Math.max(it.w0, Math.min(editing.end - 1, editing.start + step));
      else editing.end = Math.min(it.w0 + n, Math.max(editing.start + 1, editing.end + step));
    } else if (ev.key === 'Enter'){ decide(it, 'edit', editing); editing = null; }
    else if (ev.key === 'Escape'){ editing = null; }
    else if (ev.key === 't'){ editing.label = D.labels[(D.labels.indexOf(editing.label) + 1) % D.labels.length]; }
    else return;
    ev.preventDefault(); render(); return;
  }
  switch (ev.key){
    case 'j': cur = Math.min(D.items.length - 1, cur + 1); break;
    case 'k': cur = Math.max(0, cur - 1); break;
    case 'a': decide(it, 'accept', {start: it.start, end: it.end, label: it.label}); cur = Math.min(D.items.length - 1, cur + 1); break;
    case 'r': decide(it, 'reject', {start: it.start, end: it.end, label: it.label}); cur = Math.min(D.items.length - 1, cur + 1); break;
    case 'e': editing = Object.assign({}, extentOf(it)); break;
    case 't': {
      const ext = Object.assign({}, extentOf(it));
      ext.label = D.labels[(D.labels.indexOf(ext.label) + 1) % D.labels.length];
      decide(it, 'edit', ext); break;
    }
    case 'u': delete decisions[it.id]; keep(); break;
    case 's': save(); break;
    default: return;
  }
  ev.preventDefault();
  render();
});
render();
})();
"""
