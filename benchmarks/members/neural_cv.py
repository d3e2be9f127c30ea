"""The neural members' settings chosen by CV on MEDDOCAN train, never by dev (issue 29).

Version 2's four neural members were published with fixed epochs chosen by
their dev F1. Each is now also run with its epochs chosen inside every
training run: early stopping on a held-out tenth of that run's own training
notes (up to 30 epochs, patience 8; ``refit=false`` keeps the best epoch's
model). Per neural member, one row per setting tried: CV folds done, CV F1
(strict, out-of-fold over the folds done), dev F1, the epochs early stopping
chose in each part, the recorded fit seconds and where the parts were
computed. A setting is kept for its CV F1 among the settings whose CV and dev
part are complete; dev never decides. Then the ensemble, method and members
both chosen by CV on train: over (a) the 12 published members, (b) the 12 with
each neural member replaced by its kept setting, (c) the 12 plus the complete
early-stopping settings and (d) the 12 plus every complete extra member (the
early-stopping settings and ``EXTRA_MEMBERS``), each of pruned voting [KIM20],
decision templates and the stacked SVM, as ``ensemble --method`` fits them
(their default grids chosen by CV over the members' out-of-fold predictions),
is scored by its own out-of-fold predictions on train (fitted on 9 of the
members' 10 patient-grouped folds, predicting the 10th); the best CV F1 over
(member set x method) is the choice, dev only scores every row.

Nothing is trained here: the early-stopping parts are read from the first
``--cache``, which ``benchmarks/members/cv_runs.py run ... --taggers
"lstm-crf-fea:refit=false,..."`` fills, each extra member's from the first
``--cache`` (or the published folder) holding most of its parts, the
fixed-epoch parts from the published folder; doc-consistency is derived from the CRF's published parts
(``common.derived_member``). A part the cache does not call valid (missing,
corrupt) counts as not done; a setting whose CV is not complete is shown with
the folds done and left out of the ensembles.

    nice -n 10 python benchmarks/members/neural_cv.py --cache WS/cached_predictions --cache WS2/cached_predictions
    # writes benchmarks/results/neural-cv-meddocan{.json,.md,-voting.md}

MEDDOCAN (CC BY 4.0): Marimon M, Gonzalez-Agirre A, Intxaurrondo A, Rodríguez
H, Lopez Martin J, Villegas M, Krallinger M. Automatic De-identification of
Medical Texts in Spanish: the MEDDOCAN Track, Corpus, Guidelines, Methods and
Evaluation of Results. IberLEF@SEPLN 2019, pp. 618-638.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common.py and the groups
from common import CV_METHODS, DERIVED, MEDDOCAN_CITATION, MEDDOCAN_PUBLISHED_MEMBERS, PUBLISHED_PREDICTIONS, RESULTS, Clock, best_by_cv, derived_member, machine_description, meddocan_cv, methods_by_cv, progress, read_member, read_published, shown, timing_phrase, where, write_member_results  # noqa: E402

STEM = RESULTS / "neural-cv-meddocan"
# Per neural member: the published fixed-epoch spec (version 2, epochs fixed by dev F1) and
# the early-stopping spec run by cv_runs.py.
SETTINGS = {name: [published, f"{name}:refit=false"]
            for published in MEDDOCAN_PUBLISHED_MEMBERS if published.startswith("lstm")
            for name in [published.partition(":")[0]]}
FOLDS = 10
# Members with their own 10-fold CV besides the 12 and the early-stopping settings (issue 29), in set (d).
EXTRA_MEMBERS = ("char-cnn", "crf-chars", "doc-consistency")


def complete(row) -> bool:
    return row["folds_done"] == FOLDS and row["dev_done"]


def kept_setting(rows):
    """The setting kept for a member: the highest CV F1 among its complete
    settings (10/10 folds and the dev part), the first listed on a tie;
    None while none is complete. Dev F1 is never read."""
    done = [r for r in rows if complete(r)]
    return max(done, key=lambda r: r["cv_f1"]) if done else None


def decide(rows) -> dict:
    """A member's settings and the one kept (its label, None while no setting is complete)."""
    kept = kept_setting(rows)
    return {"settings": rows, "kept": kept and kept["setting"]}


