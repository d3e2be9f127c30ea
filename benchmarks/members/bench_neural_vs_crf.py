"""Neural taggers against the CRF on MEDDOCAN dev: paired significance tests.

Historical (benchmarks/provenance.py, HISTORICAL): run once, on 2026-11-21,
for the version-1 neural models; the neural defaults are version 2 since, and
its results stay as that study's record.

Loads the checkpoints ``bench_neural.py --checkpoint-dir DIR`` saved, trains
the CRF with its defaults (CRFsuite, 100 L-BFGS iterations) on MEDDOCAN
train, tags dev with all of them and compares each network with the CRF
(strict micro F1; approximate randomization and paired bootstrap over
documents, 10,000 trials each; ``ensemble_deid.studies.comparison``).

    python benchmarks/members/bench_neural.py --checkpoint-dir /tmp/neural
    python benchmarks/members/bench_neural_vs_crf.py --checkpoint-dir /tmp/neural

Writes benchmarks/results/neural-vs-crf.json. No note text is printed.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common.py and the groups
from common import MEDDOCAN, RESULTS, Clock, write_json  # noqa: E402

VARIANTS = ("lstm-crf-l", "lstm-crf-n", "lstm-crf-fea", "lstm-l")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--checkpoint-dir", type=Path, required=True, help="where bench_neural.py saved the models")
    ap.add_argument("--train", type=Path, default=MEDDOCAN / "train" / "xml")
    ap.add_argument("--dev", type=Path, default=MEDDOCAN / "dev" / "xml")
    ap.add_argument("--trials", type=int, default=10_000)
    ap.add_argument("--out", type=Path, default=RESULTS / "neural-vs-crf.json")
    args = ap.parse_args(argv)

    from ensemble_deid.studies.comparison import compare_systems
    from ensemble_deid.corpus.formats import load_directory
    from ensemble_deid.taggers.neural.base import NeuralTagger
    from ensemble_deid.taggers.registry import make_tagger

    train, dev = load_directory(args.train), load_directory(args.dev)
    taggers = {}
    for name in VARIANTS:
        path = args.checkpoint_dir / f"{name}.pt"
        if path.is_file():
            taggers[name] = NeuralTagger.load(path)
    if not taggers:
        ap.error(f"no checkpoint of {', '.join(VARIANTS)} in {args.checkpoint_dir}")
    with Clock() as fit:
        crf = make_tagger("crf").fit(train)
    print(f"crf: fitted in {fit.cpu:.0f} CPU s", flush=True)
    systems = {"crf": {p.doc_id: p for p in crf.predict(dev)}}
    for name, tagger in taggers.items():
        systems[name] = {p.doc_id: p for p in tagger.predict(dev)}
    comp = compare_systems(dev, systems, reference="crf", tests=("randomization", "bootstrap"), trials=args.trials)
    out = {"benchmark": "neural taggers vs the CRF, MEDDOCAN train -> dev, strict micro",
           "when": time.strftime("%Y-%m-%dT%H:%M:%S"), "trials": args.trials,
           "crf": {"params": crf.get_params(), "fit_cpu_s": round(fit.cpu, 1)}, "systems": {}}
    print(f"{'system':14s} {'F1':>7s} {'F1 - crf':>9s} {'p rand.':>8s} {'p boot.':>8s}  95% CI of the difference")
    for name, score in comp.scores.items():
        row = {"precision": round(score.precision, 4), "recall": round(score.recall, 4), "f1": round(score.f1, 4)}
        if name in comp.tests:
            # The tests' statistic is F1(crf) - F1(system): report it the other way round.
            rand, boot = comp.tests[name]["randomization"], comp.tests[name]["bootstrap"]
            row.update({"delta_vs_crf": round(-rand.statistic, 4), "p_randomization": round(rand.p_value, 4),
                        "p_bootstrap": round(boot.p_value, 4),
                        "ci95_delta": [round(-boot.ci_high, 4), round(-boot.ci_low, 4)]})
            print(f"{name:14s} {score.f1:7.4f} {row['delta_vs_crf']:+9.4f} {rand.p_value:8.4f} {boot.p_value:8.4f}"
                  f"  [{row['ci95_delta'][0]:+.4f}, {row['ci95_delta'][1]:+.4f}]")
        else:
            print(f"{name:14s} {score.f1:7.4f}")
        out["systems"][name] = row
    write_json(args.out, out)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
