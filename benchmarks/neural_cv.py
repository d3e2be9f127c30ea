"""The neural members' settings chosen by CV on MEDDOCAN train, never by dev (issue 29).

Version 2's four neural members were published with fixed epochs chosen by
their dev F1. Each is now also run with its epochs chosen inside every
training run: early stopping on a held-out tenth of that run's own training
notes (up to 30 epochs, patience 8; ``refit=false`` keeps the best epoch's
model). Per neural member, one row per setting tried: CV folds done, CV F1
(strict, out-of-fold over the folds done), dev F1, the epochs early stopping
chose in each part, the recorded fit seconds and where the parts were
computed. A setting is kept for its CV F1 among the settings whose CV and dev
part are complete; dev never decides. Then pruned voting [KIM20] chosen by CV
on train (threshold and members by greedy elimination on the out-of-fold
predictions) over the 12 published members, over the 12 with each neural
member replaced by its kept setting, and over the 12 plus the complete
early-stopping settings; the best CV F1 is the choice, dev only scores it.

Nothing is trained here: the early-stopping parts are read from the workspace
cache that ``benchmarks/cv_runs.py run ... --taggers "lstm-crf-fea:refit=false,..."``
fills, the fixed-epoch parts from the published folder. A part the cache does
not call valid (missing, corrupt) counts as not done; a setting whose CV is
not complete is shown with the folds done and left out of the ensembles.

    nice python benchmarks/neural_cv.py --cache WS/cached_predictions   # writes benchmarks/results/neural-cv-meddocan{.json,.md,-voting.md}

MEDDOCAN (CC BY 4.0): Marimon M, Gonzalez-Agirre A, Intxaurrondo A, Rodríguez
H, Lopez Martin J, Villegas M, Krallinger M. Automatic De-identification of
Medical Texts in Spanish: the MEDDOCAN Track, Corpus, Guidelines, Methods and
Evaluation of Results. IberLEF@SEPLN 2019, pp. 618-638.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import MEDDOCAN_CITATION, MEDDOCAN_PUBLISHED_MEMBERS, PUBLISHED_PREDICTIONS, RESULTS, machine_description, meddocan_cv, progress, pruned_voting, read_member, read_published, shown, where, write_member_results  # noqa: E402

STEM = RESULTS / "neural-cv-meddocan"
# Per neural member: the published fixed-epoch spec (version 2, epochs fixed by dev F1) and
# the early-stopping spec run by cv_runs.py.
SETTINGS = {name: [published, f"{name}:refit=false"]
            for published in MEDDOCAN_PUBLISHED_MEMBERS if published.startswith("lstm")
            for name in [published.partition(":")[0]]}
FOLDS = 10


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


def candidate_sets(published, members, runs) -> list[tuple[str, dict]]:
    """The member sets pruned voting chooses from: (a) the 12 published; (b)
    the 12 with each neural member replaced by its kept setting, when one
    differs; (c) the 12 plus the complete early-stopping settings, when any.
    ``runs``: label -> run of every complete setting."""
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
    return sets


def best_ensemble(ensembles):
    """The pruned voting with the highest CV F1 on train (the first on a tie); dev only scores it."""
    return max(ensembles, key=lambda e: e["cv_f1"]) if ensembles else None


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


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cache", default=str(PUBLISHED_PREDICTIONS),
                    help="the workspace cache holding the early-stopping parts (read only; default: the repository's)")
    args = ap.parse_args(argv)
    from ensemble_deid.experiment.cv import TaggerSpec
    from ensemble_deid.studies.summary import strict_prf

    engine, train, dev_docs = meddocan_cv(args.cache)
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

    variants = candidate_sets(published, members, runs)
    ensembles = pruned_voting(train, dev_docs, variants)
    choice = best_ensemble(ensembles)
    result = {"citation": MEDDOCAN_CITATION, "cache": shown(Path(args.cache)), "members": members,
              "crf_cv_f1": crf_cv, "pruned_voting": ensembles, "chosen": choice and choice["members"],
              "machine": machine_description()}
    write_member_results(STEM, result, tables)
    return 0


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
    chosen = best_ensemble(result["pruned_voting"])
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
            "read from the workspace cache given by --cache (its path in the JSON).\n\n")
    # Wall seconds only, on different machines (the computed column), without CPU time or load:
    # kept out of the table, which would read as a timing (docs rule, issue 34 item 4).
    out += ("Fit seconds recorded, summed over the parts done (wall time as each part's record holds it, no CPU "
            "time or load; parts computed on different machines, see the computed column): "
            + "; ".join(f"{row['setting']} {row['fit_seconds']:.0f} s ({row['folds_done'] + row['dev_done']} parts)"
                        for member in result["members"].values() for row in member["settings"]) + ".\n")
    tail = f"\n{result['citation']}. Written by `benchmarks/neural_cv.py`.\n"
    voting = ("| pruned voting over | t | kept members | CV F1 (train) | dev F1 | choice (best CV F1) |\n"
              "|---|---:|---|---:|---:|---|\n")
    for e in result["pruned_voting"]:
        voting += (f"| {e['members']} | {e['threshold']} | {len(e['kept'])}: {', '.join(e['kept'])} "
                   f"| {e['cv_f1']:.4f} | {e['dev_f1']:.4f} | {'chosen' if e is chosen else ''} |\n")
    voting += ("\nThreshold and kept members chosen by greedy elimination [KIM20] on the training out-of-fold "
               "predictions; the row with the best CV F1 is the choice, dev only scores it. (b) and (c) appear once an "
               "early-stopping setting is complete (and, for (b), kept).\n")
    return out + tail, voting + tail


if __name__ == "__main__":
    raise SystemExit(main())
