"""CRF tagger on MEDDOCAN (train -> dev as test): accuracy, training time and
the adapter's own overhead, plus the rule tagger on the same dev set.

    python benchmarks/members/bench_crf.py                       # full run (a few minutes)
    python benchmarks/members/bench_crf.py --limit-train 100 --limit-dev 50 --max-iterations 20   # smoke run

Prints the figures and writes benchmarks/results/crf.json. The overhead ratio
compares the adapter's whole ``fit`` with CRFsuite trained directly on the
same feature lists (pycrfsuite ``append`` + ``train``): what the adapter adds
(feature extraction, I/O of the model bytes) over CRFsuite's own time. Both
wall-clock and CPU seconds are recorded: the machine is shared, and CPU time is
the steadier of the two. No note text is printed.

MEDDOCAN: Marimon M, Gonzalez-Agirre A, Intxaurrondo A, Rodríguez H, Lopez
Martin J, Villegas M, Krallinger M. "Automatic De-identification of Medical
Texts in Spanish: the MEDDOCAN Track, Corpus, Guidelines, Methods and
Evaluation of Results." IberLEF@SEPLN 2019, pp. 618-638 (CC BY 4.0).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import sys
import time
from importlib import metadata
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common.py and the groups
from common import MEDDOCAN, ROOT, Clock, score_predictions, write_json  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--train", type=Path, default=MEDDOCAN / "train" / "xml")
    ap.add_argument("--dev", type=Path, default=MEDDOCAN / "dev" / "xml")
    ap.add_argument("--limit-train", type=int, default=None)
    ap.add_argument("--limit-dev", type=int, default=None)
    ap.add_argument("--max-iterations", type=int, default=100)
    ap.add_argument("--c1", type=float, default=None)
    ap.add_argument("--c2", type=float, default=None)
    ap.add_argument("--sequence", default="document", choices=["document", "sentence"])
    ap.add_argument("--no-direct", action="store_true", help="skip the direct-CRFsuite comparison run")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "crf.json")
    args = ap.parse_args()

    import pycrfsuite

    from ensemble_deid.corpus.bio import gold_tags
    from ensemble_deid.corpus.formats import load_directory
    from ensemble_deid_adapters.crf import CRFTagger
    from ensemble_deid_adapters.rules import RuleTagger

    with Clock() as c_load:
        train = load_directory(args.train)[: args.limit_train]
        dev = load_directory(args.dev)[: args.limit_dev]
        for d in train + dev:
            d.tokens  # tokenization is the corpus's, not the adapter's: done up front
    n_train_tok = sum(len(d.tokens) for d in train)
    n_dev_tok = sum(len(d.tokens) for d in dev)
    print(f"MEDDOCAN train {len(train)} docs / {n_train_tok} tokens; dev {len(dev)} docs / {n_dev_tok} tokens "
          f"(loaded in {c_load.wall:.1f}s)")

    params = {"max_iterations": args.max_iterations, "sequence": args.sequence}
    if args.c1 is not None:
        params["c1"] = args.c1
    if args.c2 is not None:
        params["c2"] = args.c2
    tagger = CRFTagger(**params)

    # --- 1. the adapter, end to end -------------------------------------------------
    with Clock() as c_fit:
        tagger.fit(train)
    st = tagger.fit_stats_
    print(f"adapter fit: {c_fit.wall:.1f}s wall / {c_fit.cpu:.1f}s CPU; features {st['feature_seconds']:.1f}s, "
          f"append {st['append_seconds']:.1f}s, CRFsuite {st['crfsuite_seconds']:.1f}s, "
          f"{st['iterations']} iterations, {st['active_features']} active features")

    with Clock() as c_pred:
        preds = tagger.predict(dev)
    print(f"predict dev: {c_pred.wall:.1f}s wall ({n_dev_tok / c_pred.wall:,.0f} tokens/s; "
          f"{n_dev_tok / c_pred.cpu:,.0f} tokens/CPU-s), marginals included")

    # --- 2. CRFsuite directly on the same features -----------------------------------
    direct = None
    if not args.no_direct:
        from ensemble_deid.taggers.features import FeatureExtractor

        fx = FeatureExtractor(**dict(tagger.features or {}))  # fresh: no warm word cache
        with Clock() as c_feat:
            feats = fx.documents_features(train)
        tags = [gold_tags(d) for d in train]
        with Clock() as c_direct:
            trainer = pycrfsuite.Trainer(algorithm="lbfgs", verbose=False)
            for doc, x, y in zip(train, feats, tags):
                for a, b in tagger._chunks(doc):
                    trainer.append(x[a:b], y[a:b])
            trainer.set_params({
                "c1": float(tagger.c1), "c2": float(tagger.c2), "max_iterations": int(tagger.max_iterations),
                "epsilon": float(tagger.epsilon), "feature.minfreq": float(tagger.min_freq),
                "feature.possible_transitions": bool(tagger.possible_transitions),
            })
            with tempfile.TemporaryDirectory() as tmp:
                trainer.train(os.path.join(tmp, "m.crfsuite"))
                with open(os.path.join(tmp, "m.crfsuite"), "rb") as fh:
                    direct_model = fh.read()
        del feats
        overhead_wall = (c_fit.wall - c_direct.wall) / c_direct.wall
        overhead_cpu = (c_fit.cpu - c_direct.cpu) / c_direct.cpu
        direct = {
            "features": c_feat.as_dict(),
            "crfsuite_append_and_train": c_direct.as_dict(),
            "same_model_as_adapter": direct_model == tagger.model_,
            "adapter_overhead_ratio_wall": round(overhead_wall, 4),
            "adapter_overhead_ratio_cpu": round(overhead_cpu, 4),
        }
        print(f"direct CRFsuite on the same features: {c_direct.wall:.1f}s wall / {c_direct.cpu:.1f}s CPU "
              f"(features alone {c_feat.wall:.1f}s wall / {c_feat.cpu:.1f}s CPU); same model: {direct['same_model_as_adapter']}")
        print(f"adapter overhead over direct CRFsuite: {overhead_wall:.1%} wall, {overhead_cpu:.1%} CPU (must be < 30%)")
    feature_ratio = st["feature_seconds"] / st["crfsuite_seconds"]
    print(f"feature extraction / CRFsuite training time (inside fit): {feature_ratio:.1%}")

    # --- 3. accuracy -------------------------------------------------------------------------
    scored = score_predictions(dev, preds)
    f1, own = scored["f1"], scored["strict_micro"]
    print(f"CRF strict micro F1 on dev: {f1:.4f} (P {own['precision']:.4f}, R {own['recall']:.4f})")
    for k, v in sorted(scored.get("strict_by_subtype", {}).items()):
        print(f"    {k:45s} F1 {v:.3f}")

    # --- 4. the rule tagger on the same dev set -----------------------------------------------
    rules = RuleTagger(label_map="i2b2-to-meddocan").fit([])
    with Clock() as c_rules:
        rpreds = rules.predict(dev)
    rule_types = {"CORREO_ELECTRONICO", "EDAD_SUJETO_ASISTENCIA", "FECHAS", "ID_ASEGURAMIENTO",
                  "ID_CONTACTO_ASISTENCIAL", "ID_SUJETO_ASISTENCIA", "ID_TITULACION_PERSONAL_SANITARIO",
                  "NUMERO_FAX", "NUMERO_TELEFONO", "URL_WEB", "DIREC_PROT_INTERNET", "OTRO_NUMERO_IDENTIF"}
    rules_known = score_predictions(dev, rpreds, rule_types)["strict_micro"]
    rules_all = score_predictions(dev, rpreds)["strict_micro"]
    print(f"rule tagger on dev: {c_rules.wall:.1f}s; its own types (TERRITORIO/ZIP aside) strict P {rules_known['precision']:.3f} "
          f"R {rules_known['recall']:.3f} F1 {rules_known['f1']:.3f}; all PHI: P {rules_all['precision']:.3f} "
          f"R {rules_all['recall']:.3f}")

    result = {
        "benchmark": "crf on MEDDOCAN train -> dev",
        "when": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "environment": {
            "python": platform.python_version(),
            "python-crfsuite": metadata.version("python-crfsuite"),
            "cpus": os.cpu_count(),
            "load_average_at_end": list(os.getloadavg()),
        },
        "data": {"train_docs": len(train), "train_tokens": n_train_tok, "dev_docs": len(dev), "dev_tokens": n_dev_tok},
        "params": tagger.get_params(),
        "fit": {**c_fit.as_dict(), **{k: (round(v, 3) if isinstance(v, float) else v) for k, v in st.items()}},
        "feature_to_crfsuite_ratio": round(feature_ratio, 4),
        "direct_crfsuite": direct,
        "predict": {**c_pred.as_dict(), "tokens_per_s": round(n_dev_tok / c_pred.wall),
                    "tokens_per_cpu_s": round(n_dev_tok / c_pred.cpu)},
        "strict_micro_f1": round(f1, 4),
        "scores": scored,
        "rules": {"predict": c_rules.as_dict(), "own_types": rules_known, "all_phi": rules_all},
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write_json(args.out, result)
    print(f"wrote {args.out.relative_to(ROOT) if args.out.is_relative_to(ROOT) else args.out}")


if __name__ == "__main__":
    main()
