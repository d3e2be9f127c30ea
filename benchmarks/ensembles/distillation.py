"""Distillation on MEDDOCAN (issue 51): one CRF student taught by the best-F1
ensemble, train -> dev, and the ablation of what it is trained on.

The teacher is pruned voting over the 12 published members (chosen by 10-fold
CV on train, f1, as ``fit --method voting-pruned`` chooses it): its labels on
the training notes are its out-of-fold outputs (the method refitted on each
fold's other folds over the members' cached out-of-fold predictions,
``ensemble.run.oof_estimator``), never its in-sample predictions; on dev, the
method fitted on all of train over the members' cached dev predictions.
Nothing but the students (and the meta-learner) is trained.

Students (``deid.distil``: the CRF at the published member's settings):

- gold only: the published ``crf`` member's dev predictions (the same tagger
  and settings trained on the gold training notes: not retrained);
- + augmentation: gold notes plus one surrogate copy of each (identifiers
  re-drawn, es_ES, day-month dates);
- + teacher labels: each note's gold plus the teacher's out-of-fold spans that
  overlap none (``union``), and one surrogate copy of it;
- teacher labels alone (no gold);
- recall-first: teacher labels of the recall-first teacher (pruned voting at
  ``binary-token:recall>=0.99``) alone;
- + unlabelled notes: not measured on MEDDOCAN. Its dev and test notes were made
  from SPACCC, which may not serve as unlabelled notes, and no other Spanish
  clinical text is available offline here (the unit tests run this source on the
  synthetic corpus).

Which of the ``CV_SETTINGS`` (those whose folds are all cached: gold only and
+ teacher labels in the published run) the ``distil`` command would choose is decided by
2-fold patient-grouped CV on train (``deid.distil.choose``, objective f1; 2 folds,
not 3, to fit the session: a CRF fit on MEDDOCAN train takes about 270 CPU s);
dev is scored once per student and never used to choose.

    nice -n 10 python benchmarks/ensembles/distillation.py --stage finals   # the students on all of train
    nice -n 10 python benchmarks/ensembles/distillation.py --stage cv       # the choice by CV on train
    python benchmarks/ensembles/distillation.py --tables                    # results JSON and table from the state

Resumable: the teacher's outputs, every student's dev spans and every CV
fold's held-out spans are kept under ``--work`` (owner-only) and reused.

MEDDOCAN (CC BY 4.0): Marimon M, Gonzalez-Agirre A, Intxaurrondo A, Rodríguez
H, Lopez Martin J, Villegas M, Krallinger M. IberLEF@SEPLN 2019, pp. 618-638.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common.py and the groups

from common import (MEDDOCAN_CITATION, MEDDOCAN_PUBLISHED, RESULTS, ROOT, machine_description,  # noqa: E402
                    meddocan_cv, progress, read_published, write_json, write_markdown)

STEM = RESULTS / "distillation-meddocan"
WORK = ROOT / ".ensemble-deid" / "bench-distillation"  # ignored by git: holds offsets of PHI
LOCALE, DATE_ORDER, SEED, CV_FOLDS = "es_ES", "dmy", 0, 2
RECALL_FIRST = "binary-token:recall>=0.99"
# name, mix (labels, augment), which teacher's labels
# In the order they are computed (the most telling first: a run cut short still answers the question).
STUDENTS = [
    ("+ teacher labels", ("union", 1), "f1"),
    ("+ augmentation", ("gold", 1), "f1"),
    ("recall-first teacher's labels", ("teacher", 0), RECALL_FIRST),
    ("teacher labels alone", ("teacher", 0), "f1"),
]
CV_SETTINGS = [("gold", 0), ("union", 1), ("teacher", 0), ("gold", 1)]


def _private(path: Path) -> Path:
    from ensemble_deid.files import private_dir

    return private_dir(path)


def _save(path: Path, data) -> None:
    from ensemble_deid.files import write_private_json

    write_private_json(path, data)


def _rows(doc, spans):
    return [[a.start, a.end, a.category, a.type] for a in spans]


def _preds(docs, rows_by_id):
    from ensemble_deid.corpus.document import Annotation
    from ensemble_deid.taggers.prediction import DocumentPrediction

    return {d.id: DocumentPrediction.from_spans(d, [Annotation(s, e, c, t, d.text[s:e])
                                                    for s, e, c, t in rows_by_id[d.id]]) for d in docs}


def teacher(objective, train, dev, folds, oof, devm, work: Path):
    """(out-of-fold predictions on train, dev predictions, record) of pruned voting chosen for ``objective``."""
    path = work / f"teacher-{objective.replace(':', '_').replace('>=', 'ge')}.json"
    if path.exists():
        saved = json.loads(path.read_text())
        return _preds(train, saved["oof"]), _preds(dev, saved["dev"]), saved["record"]
    from ensemble_deid.ensemble import GridSearch, make_method
    from ensemble_deid.ensemble.run import oof_estimator
    from ensemble_deid.ensemble.selection import cross_val_predict

    progress(f"teacher: pruned voting chosen by {folds.k}-fold CV on train ({objective})")
    t0 = time.perf_counter()
    search = GridSearch(make_method("voting-pruned"), folds=folds.k, seed=folds.seed, objective=objective)
    search.fit(oof, train)
    dev_preds = {p.doc_id: p for p in search.predict(devm, dev)}
    progress(f"  chosen {search.best_params_}; out-of-fold outputs on train")
    train_oof = cross_val_predict(oof_estimator(search, search.best_params_), oof, train, folds)
    model = search.best_estimator_
    record = {"objective": objective, "best_params": search.best_params_, "kept": list(getattr(model, "subset_", ())),
              "threshold": getattr(model, "threshold_", None), "seconds": round(time.perf_counter() - t0, 1)}
    _save(path, {"record": record, "oof": {d.id: _rows(d, train_oof[d.id].spans(d)) for d in train},
                 "dev": {d.id: _rows(d, dev_preds[d.id].spans(d)) for d in dev}})
    return train_oof, dev_preds, record


def scores(docs, preds) -> dict:
    from ensemble_deid.studies.leaks import leak_rates
    from ensemble_deid.studies.summary import strict_prf

    p, r, f = strict_prf(docs, preds)
    return {"precision": round(p, 4), "recall": round(r, 4), "f1": round(f, 4),
            "token_leak": round(leak_rates(docs, preds)["all"].rate, 4)}


def final_student(name, mix, objective, train, dev, teachers, augmented, work: Path) -> dict:
    from ensemble_deid.deid.distil import Mix, training_set
    from ensemble_deid.experiment.cv import TaggerSpec

    path = work / f"student-{mix[0]}-{mix[1]}-{objective.replace(':', '_').replace('>=', 'ge')}.json"
    if path.exists():
        return json.loads(path.read_text())
    oof = teachers[objective][0]
    docs = training_set(Mix(*mix), train, oof, augmented[objective], [])
    progress(f"student {name}: CRF on {len(docs)} documents")
    t0 = time.perf_counter()
    cpu0 = time.process_time()
    tagger = TaggerSpec.parse("crf").make()
    tagger.fit(docs)
    fit_s, fit_cpu = time.perf_counter() - t0, time.process_time() - cpu0
    preds = {p.doc_id: p for p in tagger.predict(dev)}
    out = {"name": name, "mix": {"labels": mix[0], "augment": mix[1], "unlabelled": 0}, "teacher_objective": objective,
           "documents": len(docs), "fit_seconds": round(fit_s, 1), "fit_cpu_seconds": round(fit_cpu, 1),
           "dev": {d.id: _rows(d, preds[d.id].spans(d)) for d in dev}}
    _save(path, out)
    progress(f"  dev {scores(dev, preds)} ({fit_s:.0f} s)")
    return out


def augmented_sets(train, teachers, wanted):
    """{teacher objective: the surrogate copies its labels need}; ``wanted``: (objective, mix) pairs."""
    from ensemble_deid.deid.distil import Mix, augment

    return {obj: augment(train, [Mix(*m) for o, m in wanted if o == obj], teachers[obj][0], LOCALE, DATE_ORDER, SEED)
            for obj in teachers}


def _cv_parts(train, teachers, work: Path):
    from ensemble_deid.deid.distil import FoldRecords
    from ensemble_deid.ensemble.splits import make_folds

    folds = make_folds(train, CV_FOLDS, SEED)
    records = FoldRecords(work / "cv", {"teacher": teachers["f1"][2], "tagger": "crf", "folds": CV_FOLDS,
                                        "seed": SEED, "locale": LOCALE, "date_order": DATE_ORDER})
    return folds, records


def run_cv_folds(train, teachers, augmented, work: Path, settings, only_folds) -> None:
    """The held-out spans of each setting's folds ``only_folds`` (all: None), cached."""
    from ensemble_deid.deid.distil import Mix, Setting, fold_record
    from ensemble_deid.ensemble.splits import fold_indices
    from ensemble_deid.experiment.cv import TaggerSpec

    folds, records = _cv_parts(train, teachers, work)
    for labels, n in settings:
        for f, (train_idx, test_idx) in enumerate(fold_indices(train, folds)):
            if only_folds is None or f in only_folds:
                fold_record(TaggerSpec.parse("crf"), Setting(Mix(labels, n)), f, folds.k, [train[i] for i in train_idx],
                            [train[i] for i in test_idx], teachers["f1"][0], augmented["f1"], [], records, progress)


