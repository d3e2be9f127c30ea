"""Size of a published prediction folder (``cache publish``) on MEDDOCAN.

    python benchmarks/scale/bench_publish.py                      # cv in a temporary workspace, then publish
    python benchmarks/scale/bench_publish.py --workspace WS       # reuse WS's cache (cv computes only what is missing)
    python benchmarks/scale/bench_publish.py --taggers 'rules:label_map=i2b2-to-meddocan,crf:max_iterations=5'

Runs (or reuses) the 10-fold CV of each tagger on MEDDOCAN train -> dev,
publishes the entries into a temporary folder, and reports the bytes per
tagger and per part, the extrapolation to 12 taggers (the issue 18 target is
< 50 MB), the seconds ``verify`` takes on the folder, and whether any word of
the notes occurs in it. Writes benchmarks/results/publish.json.

MEDDOCAN (CC BY 4.0): Marimon M, Gonzalez-Agirre A, Intxaurrondo A, Rodríguez H,
Lopez Martin J, Villegas M, Krallinger M. IberLEF@SEPLN 2019, pp. 618-638.
"""
from __future__ import annotations

import argparse
import re
import sys
import tempfile
import time
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common.py and the groups
from common import MEDDOCAN, ROOT, machine_description, machine_lines, progress, shown, write_json, write_markdown  # noqa: E402

DEFAULT_TAGGERS = "rules:label_map=i2b2-to-meddocan,crf:max_iterations=5"
TARGET_MB = 50
TAGGERS_IN_STUDY = 12


def text_found(folder: Path, docs) -> list[str]:
    """The distinct words (>= 5 letters) of the notes that occur as whole words in any published file."""
    import numpy as np

    words = {w for d in docs for w in d.tokens.words if len(w) >= 5 and w.isalpha()}
    blobs = []
    for f in folder.rglob("*"):
        if f.suffix == ".npz":
            with np.load(f, allow_pickle=False) as npz:
                blobs += [" ".join(npz[k].tolist()) for k in npz.files if npz[k].dtype.kind == "U"]
            with zipfile.ZipFile(f) as z:
                blobs += [n for n in z.namelist()]
        elif f.is_file():
            blobs.append(f.read_text(encoding="utf-8"))
    found = set(re.findall(r"[^\W\d_]+", "\n".join(blobs)))
    return sorted(words & found)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--taggers", default=DEFAULT_TAGGERS)
    parser.add_argument("--workspace", help="a workspace whose cache to reuse (default: a temporary one)")
    parser.add_argument("--folds", type=int, default=10)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "publish.json"))
    args = parser.parse_args()

    from ensemble_deid.experiment.cv import parse_tagger_specs
    from ensemble_deid.corpus.workspace import CorpusSpec, Workspace
    from ensemble_deid.experiment.cache import PredictionCache, PublishedFolder
    from ensemble_deid.experiment.cv import CrossValidation
    from ensemble_deid.experiment.publish import publish

    machine = machine_description()
    specs = parse_tagger_specs(args.taggers)
    with tempfile.TemporaryDirectory(prefix="bench-publish-") as tmp:
        ws = Workspace(args.workspace or Path(tmp) / "ws")
        if "meddocan" not in ws.corpus_specs():
            ws.add_corpus(CorpusSpec("meddocan", {"train": str(MEDDOCAN / "train" / "xml"),
                                                  "test": str(MEDDOCAN / "dev" / "xml")}))
        corpus = ws.load("meddocan")
        cache = PredictionCache(ws.cache_dir, published=())
        progress(f"cv of {len(specs)} tagger(s), {args.folds} folds, cache {ws.cache_dir}")
        t0 = time.perf_counter()
        runs = CrossValidation(corpus.train, {"test": corpus.test}, cache, k=args.folds).run(
            specs, jobs=args.jobs, progress=False)
        cv_seconds = time.perf_counter() - t0
        out = Path(tmp) / "published" / "meddocan"
        out.parent.mkdir()
        t0 = time.perf_counter()
        result = publish(cache, corpus, out, licence="CC BY 4.0", specs=specs, k=args.folds)
        publish_seconds = time.perf_counter() - t0
        t0 = time.perf_counter()
        problems = PublishedFolder(out).verify()
        verify_seconds = time.perf_counter() - t0
        leaked = text_found(out, corpus.train + corpus.test)
        documents_bytes = sum(f.stat().st_size for f in (out / "documents").iterdir())
    per_tagger = {
        label: {"mb": round(size / 2**20, 3), "parts": len(runs[label].records),
                "tokens": sum(r.get("tokens", 0) for r in runs[label].records)}
        for label, size in result.bytes_by_label.items()
    }
    largest = max(v["mb"] for v in per_tagger.values())
    estimate = TAGGERS_IN_STUDY * largest + documents_bytes / 2**20
    data = {
        "benchmark": "publish", "corpus": "meddocan (train 500 -> dev 250)", "folds": args.folds,
        "taggers": per_tagger, "documents_mb": round(documents_bytes / 2**20, 3),
        "total_mb": round(result.total_bytes / 2**20, 3),
        "estimate_12_taggers_mb": round(estimate, 2), "target_mb": TARGET_MB,
        "meets_target": estimate < TARGET_MB, "note_words_found": len(leaked), "note_words": leaked[:20], "verify_problems": len(problems),
        "seconds": {"cv": round(cv_seconds, 1), "publish": round(publish_seconds, 2), "verify": round(verify_seconds, 2)},
        "machine": machine,
    }
    for label, v in per_tagger.items():
        print(f"{label}: {v['mb']:.3f} MB for {v['parts']} parts ({v['tokens']:,} tokens)")
    print(f"documents (token offsets of train and dev): {data['documents_mb']:.3f} MB")
    print(f"total {data['total_mb']:.3f} MB; 12 taggers at the largest size: {estimate:.1f} MB (target < {TARGET_MB} MB)")
    print(f"words of the notes found in the folder: {len(leaked)} {leaked[:20]}; verify: {len(problems)} problem(s) in {verify_seconds:.2f} s")
    print(f"wrote {shown(write_json(Path(args.out), data))}")
    rows = "\n".join(f"| `{label}` | {v['parts']} | {v['tokens']:,} | {v['mb']:.3f} |" for label, v in per_tagger.items())
    md = (
        f"# Published predictions: size on MEDDOCAN\n\n"
        f"`python benchmarks/scale/bench_publish.py --taggers '{args.taggers}'` ({args.folds} folds, train 500 -> dev 250 "
        f"documents; MEDDOCAN, CC BY 4.0, Marimon et al., IberLEF@SEPLN 2019).\n\n"
        f"| tagger | parts | tokens | MB |\n|---|--:|--:|--:|\n{rows}\n"
        f"| documents (token offsets) | | | {data['documents_mb']:.3f} |\n\n"
        f"Total {data['total_mb']:.3f} MB. Twelve taggers at the largest size above: "
        f"{estimate:.1f} MB (target < {TARGET_MB} MB: {'met' if data['meets_target'] else 'NOT met'}). "
        f"Words of the notes found in the folder (whole words, >= 5 letters): {len(leaked)} {leaked[:20]}. `verify`: {len(problems)} problem(s) in "
        f"{verify_seconds:.2f} s.\n\n" + "\n".join(machine_lines(machine))
    )
    print(f"wrote {shown(write_markdown(Path(args.out).with_suffix('.md'), md))}")


if __name__ == "__main__":
    main()
