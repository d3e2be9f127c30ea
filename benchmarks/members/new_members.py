"""New members on MEDDOCAN (issue 29): what each adds to the 12 published ones.

For each new member (crf-chars, doc-consistency, char-cnn): its 10-fold
patient-grouped CV F1 on train (strict, out-of-fold) and its dev F1; then,
with the 12 published members, its marginal contribution to voting (the
threshold chosen on the training out-of-fold predictions; the change in F1
when it is left out, on train out-of-fold -- the figure that decides -- and on
dev, reported), the gold spans only it finds, and its double-fault rates with
the published members (share of gold spans neither of a pair finds). Last,
pruned voting [KIM20] chosen by CV on train over the 12 members and over the 12
plus the new members whose CV is complete, scored on dev (dev never chooses).

Nothing is trained here: the members' parts are read from the cache, which
``ensemble-deid cv --corpus meddocan --taggers NAME --folds 10`` fills
(resumable). A member whose CV is not complete is listed with the folds that
finished and left out of the ensembles. doc-consistency with its default base
(crf, default parameters) is the CRF's output with the document-level rule
applied (``tests/test_doc_consistency.py`` checks exactly that), so its rows are
computed from the CRF's published parts; every doc-consistency part that a
``cv`` run computed is compared with that derivation and the count of equal
parts is printed.

    nice python benchmarks/members/new_members.py   # writes benchmarks/results/new-members-meddocan{.json,.md,-voting.md}
    # another set of candidates, from another cache, in results files of its own:
    nice python benchmarks/members/new_members.py --cache WS/cached_predictions --label hybrid \
        --members "lstm-crf-l:epochs=12,validation_fraction=0,linear_buckets=262144,linear_decay=0.2"
    # writes benchmarks/results/new-members-hybrid-meddocan{.json,.md,-voting.md}

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

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common.py and the groups
from common import DERIVED, MEDDOCAN_CITATION, PUBLISHED_PREDICTIONS, derived_member, RESULTS, machine_description, meddocan_cv, progress, pruned_voting, read_member, read_published, write_member_results  # noqa: E402

NEW_MEMBERS = ["crf-chars", "doc-consistency", "char-cnn"]
STEM = RESULTS / "new-members-meddocan"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cache", default=str(PUBLISHED_PREDICTIONS), help="the workspace cache holding the new parts")
    ap.add_argument("--members", default=",".join(NEW_MEMBERS),
                    help="the candidates, as tagger specs given to cv (default: %(default)s)")
    ap.add_argument("--label", default="",
                    help="results in new-members-LABEL-meddocan.* (default: new-members-meddocan.*)")
    args = ap.parse_args(argv)
    from ensemble_deid.ensemble.diagnostics import member_diagnostics
    from ensemble_deid.experiment.cv import parse_tagger_specs
    from ensemble_deid.studies.summary import strict_prf

    candidates = parse_tagger_specs(args.members, option="--members")  # checked before anything is read
    stem = RESULTS / f"new-members-{args.label}-meddocan" if args.label else STEM

    engine, train, dev_docs = meddocan_cv(args.cache)
    published = read_published(engine)
    by_id = {d.id: d for d in (*train, *dev_docs)}

    members, complete = {}, {}
    for spec in candidates:
        name = spec.label
        oof, dev, folds, records = read_member(engine, spec)
        row = {"member": name, "folds_done": len(folds), "dev_done": dev is not None,
               "fit_seconds": round(sum(r.get("fit_seconds", 0.0) for r in records), 1),
               "training_choices": [r["training_choices"] for r in records if "training_choices" in r]}
        if name in DERIVED:
            oof, dev, checked = derived_member(name, oof, dev, published, by_id)
            folds = list(range(10))
            row.update(computed_parts=len(records), computed_documents=checked, computed_equal_derived=True,
                       derived_from=DERIVED[name], folds_done=10, dev_done=True)
        if oof:
            done = [d for d in train if d.id in oof]
            row["cv_f1"] = round(strict_prf(done, oof)[2], 4)
            row["cv_documents"] = len(done)
            # the published crf on the same notes: an unfinished CV's F1 compares with this, not with its CV F1
            row["crf_same_notes_f1"] = round(strict_prf(done, published["crf"].oof)[2], 4)
        if dev is not None:
            row["dev_f1"] = round(strict_prf(dev_docs, dev)[2], 4)
        members[name] = row
        if len(folds) == 10 and dev is not None:
            complete[name] = SimpleNamespace(oof=oof, test=dev)
        elif oof:  # an unfinished CV: its agreement with the 12 on the notes of the folds that finished
            done = [d for d in train if d.id in oof]
            subset = {n: {d.id: published[n].oof[d.id] for d in done} for n in published}
            subset[name] = oof
            diag = member_diagnostics(subset, done, subset, done)
            faults = diag.double_fault[len(published), :len(published)]
            pairs = diag.double_fault[:len(published), :len(published)][np.triu_indices(len(published), 1)]
            if dev is not None:  # its dev predictions are complete: pairwise figures need no threshold
                from ensemble_deid.ensemble import build_candidates
                from ensemble_deid.ensemble.diagnostics import pairwise_agreement

                table = build_candidates([published[n].test for n in published] + [dev], (*published, name), dev_docs)
                _, double_fault = pairwise_agreement(table)
                only = table.votes[:, -1] & (table.votes.sum(axis=1) == 1)
                row["dev"] = {"unique_true": int((only & table.gold).sum()), "unique_false": int((only & ~table.gold).sum()),
                              "double_fault_mean": round(float(double_fault[-1, :-1].mean()), 4),
                              "double_fault_min": round(float(double_fault[-1, :-1].min()), 4),
                              "double_fault_max": round(float(double_fault[-1, :-1].max()), 4)}
            row["partial_train_oof"] = {"documents": len(done), "double_fault_mean": round(float(faults.mean()), 4),
                                        "double_fault_max": round(float(faults.max()), 4),
                                        "published_pairs_double_fault_mean": round(float(pairs.mean()), 4)}
        progress(f"{name}: {row['folds_done']}/10 folds, dev {'done' if dev is not None else 'not done'}")

    everyone = {**published, **complete}
    names = list(everyone)
    pub_idx = [names.index(n) for n in published]
    oof_all = {n: everyone[n].oof for n in names}
    dev_all = {n: everyone[n].test for n in names}
    on_train = member_diagnostics(oof_all, train, oof_all, train)
    on_dev = member_diagnostics(oof_all, train, dev_all, dev_docs)
    for diag, split in ((on_train, "train_oof"), (on_dev, "dev")):
        for j, contribution in enumerate(diag.contributions):
            if contribution.member in complete:
                row = members[contribution.member]
                others = [diag.double_fault[j, i] for i in pub_idx]
                row[split] = {"voting_threshold": diag.threshold, "delta_f1": round(contribution.delta, 4),
                              "unique_true": contribution.unique_true, "unique_false": contribution.unique_false,
                              "double_fault_mean": round(float(np.mean(others)), 4),
                              "double_fault_min": round(float(np.min(others)), 4),
                              "double_fault_max": round(float(np.max(others)), 4)}
    pub_pairs = on_dev.double_fault[np.ix_(pub_idx, pub_idx)][np.triu_indices(len(pub_idx), 1)]
    reference = {"published_pairs_double_fault_dev_min": round(float(pub_pairs.min()), 4),
                 "published_pairs_double_fault_dev_mean": round(float(pub_pairs.mean()), 4),
                 "crf_cv_f1": round(strict_prf(train, published["crf"].oof)[2], 4),
                 "crf_dev_f1": round(strict_prf(dev_docs, published["crf"].test)[2], 4)}

    variants = [("12 published", published)] + ([(f"12 + {', '.join(complete)}", everyone)] if complete else [])
    result = {"citation": MEDDOCAN_CITATION, "members": members, "reference": reference,
              "pruned_voting": pruned_voting(train, dev_docs, variants), "machine": machine_description()}
    write_member_results(stem, result, tables)
    return 0


def _fmt(value, digits=4):
    return "-" if value is None else (f"{value:.{digits}f}" if isinstance(value, float) else str(value))


def verdict(row, pruned_voting) -> str:
    """Whether a new member adds, decided on train only (dev never decides): its voting ΔF1 on the
    training out-of-fold predictions is positive, and pruned voting chosen by CV over the 12 plus the
    new members keeps it and scores higher by CV than pruned voting over the 12. A member that adds
    belongs in the published cache (issue 29)."""
    if row["folds_done"] < 10 or not row["dev_done"]:
        return f"undecided: CV {row['folds_done']}/10"
    delta = row.get("train_oof", {}).get("delta_f1")
    twelve = next(e for e in pruned_voting if e["members"] == "12 published")
    kept = any(row["member"] in e["kept"] for e in pruned_voting if e["members"] != "12 published")
    # CV also chooses between the member sets: an enlarged set that scores no higher is not chosen.
    higher = any(e["cv_f1"] > twelve["cv_f1"] for e in pruned_voting if e["members"] != "12 published")
    if delta is not None and delta > 0 and kept and higher:
        return "yes: publish"
    why = [r for r, bad in (("ΔF1 train OOF <= 0", delta is None or delta <= 0),
                            ("pruned voting by CV drops it", not kept),
                            ("the 12 alone score as high by CV", kept and not higher)) if bad]
    return f"no ({'; '.join(why)}): leave out"


def tables(result) -> str:
    lines = ["| member | CV folds done | CV F1 (train, out-of-fold) | crf on the same notes | dev F1 | voting ΔF1 train OOF "
             "| voting ΔF1 dev | only it finds (dev) | double fault with the 12 (dev, mean / max) "
             "| adds: in the published cache |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for row in result["members"].values():
        tr, dv = row.get("train_oof", {}), row.get("dev", {})
        name = row["member"] + (f" (from {row['derived_from']}'s parts)" if row.get("derived_from") else "")
        lines.append(f"| {name} | {row['folds_done']}/10 | {_fmt(row.get('cv_f1'))} | {_fmt(row.get('crf_same_notes_f1'))} "
                     f"| {_fmt(row.get('dev_f1'))} "
                     f"| {_fmt(tr.get('delta_f1'))} | {_fmt(dv.get('delta_f1'))} | {_fmt(dv.get('unique_true'))} "
                     f"| {_fmt(dv.get('double_fault_mean'))} / {_fmt(dv.get('double_fault_max'))} "
                     f"| {verdict(row, result['pruned_voting'])} |")
    ref = result["reference"]
    out = "\n".join(lines) + "\n\n"
    for row in result["members"].values():
        part = row.get("partial_train_oof")
        if part:
            out += (f"{row['member']}, CV not finished: on the {part['documents']} training notes of its finished "
                    f"folds (out-of-fold), double fault with the 12 {part['double_fault_mean']:.4f} on average, "
                    f"{part['double_fault_max']:.4f} at most (two of the 12: {part['published_pairs_double_fault_mean']:.4f} "
                    "on average).\n")
        if row.get("derived_from"):
            out += (f"{row['member']}: {row['computed_parts']} part(s) computed by `cv` ({row['computed_documents']} "
                    f"notes) compared with the derivation from {row['derived_from']}'s parts: "
                    f"{'identical' if row['computed_equal_derived'] else 'DIFFERENT'}.\n")
    out += "\n"
    out += (f"The published crf: CV F1 {ref['crf_cv_f1']:.4f}, dev F1 {ref['crf_dev_f1']:.4f}. "
            "Double fault between two of the 12 published members on dev: "
            f"{ref['published_pairs_double_fault_dev_min']:.4f} at least, {ref['published_pairs_double_fault_dev_mean']:.4f} "
            "on average. ΔF1: voting F1 with every member minus without this one, at the threshold chosen on the "
            "training out-of-fold predictions. Adds: decided on train only, ΔF1 train OOF above 0, kept by "
            "pruned voting chosen by CV over the 12 plus the new members, and that ensemble's CV F1 above "
            "pruned voting's over the 12; a member that adds belongs in the published cache.\n\n")
    voting = "| pruned voting over | t | kept | CV F1 (train) | dev F1 |\n|---|---:|---|---:|---:|\n"
    for e in result["pruned_voting"]:
        voting += (f"| {e['members']} | {e['threshold']} | {len(e['kept'])}: {', '.join(e['kept'])} "
                   f"| {e['cv_f1']:.4f} | {e['dev_f1']:.4f} |\n")
    tail = f"\n{result['citation']}. Written by `benchmarks/members/new_members.py`.\n"
    return out + tail, voting + "\nThreshold and kept members chosen by greedy elimination on the training " \
        "out-of-fold predictions; dev only scores the choice.\n" + tail


if __name__ == "__main__":
    raise SystemExit(main())
