"""Can a richer stacker lift the MEDDOCAN ensemble? Settings tried by CV on
train, dev reported beside, never chosen by it (issue 29).

The ensemble chosen by ``neural_cv.py`` (method and member set by CV) reaches
a CV F1 near 0.968 and a dev F1 near 0.969; issue 29 asks for 0.972 on dev.
Before asking more of the members, this script asks more of the stacker, over
the same member sets (``neural_cv.member_sets``: (a) the 12 published, (c)
with the early-stopping settings, (d) with the extra members too), each
fitted as ``ensemble --method`` fits it (grid chosen by 10-fold CV over the
members' out-of-fold predictions, then scored by its own out-of-fold
predictions on train, fitted on all of train for dev):

- ``stacked-svm`` as shipped (``C`` by CV);
- ``stacked-svm`` with ``confidences`` in its grid (the members' token
  confidences as features: the default leaves them out, a choice once made
  on dev with 4 members);
- ``member x label``: the stacked SVM's design plus one block of each
  member's vote per label (a member trusted for dates, not for names),
  confidences in the grid too;
- gradient-boosted trees (scikit-learn's ``HistGradientBoostingClassifier``)
  on the same design with confidences: interactions without listing them.

The two last ones are experiments of this script (subclasses of
``StackedSVM`` registered here only), not methods of the library: kept
there only if one won by CV. Nothing is trained but the stackers; members
are read from the caches as ``neural_cv.py`` reads them.

    nice -n 10 python benchmarks/ensembles/stacking_variants.py --cache WS/cached_predictions --cache WS2/cached_predictions
    # writes benchmarks/results/stacking-variants-meddocan{.json,.md}

MEDDOCAN (CC BY 4.0): Marimon M, Gonzalez-Agirre A, Intxaurrondo A, Rodríguez
H, Lopez Martin J, Villegas M, Krallinger M. IberLEF@SEPLN 2019, pp. 618-638.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common.py and the groups
from common import (MEDDOCAN_CITATION, PUBLISHED_PREDICTIONS, RESULTS, Clock, best_by_cv, machine_description,  # noqa: E402
                    methods_by_cv, shown, timing_phrase, write_json, write_markdown)

STEM = RESULTS / "stacking-variants-meddocan"


def learners() -> dict:
    """The two experimental stackers by name (``main`` registers them for ``make_search``)."""
    from ensemble_deid.ensemble.stacked_svm import StackedSVM

    class MemberLabelSVM(StackedSVM):
        """The stacked SVM's design plus each member's vote, one column per (member, label)."""
        name = "stacked-svm-member-label"

        def _design(self, table):
            X = super()._design(table)
            index = {lab: i for i, lab in enumerate(self.labels_)}
            col = np.array([index.get(table.labels[i], -1) for i in table.label.tolist()], dtype=np.int64)
            rows = np.flatnonzero(col >= 0)
            n, m = table.votes.shape
            block = np.zeros((n, m * len(self.labels_)))
            for j in range(m):
                block[rows, j * len(self.labels_) + col[rows]] = table.votes[rows, j]
            return np.hstack([X, block])

    class BoostedStacker(StackedSVM):
        """Gradient-boosted trees on the stacked SVM's design; its decision value is the trees' logit."""
        name = "stacked-trees"
        _parameter_constraints = {**StackedSVM._parameter_constraints, "max_leaf_nodes": [int]}

        def __init__(self, C=0.1, class_weight=None, confidences=True, max_iter=5000, random_state=0,
                     operating_point=None, max_leaf_nodes=15):
            self._store_params(locals())

        def default_grid(self, n_members):
            return {"max_leaf_nodes": [7, 15]}

        def _fit_prepared(self, table):
            from sklearn.ensemble import HistGradientBoostingClassifier

            self._member_ranks(table)
            self.labels_ = tuple(sorted({table.labels[i] for i in table.label.tolist()}))
            self.svm_ = HistGradientBoostingClassifier(max_leaf_nodes=self.max_leaf_nodes, max_iter=200,
                                                       early_stopping=False, random_state=self.random_state)
            self.svm_.fit(self._design(table), table.gold)
            self.constant_ = None

        def decision_function(self, table):
            return self.svm_.decision_function(self._design(table)) if len(table) else np.zeros(0)

    return {cls.name: cls for cls in (MemberLabelSVM, BoostedStacker)}


C_GRID = [0.01, 0.1, 1.0, 10.0]
VARIANTS = [  # (name shown, method, fixed parameters, grid: None = the method's default)
    ("stacked-svm (as shipped)", "stacked-svm", None, None),
    ("stacked-svm, confidences in the grid", "stacked-svm", None, {"C": C_GRID, "confidences": [False, True]}),
    ("member x label votes", "stacked-svm-member-label", None, {"C": C_GRID[:3], "confidences": [False, True]}),
    ("gradient-boosted trees", "stacked-trees", None, None),
]


def markdown(result: dict) -> str:
    chosen = best_by_cv(result["ensembles"])
    lines = ["| member set | stacker | chosen on train | CV F1 (train, out-of-fold of the ensemble itself) | dev F1 "
             "| best CV F1 |", "|---|---|---|---:|---:|---|"]
    for e in result["ensembles"]:
        params = ", ".join(f"{k} = {v}" for k, v in e["params"].items()) or "defaults"
        lines.append(f"| {e['members'].split(' ')[0]} ({e['candidates']}) | {e['method']} | {params} "
                     f"| {e['cv_f1']:.4f} | {e['dev_f1']:.4f} | {'best' if e is chosen else ''} |")
    ref = result["reference"]
    timing = {**result["timing"], "machine": result["machine"]}
    return ("\n".join(lines) + "\n\n"
            f"Member sets as in `neural_cv.py` ((a) the 12 published, (c) with the early-stopping settings, (d) with "
            f"the extra members too). For comparison, the choice of `neural_cv.py` over pruned voting, decision "
            f"templates and the shipped stacked SVM: {ref['method']} over {ref['members'].split(' ')[0]}, CV F1 "
            f"{ref['cv_f1']:.4f}, dev F1 {ref['dev_f1']:.4f}. A stacker here would replace it only with a higher "
            f"CV F1; dev never decides. The fits took {timing_phrase(timing)}.\n\n"
            f"{result['citation']}. Written by `benchmarks/ensembles/stacking_variants.py`.\n")


def main(argv=None) -> int:
    from members.neural_cv import member_sets

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cache", action="append", help="as neural_cv.py takes it (repeatable)")
    ap.add_argument("--sets", default="(a),(c),(d)", help="the member sets, by their first word (default: all three)")
    args = ap.parse_args(argv)
    caches = [Path(c) for c in (args.cache or [PUBLISHED_PREDICTIONS])]
    engine, train, dev_docs, _, _, variants, _ = member_sets(caches)
    wanted = set(args.sets.split(","))
    variants = [(label, runs) for label, runs in variants if label.split(" ")[0] in wanted]
    from ensemble_deid.ensemble import registry

    registry.METHODS.update(learners())  # this process only
    clock = Clock().start()
    ensembles = methods_by_cv(train, dev_docs, engine.folds, variants, methods=VARIANTS)
    clock.stop()
    reference = _neural_cv_choice()
    result = {"citation": MEDDOCAN_CITATION, "caches": [shown(c) for c in caches], "ensembles": ensembles,
              "reference": reference,
              "timing": {"wall_s": round(clock.wall, 1), "cpu_s": round(clock.cpu, 1), "load_before": clock.load_before,
                         "load_after": clock.load_after, "nice": os.nice(0)},
              "machine": machine_description()}
    write_json(STEM.with_suffix(".json"), result)
    write_markdown(STEM.with_suffix(".md"), markdown(result))
    print(markdown(result))
    return 0


def _neural_cv_choice() -> dict:
    """``neural_cv.py``'s choice, from its results file."""
    import json

    return json.loads((RESULTS / "neural-cv-meddocan.json").read_text())["chosen"]


if __name__ == "__main__":
    raise SystemExit(main())
