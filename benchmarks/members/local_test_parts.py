"""Members' test predictions made again on this machine, models kept (issue 36).

A published folder's neural runs were made on another machine, and a BiLSTM
retrained here does not reproduce them to the last tag, so a bundle ``fit``
trains here differs from the ``ensemble`` command's cached predictions on a
few notes (``fit`` says so, naming the member). The throughput benchmarks
compare ``deidentify``'s spans with the ``ensemble`` command's; to compare
like with like, this script computes each named member's test part (trained
on the whole training split) in the workspace cache, where it comes before
the published copy, with its model kept (``experiment.kept``): ``fit`` then
reuses that model, and bundle and ``ensemble`` read the same member. The
out-of-fold parts stay the published ones. Parts already in the workspace
are left as they are.

    ENSEMBLE_DEID_HOME=WS ENSEMBLE_DEID_PUBLISHED=$PWD/cached_predictions/meddocan \\
      python benchmarks/members/local_test_parts.py --corpus meddocan \\
        --taggers "lstm-crf-l:epochs=12,validation_fraction=0,lstm-l:epochs=16,validation_fraction=0"

One tagger at a time on one torch thread (as ``cv --jobs 2`` workers on 2
cores train, and as the published parts were made). MEDDOCAN (CC BY 4.0):
Marimon M, Gonzalez-Agirre A, Intxaurrondo A, Rodríguez H, Lopez Martin J,
Villegas M, Krallinger M. IberLEF@SEPLN 2019, pp. 618-638.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common.py and the groups
from common import progress  # noqa: E402


def main(argv=None) -> list[dict]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", default="meddocan", help="registered corpus (its train and test splits)")
    ap.add_argument("--taggers", required=True, help="comma-separated tagger specs, as for cv --taggers")
    ap.add_argument("--folds", type=int, default=10, help="the CV whose folds the entry belongs to")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)

    from ensemble_deid.corpus.workspace import Workspace
    from ensemble_deid.experiment.cache import PredictionCache
    from ensemble_deid.experiment.cv import CrossValidation, ShippedDocuments, execute_task, parse_tagger_specs

    specs = parse_tagger_specs(args.taggers)  # bad specs refused before any work
    workspace = Workspace(os.environ.get("ENSEMBLE_DEID_HOME", "."))  # as the CLI finds it
    corpus = workspace.load(args.corpus)
    cache = PredictionCache(workspace.cache_dir)
    engine = CrossValidation(corpus.train, {"test": corpus.test}, cache, k=args.folds, seed=args.seed)
    train = ShippedDocuments(engine.train, engine.train_fingerprint, inline=True)
    targets = {"test": ShippedDocuments(corpus.test, engine.target_fingerprints["test"], inline=True)}
    done = []
    for spec in specs:
        entry, external = engine.entry_key(spec)
        if external:
            progress(f"{spec.label}: an external system (no model to keep): skipped")
            continue
        cache.ensure_entry(entry, engine._describe(spec))  # its parts count only under a valid entry.json
        task = next(t for t in engine.parts(spec) if t.target == "test")
        if cache.locate(task.part) == cache.root / task.part.relpath:
            progress(f"{spec.label}: its test part is in the workspace already: left as it is")
            done.append({"tagger": spec.label, "status": "in the workspace"})
            continue
        progress(f"{spec.label}: training on {len(corpus.train)} notes, predicting {len(corpus.test)} ...")
        out = execute_task(task, train, targets, engine.folds, str(cache.root), threads=1, keep_model=True)
        progress(f"{spec.label}: {out['status']}"
                 + (f" (fit {out['fit_seconds']:.0f} s, model kept)" if out["status"] == "computed" else ""))
        done.append({"tagger": spec.label, "status": out["status"]})
    return done


if __name__ == "__main__":
    main()