def candidate_sets(published, members, runs, extras=None) -> list[tuple[str, dict]]:
    """The member sets the ensembles choose from: (a) the 12 published; (b)
    the 12 with each neural member replaced by its kept setting, when one
    differs; (c) the 12 plus the complete early-stopping settings, when any;
    (d) the 12 plus those and every complete extra member, when any.
    ``runs``: label -> run of every complete setting; ``extras``: label ->
    run of every complete extra member."""
    kept = {m["settings"][0]["setting"]: m["kept"] for m in members.values()
            if m["kept"] and m["kept"] != m["settings"][0]["setting"]}
    swapped = {kept.get(label, label): runs[kept[label]] if label in kept else run for label, run in published.items()}
    extra = {r["setting"]: runs[r["setting"]] for m in members.values() for r in m["settings"]
             if r["source"] == "workspace" and r["setting"] in runs}
    sets = [("(a) 12 published", published)]
    if set(swapped) != set(published):
        sets.append(("(b) 12, neural members by CV-kept setting", swapped))
    if extra:
        sets.append((f"(c) 12 + {', '.join(extra)}", {**published, **extra}))
    if extras:
        everyone = {**extra, **extras}
        sets.append((f"(d) 12 + {', '.join(everyone)}", {**published, **everyone}))
    return sets


def epochs_of(records) -> list[dict]:
    """Per part, the epochs early stopping chose (none for a fixed schedule)."""
    out = []
    for r in sorted(records, key=lambda r: (r.get("fold") is None, r.get("fold") or 0)):
        choice = r.get("training_choices") or {}
        out.append({"part": "dev" if r.get("fold") is None else f"fold-{r['fold']:02d}",
                    **{k: choice.get(k) for k in ("chosen_epoch", "epochs_run", "stopped_early")},
                    "fit_seconds": r.get("fit_seconds")})
    return out


def setting_row(engine, spec, source, train, dev_docs, strict_prf) -> tuple[dict, dict, dict | None]:
    oof, dev, folds, records = read_member(engine, spec)
    done = [d for d in train if d.id in oof]
    row = {"setting": spec.label, "source": source, "folds_done": len(folds), "dev_done": dev is not None,
           "cv_f1": round(strict_prf(done, oof)[2], 4) if oof else None, "cv_documents": len(done),
           "dev_f1": round(strict_prf(dev_docs, dev)[2], 4) if dev is not None else None,
           "fit_seconds": round(sum(r.get("fit_seconds", 0.0) for r in records), 1),
           "parts": epochs_of(records), "where": where(records)}
    return row, oof, dev


def read_extra(engines, spec, published, docs_by_id, strict_prf, train, dev_docs):
    """An extra member's row and run (None unless 10 folds and dev are
    complete): from the first cache holding all its parts, or derived."""
    best = None
    for i, engine in enumerate(engines, 1):
        oof, dev, folds, records = read_member(engine, spec)
        if best is None or len(folds) + (dev is not None) > len(best[2]) + (best[1] is not None):
            in_workspace = any((engine.cache.root / t.part.relpath).with_suffix(".json").exists()
                               for t in engine.parts(spec))
            best = (oof, dev, folds, records, f"--cache {i}" if in_workspace else "the published folder")
    oof, dev, folds, records, cache = best
    row = {"member": spec.label, "cache": cache, "where": where(records)}
    if spec.label in DERIVED:
        oof, dev, checked = derived_member(spec.label, oof, dev, published, docs_by_id)
        folds, row["cache"] = list(range(FOLDS)), f"derived from {DERIVED[spec.label]}'s published parts, equal to the {checked} notes `cv` computed"
    row.update(folds_done=len(folds), dev_done=dev is not None,
               cv_f1=round(strict_prf(train, oof)[2], 4) if len(folds) == FOLDS else None,
               dev_f1=round(strict_prf(dev_docs, dev)[2], 4) if dev is not None else None)
    return row, (SimpleNamespace(oof=oof, test=dev) if complete(row) else None)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cache", action="append",
                    help="a workspace cache holding early-stopping or extra members' parts (read only; repeatable, "
                         "the first is searched first; default: the repository's)")
    args = ap.parse_args(argv)
    caches = [Path(c) for c in (args.cache or [PUBLISHED_PREDICTIONS])]
    engine, train, dev_docs, members, extra_rows, variants, crf_cv = member_sets(caches)
    clock = Clock().start()
    ensembles = methods_by_cv(train, dev_docs, engine.folds, variants)
    clock.stop()
    choice = best_by_cv(ensembles)
    result = {"citation": MEDDOCAN_CITATION, "caches": [shown(c) for c in caches], "members": members,
              "extra_members": extra_rows, "crf_cv_f1": crf_cv, "methods": list(CV_METHODS), "ensembles": ensembles,
              "chosen": choice and {k: choice[k] for k in ("members", "method", "cv_f1", "dev_f1")},
              "ensembles_timing": {"wall_s": round(clock.wall, 1), "cpu_s": round(clock.cpu, 1),
                                   "load_before": clock.load_before, "load_after": clock.load_after,
                                   "nice": os.nice(0)},
              "machine": machine_description()}
    write_member_results(STEM, result, tables)
    return 0