def cv_rows(train, teachers, work: Path) -> list[dict]:
    """The choice over the settings whose every fold is cached (none trained here)."""
    from ensemble_deid.deid.distil import Mix, Setting, choose
    from ensemble_deid.experiment.cv import TaggerSpec

    folds, records = _cv_parts(train, teachers, work)
    done = [Setting(Mix(*m)) for m in CV_SETTINGS
            if all(records.read(Setting(Mix(*m)), f) is not None for f in range(folds.k))]
    if not done:
        return []
    return choose(TaggerSpec.parse("crf"), done, train, teachers["f1"][0], {}, [], folds, "f1", records).results


def tables(result) -> str:
    lines = [f"Distillation on MEDDOCAN train -> dev ({MEDDOCAN_CITATION}): one CRF student (the published "
             f"member's settings) per training mix; dev scored once per student; the choice by {result['cv_folds']}-fold "
             f"patient-grouped CV on train (objective f1). Δ: the student's dev figure minus its teacher's, in points.",
             "", "| system | trained on | documents | dev strict P | dev strict R | dev strict F1 | dev token leak | "
             f"ΔF1 vs teacher | Δleak vs teacher | CV F1 ({result['cv_folds']} folds) | CV token leak |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    cv = {(r["mix"]["labels"], r["mix"]["augment"]): r for r in result.get("cv", [])}
    teachers = {r["teacher_objective"]: r["dev_scores"] for r in result["rows"] if r["name"].startswith("teacher")}
    for row in result["rows"]:
        s = row["dev_scores"]
        student = row["name"].startswith("student")
        c = cv.get((row["mix"]["labels"], row["mix"]["augment"])) if student and row["teacher_objective"] == "f1" \
            else None
        cvf = f"{c['strict_f1']:.4f}{' (chosen)' if c['chosen'] else ''}" if c else "-"
        cvl = f"{c['token_leak']:.4f}" if c else "-"
        t = teachers.get(row["teacher_objective"]) if student else None
        df = f"{100 * (s['f1'] - t['f1']):+.2f}" if t else "-"
        dl = f"{100 * (s['token_leak'] - t['token_leak']):+.2f}" if t else "-"
        lines.append(f"| {row['name']} | {row['trained_on']} | {row.get('documents', '-')} | {s['precision']:.4f} | "
                     f"{s['recall']:.4f} | {s['f1']:.4f} | {s['token_leak']:.4f} | {df} | {dl} | {cvf} | {cvl} |")
    lines += ["", "+ unlabelled notes: not measured on MEDDOCAN (its notes come from SPACCC, which may not serve as "
              "unlabelled notes, and no other Spanish clinical text is available offline); the source is tested on "
              "the synthetic corpus."]
    missing = [name for name, _, _ in STUDENTS if not any(r["name"] == f"student: {name}" for r in result["rows"])]
    if missing:
        lines += ["", f"Not run in this session (CPU): {', '.join(missing)}."]
    return "\n".join(lines)


def assemble(train, dev, teachers, finals, cv_rows, crf_dev) -> dict:
    rows = []
    for objective, label in (("f1", "teacher: pruned voting (best F1)"),
                             (RECALL_FIRST, f"teacher: pruned voting ({RECALL_FIRST})")):
        if objective in teachers:
            rec = teachers[objective][2]
            rows.append({"name": label, "trained_on": f"12 members, {len(rec['kept'])} kept, threshold "
                                                      f"{rec['threshold']}", "dev_scores": scores(dev, teachers[objective][1]),
                         "teacher_objective": objective})
    rows.append({"name": "student: gold only", "trained_on": "gold (the published crf member)",
                 "mix": {"labels": "gold", "augment": 0, "unlabelled": 0}, "documents": len(train),
                 "dev_scores": scores(dev, crf_dev), "teacher_objective": "f1"})
    for f in finals:
        m = f["mix"]
        what = {"gold": "gold", "union": "gold + teacher OOF spans (union)", "teacher": "teacher OOF spans"}[m["labels"]]
        what += f" + {m['augment']} surrogate cop{'y' if m['augment'] == 1 else 'ies'}" if m["augment"] else ""
        if f["teacher_objective"] != "f1":
            what += f" (teacher {f['teacher_objective']})"
        rows.append({"name": f"student: {f['name']}", "trained_on": what, "mix": m, "documents": f["documents"],
                     "teacher_objective": f["teacher_objective"], "fit_seconds": f["fit_seconds"],
                     "fit_cpu_seconds": f.get("fit_cpu_seconds"), "dev_scores": scores(dev, _preds(dev, f["dev"]))})
    students = [r for r in rows if r["name"].startswith("student") and r["teacher_objective"] == "f1"]
    out = {"corpus": "meddocan train -> dev", "citation": MEDDOCAN_CITATION, "rows": rows, "cv": cv_rows,
           "cv_folds": CV_FOLDS, "augmentation": {"locale": LOCALE, "date_order": DATE_ORDER, "seed": SEED}}
    chosen = [r for r in cv_rows if r.get("chosen")]
    if chosen:
        pick = next((s for s in students if s["mix"]["labels"] == chosen[0]["mix"]["labels"]
                     and s["mix"]["augment"] == chosen[0]["mix"]["augment"]), None)
        t = scores(dev, teachers["f1"][1])
        if pick is not None:
            out["chosen_student"] = {"student": pick["name"], "student_f1": pick["dev_scores"]["f1"],
                                     "teacher_f1": t["f1"], "f1_gap_pt": round(100 * (pick["dev_scores"]["f1"] - t["f1"]), 2),
                                     "student_leak": pick["dev_scores"]["token_leak"], "teacher_leak": t["token_leak"]}
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--stage", choices=["finals", "cv", "all"], default="all")
    ap.add_argument("--work", type=Path, default=WORK)
    ap.add_argument("--students", help="comma-separated indices of STUDENTS to train (default: all, in order)")
    ap.add_argument("--settings", help="comma-separated indices of CV_SETTINGS to cross-validate (default: all)")
    ap.add_argument("--fold", type=int, action="append", help="only this CV fold (repeatable; default: every fold)")
    ap.add_argument("--tables", action="store_true", help="write the results from what the work folder holds")
    args = ap.parse_args(argv)
    os.environ["ENSEMBLE_DEID_PUBLISHED"] = str(MEDDOCAN_PUBLISHED)
    work = _private(args.work)
    import tempfile

    engine, train, dev = meddocan_cv(Path(tempfile.mkdtemp(prefix="edeid-distil-")))
    runs = read_published(engine)
    oof = {n: r.oof for n, r in runs.items()}
    devm = {n: r.test for n, r in runs.items()}
    objectives = ["f1"] + ([RECALL_FIRST] if args.stage in ("finals", "all") or
                           (work / f"teacher-{RECALL_FIRST.replace(':', '_').replace('>=', 'ge')}.json").exists() else [])
    teachers = {obj: teacher(obj, train, dev, engine.folds, oof, devm, work) for obj in objectives}
    progress("teacher dev: " + ", ".join(f"{o}: {scores(dev, t[1])}" for o, t in teachers.items()))
    finals = []
    if not args.tables:
        students = [STUDENTS[int(i)] for i in args.students.split(",")] if args.students else STUDENTS
        cv_settings = [CV_SETTINGS[int(i)] for i in args.settings.split(",")] if args.settings else CV_SETTINGS
        wanted = ({(o, m) for _, m, o in students} if args.stage in ("finals", "all") else set()) | \
            ({("f1", m) for m in cv_settings} if args.stage in ("cv", "all") else set())
        augmented = augmented_sets(train, teachers, sorted(wanted))
        if args.stage in ("finals", "all"):
            for name, mix, objective in students:
                final_student(name, mix, objective, train, dev, teachers, augmented, work)
        if args.stage in ("cv", "all"):
            run_cv_folds(train, teachers, augmented, work, cv_settings, args.fold)
    for name, mix, objective in STUDENTS:
        path = work / f"student-{mix[0]}-{mix[1]}-{objective.replace(':', '_').replace('>=', 'ge')}.json"
        if path.exists():
            finals.append(json.loads(path.read_text()))
    result = assemble(train, dev, teachers, finals, cv_rows(train, teachers, work), runs["crf"].test)
    result.update(machine=machine_description(),
                  command=" ".join(["python", "benchmarks/ensembles/distillation.py", *(argv or sys.argv[1:])]))
    write_json(STEM.with_suffix(".json"), result)
    md = tables(result)
    write_markdown(STEM.with_suffix(".md"), md)
    print(md)


if __name__ == "__main__":
    main()
