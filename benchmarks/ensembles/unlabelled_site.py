"""A new site without annotations (issue 50): members trained on a source
corpus, ensembles on the target's notes, with and without the target's labels.

For each pair SOURCE:TARGET (both registered or embedded corpora of the
workspace, the members' parts computed by ``cv --corpus SOURCE --target TARGET``
and, for the reference trained on the target, ``cv --corpus TARGET``), on
TARGET's test split:

- each member trained on SOURCE, and majority vote over them;
- the source-trained ensembles (voting-pruned, decision-templates, stacked-svm),
  each chosen by CV on SOURCE's training set; the one with the best CV F1 is
  "the source-trained ensemble";
- ``dawid-skene``: fitted on SOURCE's out-of-fold predictions (prior_strength
  chosen by CV on SOURCE), re-estimated by EM on the members' predictions on
  TARGET's test notes, without their labels;
- with ``--skweak``, skweak's HMM (Lison et al. 2020) over the same members'
  spans on TARGET's test notes, fitted there without labels (skweak is no
  dependency of the project: where it does not import, the result says why);
- the reference trained on the target's own labels: the same ensembles over
  members cross-validated on TARGET's training set, chosen by CV there; with
  ``--own-labels test`` (a target that is only its test notes, like a shifted
  copy of MEDDOCAN dev), members and ensembles cross-validated on TARGET's
  test notes themselves (grouped by patient; ``cv`` of the members there: see
  ``--own-labels``), scored by the chosen ensemble's out-of-fold predictions.

TARGET's labels are used only to score. "Gap closed" is (adapted - source) /
(target-trained - source) in strict F1.

``--shift-study`` (TARGET's test split a shifted copy of SOURCE's, ``corpus
shift``): every member and ensemble also runs on SOURCE's test notes as they
are, and the study reports each one's degradation (strict F1 and token leak,
original -> shifted), and for each ensemble against each member whether it
degrades less, by approximate randomization of drop(ensemble) - drop(member)
over the documents (``significance.paired_degradation``, Holm over the
members); the plot goes to docs/img/shift-degradation-TARGET.png.

Writes benchmarks/results/STEM.{json,md} (default stem unlabelled-site).

    python benchmarks/ensembles/unlabelled_site.py --workspace WS --pair synthetic-2014:synthetic-2016 \
        --pair synthetic-2016:synthetic-2014 --members crf,memm,searn,mira,svm,ogd,struct-svm,rules
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Mapping, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common.py and the groups
from common import RESULTS, ROOT, best_by_cv, git_revision, machine_description, methods_by_cv, progress, write_json, write_markdown  # noqa: E402

SOURCE_METHODS = ("voting-pruned", "decision-templates", "stacked-svm")
ADAPTED = "dawid-skene"
SKWEAK = "skweak HMM"
IMG = ROOT / "docs" / "img"
TRIALS = 10_000  # randomization trials of each degradation test


def _runs(engine, specs, target: str):
    """{member: runs with .oof and .test (the predictions on ``target``)}; refuses to compute."""
    pending = engine.pending(specs)
    if pending:
        raise SystemExit(f"unlabelled_site: {len(pending)} member part(s) are not cached; run "
                         f"'ensemble-deid cv' with these members first (see the module docstring)")
    runs = engine.collect(specs)
    # original: the predictions on the source's own test notes (the shift study's other version)
    return {label: SimpleNamespace(oof=run.oof, test=run.targets[target], original=run.targets.get("test"))
            for label, run in runs.items()}


def _scores(docs, preds) -> dict:
    from ensemble_deid.studies.leaks import leak_rates
    from ensemble_deid.studies.summary import strict_prf

    p, r, f = strict_prf(docs, preds)
    leak = leak_rates(docs, preds)["all"]
    return {"precision": round(p, 4), "recall": round(r, 4), "f1": round(f, 4), "token_leak": round(leak.rate, 4)}


def _fitted(method, params, train, oof, test_preds, test, folds):
    from ensemble_deid.ensemble.run import make_search

    learner = make_search(method, params=params, folds=folds.k, seed=folds.seed, n_members=len(oof))
    learner.fit(oof, train)
    preds = {p.doc_id: p for p in learner.predict(test_preds, test)}
    return learner, preds


def _skweak_hmm(documents, members: dict):
    """skweak's HMM over the members' spans (doc id -> prediction, per member)
    on ``documents``, fitted there without labels: (doc id -> prediction, None),
    or (None, why) where skweak does not import."""
    try:
        import spacy
        from skweak.generative import HMM
        from spacy.tokens import Doc, Span
    except ImportError as exc:  # an optional reference, no dependency of the project
        return None, f"skweak does not import here ({exc.__class__.__name__}: {exc})"
    from ensemble_deid.taggers.prediction import DocumentPrediction

    vocab = spacy.blank("xx").vocab
    labels, docs = set(), []
    for d in documents:
        doc = Doc(vocab, words=[w or "_" for w in d.tokens.words])
        for name, preds in members.items():
            spans = _token_spans(preds[d.id].tags)
            labels.update(label for label, _, _ in spans)
            doc.spans[name] = [Span(doc, start, end, label=label) for label, start, end in spans]
        docs.append(doc)
    hmm = HMM(SKWEAK, sorted(labels))
    hmm.fit(docs)
    out = {}
    for d, doc in zip(documents, docs):
        tags = ["O"] * len(d.tokens)
        for span in hmm(doc).spans[SKWEAK]:
            tags[span.start:span.end] = [f"B-{span.label_}"] + [f"I-{span.label_}"] * (span.end - span.start - 1)
        out[d.id] = DocumentPrediction(d.id, tuple(tags))
    return out, None


def _token_spans(tags) -> list[tuple[str, int, int]]:
    """(label, first token, stop token) of each span of BIO tags, repaired as
    ``corpus.bio.decode`` repairs them (an I- after O or another label opens one)."""
    spans, current, begin = [], None, 0
    for i, tag in enumerate(list(tags) + ["O"]):
        label = None if tag == "O" else tag[2:]
        if current is not None and (label != current or tag.startswith("B-")):
            spans.append((current, begin, i))
            current = None
        if label is not None and current is None:
            current, begin = label, i
    return spans


def _target_trained(cache, specs, tgt, own_labels: str, folds_k: int):
    """The best ensemble (by CV) trained on the target's own labels and its
    predictions on the target's test notes, or None where the members' parts
    are not cached. ``own_labels``: "train" (CV on the target's training set,
    scored on its test split) or "test" (members and ensembles
    cross-validated on the test notes themselves, scored out of fold)."""
    from ensemble_deid.experiment.cv import CrossValidation

    notes = tgt.train if own_labels == "train" else tgt.test
    own = CrossValidation(notes, {"test": tgt.test} if own_labels == "train" else {}, cache, k=folds_k, seed=0)
    if own.pending(specs):
        return None
    if own_labels == "train":
        runs = _runs(own, specs, "test")
    else:
        runs = {label: SimpleNamespace(oof=run.oof, test=run.oof) for label, run in own.collect(specs).items()}
    rows = methods_by_cv(notes, tgt.test, own.folds, [("target", runs)], SOURCE_METHODS, keep_predictions=True)
    best = best_by_cv(rows)
    return best, best["dev_predictions" if own_labels == "train" else "oof_predictions"]


def _document_counts(docs, preds):
    from ensemble_deid.evaluation import Scorer
    from ensemble_deid.studies.summary import prediction_spans

    return Scorer(docs, criterion="strict").counts(prediction_spans(docs, preds))


def shift_study(original_docs, shifted_docs, systems: dict, members: list[str], trials: int = TRIALS) -> dict:
    """Each system's degradation from ``original_docs`` to ``shifted_docs``
    (the same notes, shifted), and each ensemble's drop against each member's
    with its p-value (Holm over the members). ``systems``: name -> (kind,
    predictions on the original, predictions on the shifted copy)."""
    from ensemble_deid.studies.significance import PairedCounts, holm, paired_degradation

    by_id = {d.id: d for d in shifted_docs}
    shifted_docs = [by_id[d.id] for d in original_docs]  # one order: the tests pair documents by position
    rows, counts = [], {}
    for name, (kind, orig, shifted) in systems.items():
        o, s = _scores(original_docs, orig), _scores(shifted_docs, shifted)
        rows.append({"system": name, "kind": kind, "f1_original": o["f1"], "f1_shifted": s["f1"],
                     "f1_drop": round(o["f1"] - s["f1"], 4), "leak_original": o["token_leak"],
                     "leak_shifted": s["token_leak"], "leak_rise": round(s["token_leak"] - o["token_leak"], 4)})
        counts[name] = (_document_counts(original_docs, orig), _document_counts(shifted_docs, shifted))
    tests = []
    for name, (kind, _, _) in systems.items():
        if kind == "member":
            continue
        progress(f"  shift study: {name}'s drop against each member's ({trials} randomization trials)")
        results = [paired_degradation(PairedCounts.from_document_counts(counts[name][0], counts[m][0]),
                                      PairedCounts.from_document_counts(counts[name][1], counts[m][1]), trials=trials)
                   for m in members]
        for m, res, p in zip(members, results, holm([r.p_value for r in results])):
            tests.append({"ensemble": name, "member": m, "drop_difference": round(res.statistic, 4),
                          "p_value": round(res.p_value, 4), "p_holm": round(p, 4)})
    return {"documents": len(original_docs), "trials": trials, "rows": rows, "tests": tests}


def run_pair(workspace, source: str, target: str, members: str, folds_k: int, own_labels: str = "train",
             skweak: bool = False, shift: bool = False, own_members: str | None = None) -> dict:
    from ensemble_deid.experiment.cache import PredictionCache
    from ensemble_deid.experiment.cv import CrossValidation, TaggerSpec

    specs = [TaggerSpec.parse(s) for s in _split(members)]
    src, tgt = workspace.load(source), workspace.load(target)
    cache = PredictionCache(workspace.cache_dir)
    engine = CrossValidation(src.train, {"test": src.test, "target": tgt.test}, cache, k=folds_k, seed=0)
    runs = _runs(engine, specs, "target")
    test = tgt.test
    out = {"source": source, "target": target, "members": list(runs), "folds": folds_k,
           "target_documents": len(test), "rows": []}

    def row(kind, name, preds, **extra):
        scored = _scores(test, preds)
        out["rows"].append({"kind": kind, "system": name, **scored, **extra})
        progress(f"  {source} -> {target}: {name}: strict F1 {scored['f1']}, token leak {scored['token_leak']}")

    for name, run in runs.items():
        row("member (source)", name, run.test)
    oof = {n: r.oof for n, r in runs.items()}
    on_target = {n: r.test for n, r in runs.items()}
    majority = math.ceil(len(runs) / 2)
    majority_vote, preds = _fitted("voting", {"threshold": majority}, src.train, oof, on_target, test, engine.folds)
    row("reference", f"majority vote (t = {majority})", preds)
    if skweak:
        progress(f"{source} -> {target}: {SKWEAK} on the members' spans on {target}, without labels")
        preds, why = _skweak_hmm(test, on_target)
        if preds is None:
            out["skweak"] = why
        else:
            from importlib.metadata import version

            out["skweak"] = f"skweak {version('skweak')}, hmmlearn {version('hmmlearn')}"
            row("reference", SKWEAK, preds)

    progress(f"{source} -> {target}: source-trained ensembles, chosen by CV on {source}")
    chosen = methods_by_cv(src.train, test, engine.folds, [("source", runs)], SOURCE_METHODS, keep_predictions=True)
    best = best_by_cv(chosen)
    for r in chosen:
        row("source-trained", r["method"], r["dev_predictions"], cv_f1=r["cv_f1"], chosen=r is best,
            params=r["params"])

    progress(f"{source} -> {target}: {ADAPTED}, prior strength by CV on {source}, EM on {target} without labels")
    learner, preds_adapted = _fitted(ADAPTED, None, src.train, oof, on_target, test, engine.folds)
    row("adapted (no target labels)", ADAPTED, preds_adapted, params=dict(learner.best_params_))
    _, fixed = _fitted(ADAPTED, {"adapt": False}, src.train, oof, on_target, test, engine.folds)
    row("reference", f"{ADAPTED}, not adapted", fixed)

    out["own_labels"] = own_labels
    own_specs = [TaggerSpec.parse(s) for s in _split(own_members)] if own_members else specs
    out["own_members"] = [s.label for s in own_specs]
    own = _target_trained(cache, own_specs, tgt, own_labels, folds_k)
    if own is None:
        out["target_trained"] = None
        progress(f"{target}: members not cross-validated on its own {own_labels} notes: no target-trained reference")
    else:
        subset = f" over {len(own_specs)} of the {len(specs)} members" if len(own_specs) < len(specs) else ""
        row("target-trained (reference)", own[0]["method"] + subset, own[1], cv_f1=own[0]["cv_f1"])
    rows = {r["kind"]: r for r in out["rows"] if r.get("chosen", True)}
    src_f1 = next(r["f1"] for r in out["rows"] if r.get("chosen"))
    ada_f1 = rows["adapted (no target labels)"]["f1"]
    ref = rows.get("target-trained (reference)")
    out["gap_closed"] = round((ada_f1 - src_f1) / (ref["f1"] - src_f1), 3) if ref and ref["f1"] != src_f1 else None
    if shift:
        if {d.id for d in src.test} != {d.id for d in test}:
            raise SystemExit(f"unlabelled_site: --shift-study needs {target}'s test split to be a shifted copy of "
                             f"{source}'s (the same document ids)")
        progress(f"{source} -> {target}: shift study, every system on {source}'s test notes as they are")
        originals = {n: r.original for n, r in runs.items()}
        systems = {n: ("member", r.original, r.test) for n, r in runs.items()}
        systems[f"majority vote (t = {majority})"] = (
            "ensemble", _predicted(majority_vote, originals, src.test), _predicted(majority_vote, on_target, test))
        for r in chosen:
            systems[r["method"]] = ("ensemble", _predicted(r["learner"], originals, src.test), r["dev_predictions"])
        systems[ADAPTED] = ("ensemble", _predicted(learner, originals, src.test), preds_adapted)
        out["shift"] = shift_study(src.test, test, systems, list(runs))
    for r in chosen:  # fitted models and predictions are no JSON
        for key in ("dev_predictions", "oof_predictions", "learner"):
            r.pop(key, None)
    return out


def _predicted(learner, members, documents) -> dict:
    """doc id -> prediction; a dawid-skene learner re-estimates on ``documents`` (one site's notes)."""
    return {p.doc_id: p for p in learner.predict(members, documents)}


def _split(members: str) -> list[str]:
    from ensemble_deid.ensemble.run import parse_members

    specs, _, _ = parse_members(members)
    return [s.label for s in specs]


def markdown(result: dict) -> str:
    lines = [f"Commit {result['commit']}; command: `{result['command']}`.", ""]
    for pair in result["pairs"]:
        lines += [f"### {pair['source']} -> {pair['target']} ({pair['target_documents']} target notes)", "",
                  "| system | trained on | strict P | strict R | strict F1 | token leak | CV F1 (where chosen) |",
                  "|---|---|---:|---:|---:|---:|---:|"]
        for r in pair["rows"]:
            mark = " (chosen by CV)" if r.get("chosen") else ""
            cv = f"{r['cv_f1']:.4f}" if r.get("cv_f1") is not None else ""
            lines.append(f"| {r['system']}{mark} | {r['kind']} | {r['precision']:.4f} | {r['recall']:.4f} | "
                         f"{r['f1']:.4f} | {r['token_leak']:.4f} | {cv} |")
        gap = pair.get("gap_closed")
        lines += ["", f"Gap closed by {ADAPTED} without target labels: "
                  f"{'n/a (no target-trained reference)' if gap is None else f'{gap:.0%}'}."
                  + (f" Target-trained reference: {_OWN[pair.get('own_labels', 'train')]}"
                     + (f" (members: {', '.join(pair['own_members'])})" if pair.get("own_members") != pair["members"]
                        else "") + "." if pair.get("target_trained", 1) else "")
                  + (f" {SKWEAK}: {pair['skweak']}." if pair.get("skweak") else ""), ""]
        if pair.get("shift"):
            lines += shift_markdown(pair)
    return "\n".join(lines)


_OWN = {"train": "the ensembles over members cross-validated on the target's training set, scored on its test notes",
        "test": "members and ensembles 10-fold cross-validated on the target's test notes themselves (grouped by "
                "patient), scored by the chosen ensemble's out-of-fold predictions"}


def shift_markdown(pair: dict) -> list[str]:
    study = pair["shift"]
    lines = [f"#### Shift study: {pair['source']} test as it is -> {pair['target']} ({study['documents']} notes)", "",
             "| system | kind | strict F1 original | strict F1 shifted | F1 drop | token leak original | "
             "token leak shifted | leak rise |", "|---|---|---:|---:|---:|---:|---:|---:|"]
    for r in study["rows"]:
        lines.append(f"| {r['system']} | {r['kind']} | {r['f1_original']:.4f} | {r['f1_shifted']:.4f} | "
                     f"{r['f1_drop']:.4f} | {r['leak_original']:.4f} | {r['leak_shifted']:.4f} | {r['leak_rise']:.4f} |")
    members = list(dict.fromkeys(t["member"] for t in study["tests"]))
    ensembles = list(dict.fromkeys(t["ensemble"] for t in study["tests"]))
    cell = {(t["ensemble"], t["member"]): t for t in study["tests"]}
    lines += ["", "Do ensembles degrade less than their members? drop(ensemble) - drop(member) in strict F1 "
              "(negative: the ensemble loses less); * where the approximate randomization test "
              f"({study['trials']} trials, documents swapped) rejects equal drops at 5% after Holm's correction over "
              "the members.", "",
              "| ensemble | " + " | ".join(members) + " | significantly less / more |",
              "|---|" + "---:|" * len(members) + "---|"]
    for e in ensembles:
        tests = [cell[(e, m)] for m in members]
        less = sum(t["p_holm"] < 0.05 and t["drop_difference"] < 0 for t in tests)
        more = sum(t["p_holm"] < 0.05 and t["drop_difference"] > 0 for t in tests)
        lines.append(f"| {e} | " + " | ".join(f"{t['drop_difference']:+.4f}{'*' if t['p_holm'] < 0.05 else ''}"
                                               for t in tests) + f" | {less} / {more} of {len(members)} |")
    return lines + [""]


def degradation(rows: Sequence[Mapping], path: str | Path, title: str = "") -> Path:
    """``rows``: {"system", "kind" ("member" or "ensemble"), "f1_original",
    "f1_shifted", "leak_original", "leak_shifted"}; two panels (strict F1,
    token leak), one line per system, ensembles first, each group sorted by
    its F1 on the shifted copy."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    order = sorted(rows, key=lambda r: (r["kind"] != "ensemble", -r["f1_shifted"]))
    fig, axes = plt.subplots(1, 2, figsize=(10, 0.32 * len(order) + 1.6), sharey=True)
    y = np.arange(len(order))[::-1]
    colours = {"ensemble": "tab:blue", "member": "grey"}
    for ax, (key, label) in zip(axes, (("f1", "strict F1 (%)"), ("leak", "token leak (% of PHI tokens uncovered)"))):
        for yi, r in zip(y, order):
            a, b = 100 * r[f"{key}_original"], 100 * r[f"{key}_shifted"]
            c = colours.get(r["kind"], "black")
            ax.annotate("", xy=(b, yi), xytext=(a, yi), arrowprops={"arrowstyle": "->", "color": c, "lw": 1.2})
            ax.plot([a], [yi], "o", color=c, ms=4, mfc="white")
            ax.plot([b], [yi], "o", color=c, ms=4)
        values = [100 * r[f"{key}_{v}"] for r in order for v in ("original", "shifted")]
        pad = 0.05 * (max(values) - min(values) or 1)
        ax.set_xlim(min(values) - pad, max(values) + pad)
        ax.set_xlabel(label)
        ax.grid(axis="x", alpha=0.3)
    axes[0].set_yticks(y)
    axes[0].set_yticklabels([r["system"] for r in order], fontsize=8)
    for tick, r in zip(axes[0].get_yticklabels(), order):
        tick.set_color(colours.get(r["kind"], "black"))
    axes[1].plot([], [], "o", color="grey", mfc="white", label="original notes")
    axes[1].plot([], [], "o", color="grey", label="shifted copy")
    axes[1].legend(fontsize=7, loc="upper right")  # the leak panel's upper right: ensembles leak least
    fig.suptitle(title or "degradation under shift (blue: ensembles, grey: members)", fontsize=10)
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot(result: dict) -> list[Path]:
    return [degradation(pair["shift"]["rows"], IMG / f"shift-degradation-{pair['target']}.png",
                        title=f"{pair['source']} members and ensembles: {pair['source']} test as it is -> "
                              f"{pair['target']} ({pair['shift']['documents']} notes)")
            for pair in result["pairs"] if pair.get("shift")]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workspace", required=True)
    parser.add_argument("--pair", action="append", required=True, metavar="SOURCE:TARGET")
    parser.add_argument("--members", required=True)
    parser.add_argument("--folds", type=int, default=10)
    parser.add_argument("--stem", default="unlabelled-site")
    parser.add_argument("--own-labels", choices=("train", "test"), default="train",
                        help="where the target-trained reference learns the target's labels: its training set, or "
                             "its test notes themselves by CV (the members' out-of-fold parts there come from "
                             "CrossValidation(target.test, {}) with the same folds and seed)")
    parser.add_argument("--own-members", help="the members of the target-trained reference, where fewer than "
                                                "--members were cross-validated on the target (default: --members)")
    parser.add_argument("--skweak", action="store_true", help="also run skweak's HMM over the members (if it imports)")
    parser.add_argument("--shift-study", action="store_true",
                        help="each TARGET is a shifted copy of SOURCE: report every system's degradation")
    parser.add_argument("--tables", action="store_true",
                        help="rewrite the tables and plots from benchmarks/results/STEM.json, computing nothing")
    args = parser.parse_args(argv)
    if args.tables:
        result = json.loads((RESULTS / f"{args.stem}.json").read_text())
    else:
        from ensemble_deid.corpus.workspace import Workspace

        ws = Workspace(args.workspace)
        pairs = []
        for pair in args.pair:
            source, sep, target = pair.partition(":")
            if not sep:
                parser.error(f"--pair {pair!r}: expected SOURCE:TARGET")
            pairs.append(run_pair(ws, source, target, args.members, args.folds, own_labels=args.own_labels,
                                  skweak=args.skweak, shift=args.shift_study, own_members=args.own_members))
        command = "python benchmarks/ensembles/unlabelled_site.py " + " ".join(sys.argv[1:] if argv is None else argv)
        result = {"commit": git_revision().get("commit"), "command": command, "machine": machine_description(),
                  "pairs": pairs}
        write_json(RESULTS / f"{args.stem}.json", result)
    write_markdown(RESULTS / f"{args.stem}.md", markdown(result))
    for path in plot(result):
        progress(f"wrote {path.relative_to(ROOT)}")
    print(markdown(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