def member_sets(caches: list[Path]):
    """Everything the ensembles choose from, read from the caches (nothing
    trained): (engine, train, dev, per neural member its settings and the one
    kept, the extra members' rows, the member sets (a)-(d) as ``(label,
    runs)``, the published crf's CV F1)."""
    from ensemble_deid.experiment.cv import TaggerSpec
    from ensemble_deid.studies.summary import strict_prf

    engine, train, dev_docs = meddocan_cv(caches[0])
    engines = [engine] + [meddocan_cv(c, docs=(train, dev_docs))[0] for c in caches[1:]]
    published = read_published(engine)
    members, runs = {}, {}
    for name, specs in SETTINGS.items():
        rows = []
        for text, source in zip(specs, ("published", "workspace")):
            spec = TaggerSpec.parse(text)
            row, oof, dev = setting_row(engine, spec, source, train, dev_docs, strict_prf)
            rows.append(row)
            if complete(row):
                runs[spec.label] = SimpleNamespace(oof=oof, test=dev)
            progress(f"{spec.label}: {row['folds_done']}/{FOLDS} folds, dev {'done' if row['dev_done'] else 'not done'}")
        members[name] = decide(rows)
    crf_cv = round(strict_prf(train, published["crf"].oof)[2], 4)
    docs_by_id = {d.id: d for d in (*train, *dev_docs)}
    extra_rows, extras = [], {}
    for name in EXTRA_MEMBERS:
        row, run = read_extra(engines, TaggerSpec.parse(name), published, docs_by_id, strict_prf, train, dev_docs)
        extra_rows.append(row)
        if run is not None:
            extras[row["member"]] = run
        progress(f"{name}: {row['folds_done']}/{FOLDS} folds, dev {'done' if row['dev_done'] else 'not done'}")

    return engine, train, dev_docs, members, extra_rows, candidate_sets(published, members, runs, extras), crf_cv


def _fmt(value) -> str:
    return "-" if value is None else (f"{value:.4f}" if isinstance(value, float) else str(value))


def _epochs(parts) -> str:
    chosen = [p for p in parts if p["chosen_epoch"] is not None]
    if not chosen:
        return "fixed" if parts else "-"
    early = sum(bool(p["stopped_early"]) for p in chosen)
    return (", ".join(f"{p['part'].replace('fold-0', 'f').replace('fold-', 'f')} {p['chosen_epoch']}/{p['epochs_run']}"
                      for p in chosen) + f" (stopped early {early}/{len(chosen)})")


def verdict(row, kept) -> str:
    if not complete(row):
        return f"not eligible: CV {row['folds_done']}/{FOLDS}, dev {'done' if row['dev_done'] else 'not done'}"
    return "kept" if row["setting"] == kept else "not kept"


def tables(result) -> tuple[str, str]:
    lines = ["| member | setting | CV folds done | CV F1 (train, out-of-fold) | dev F1 | epochs chosen / run per part "
             "| computed | kept (by CV F1) |",
             "|---|---|---:|---:|---:|---|---|---|"]
    crf = result["crf_cv_f1"]
    verdicts = []
    for name, member in result["members"].items():
        for row in member["settings"]:
            place = "; ".join(f"{k} ({n})" for k, n in row["where"].items()) or "-"
            lines.append(f"| {name} | {row['setting']} | {row['folds_done']}/{FOLDS} ({row['cv_documents']} notes)"
                         f"{'' if row['dev_done'] else ', dev not done'} "
                         f"| {_fmt(row['cv_f1'])} | {_fmt(row['dev_f1'])} | {_epochs(row['parts'])} "
                         f"| {place} | {verdict(row, member['kept'])} |")
        kept = next((r for r in member["settings"] if r["setting"] == member["kept"]), None)
        verdicts.append(f"{name}: {'no setting complete' if kept is None else kept['setting']}"
                        + ("" if kept is None else f" {kept['cv_f1']:.4f} {'>=' if kept['cv_f1'] >= crf else '<'} crf"))
    out = "\n".join(lines) + "\n\n"
    out += (f"The published crf's CV F1 (train, out-of-fold): {crf:.4f}. Kept settings against it: "
            + "; ".join(verdicts) + ". A setting is kept for the highest CV F1 among the settings whose 10 folds and "
            "dev part are all in the cache; dev F1 is reported, never used to choose. Epochs: chosen epoch / epochs "
            "run in each part (f0-f9 the folds, dev the part trained on train and scored on dev); fixed: "
            "version 2's schedule. CV F1 of an unfinished CV is over the notes of the folds done. Early-stopping parts "
            "read from the workspace caches given by --cache (their paths in the JSON).\n\n")
    # Wall seconds only, on different machines (the computed column), without CPU time or load:
    # kept out of the table, which would read as a timing (docs rule, issue 34 item 4).
    out += ("Fit seconds recorded, summed over the parts done (wall time as each part's record holds it, no CPU "
            "time or load; parts computed on different machines, see the computed column): "
            + "; ".join(f"{row['setting']} {row['fit_seconds']:.0f} s ({row['folds_done'] + row['dev_done']} parts)"
                        for member in result["members"].values() for row in member["settings"]) + ".\n")
    tail = f"\n{result['citation']}. Written by `benchmarks/members/neural_cv.py`.\n"
    chosen = best_by_cv(result["ensembles"])
    table = ("| member set | method | chosen on train (parameters) | CV F1 (train, out-of-fold of the ensemble itself) "
             "| dev F1 | choice (best CV F1) |\n|---|---|---|---:|---:|---|\n")
    for e in result["ensembles"]:
        table += (f"| {e['members']} ({e['candidates']}) | {e['method']} | {_chosen(e)} | {e['cv_f1']:.4f} "
                  f"| {e['dev_f1']:.4f} | {'chosen' if e is chosen else ''} |\n")
    extras = "; ".join(f"{r['member']} CV {_fmt(r['cv_f1'])} / dev {_fmt(r['dev_f1'])} ({r['folds_done']}/{FOLDS} folds, "
                       f"{r['cache']})" for r in result.get("extra_members", []))
    table += ("\nEach method as `ensemble --method` fits it: its default grid chosen by 10-fold CV over the members' "
              "out-of-fold predictions on train, the chosen setting then fitted on 9 of the members' 10 "
              "patient-grouped folds to predict the 10th (CV F1) and on all of train to predict dev (dev F1). "
              "The (member set x method) with the best CV F1 is the choice; dev never decides. "
              f"Extra members in (d): {extras or 'none complete'}.")
    if result.get("ensembles_timing"):
        timing = {**result["ensembles_timing"], "machine": result.get("machine") or {}}  # cores and date from it
        table += f" The ensembles' fits and predictions took {timing_phrase(timing)}."
    return out + tail, table + "\n" + tail


def _chosen(e) -> str:
    """What the search chose, short: pruned voting's threshold and kept members, else the parameters."""
    if e["kept"] is not None:
        return f"t = {e['threshold']}, {len(e['kept'])} of {e['candidates']} kept" + (
            f", trust {e['trust']}" if e.get("trust") is not None else "")
    return ", ".join(f"{k} = {v}" for k, v in e["params"].items()) or "defaults"


if __name__ == "__main__":
    raise SystemExit(main())
