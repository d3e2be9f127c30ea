"""Model bundles on MEDDOCAN: what the CRFsuite file check costs, how many
training PHI words a bundle holds, and what ``fit --shareable K`` costs in F1.

    # the bundles (train 500 -> dev 250; the corpus registered as in docs/benchmarks.md):
    ensemble-deid fit --corpus meddocan --tagger crf --out models/crf-plain
    ensemble-deid fit --corpus meddocan --tagger crf --shareable 2 --out models/crf-shareable-2
    python benchmarks/deidentify/bench_bundle.py models/crf-plain models/crf-shareable-2
    # any registered or embedded corpus (its training notes give the PHI words):
    python benchmarks/deidentify/bench_bundle.py --corpus synthetic-2014 --out benchmarks/results/bundle-synthetic.json A B

For each bundle: seconds of ``check_crfsuite_model`` on each CRFsuite model
file against the seconds CRFsuite takes to open it and of the whole
``Deidentifier.load`` (medians of 5, wall and CPU, with the load average
before and after); the distinct PHI words of the training
annotations (whole words of >= 4 letters) found as feature words in the
bundle's files; its test (dev) strict scores from the manifest. K was fixed
before any run (2: no word of a single note), not chosen on dev. Writes
benchmarks/results/bundle.json and .md.

MEDDOCAN (CC BY 4.0): Marimon M, Gonzalez-Agirre A, Intxaurrondo A, Rodríguez H,
Lopez Martin J, Villegas M, Krallinger M. IberLEF@SEPLN 2019, pp. 618-638.
"""
from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common.py and the groups
from common import (MEDDOCAN, ROOT, load1, load_range, machine_description, machine_lines, repeat, shown,  # noqa: E402
                    write_json, write_markdown)


def median_seconds(fn, repeats: int = 5) -> tuple[float, float]:
    """Median wall and median CPU seconds of ``repeats`` calls (``common.repeat``)."""
    timed = repeat(fn, repeats)
    return timed["median_s"], timed["cpu_median_s"]


def training_phi_words(docs) -> set[str]:
    return {w.lower() for d in docs for a in d.annotations for w in re.findall(r"[^\W\d_]{4,}", d.text[a.start:a.end])}


def words_in_bundle(folder: Path, words: set[str]) -> set[str]:
    """The ``words`` that occur as a whole feature word (after ``=`` or ``|``,
    before ``|`` or the end of the string) in any file of the bundle."""
    found: set[str] = set()
    for f in folder.rglob("*"):
        if f.is_file():
            text = f.read_bytes().decode("utf-8", errors="replace").lower()
            found |= {w for w in re.findall(r"(?<=[=|])([^\W\d_]{4,})(?=[|\x00\"\n])", text) if w in words}
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("bundles", nargs="+", type=Path)
    parser.add_argument("--corpus", help="the bundles' training corpus in the workspace (default: MEDDOCAN's files)")
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "bundle.json"))
    args = parser.parse_args()

    import pycrfsuite

    from ensemble_deid.corpus.formats import load_directory
    from ensemble_deid.deid import Deidentifier, read_manifest
    from ensemble_deid.taggers.crfsuite_file import check_crfsuite_model

    if args.corpus:
        from ensemble_deid.corpus.workspace import Workspace

        train = Workspace().load(args.corpus).train
    else:
        train = load_directory(MEDDOCAN / "train" / "xml")
    corpus = args.corpus or "meddocan (train 500 -> dev 250)"
    phi = training_phi_words(train)
    machine = machine_description()
    rows = {}
    for bundle in args.bundles:
        manifest = read_manifest(bundle)
        models = [p for p in bundle.rglob("*.bin") if p.read_bytes()[:4] == b"lCRF"]
        load_before = load1()
        check = open_ = (0.0, 0.0)  # (wall, CPU) seconds
        for path in models:
            data = path.read_bytes()
            check = tuple(a + b for a, b in zip(check, median_seconds(lambda: check_crfsuite_model(data, str(path)))))

            def open_model():
                tagger = pycrfsuite.Tagger()
                tagger.open_inmemory(data)
                tagger.close()
            open_ = tuple(a + b for a, b in zip(open_, median_seconds(open_model)))
        load = median_seconds(lambda: Deidentifier.load(bundle))
        found = words_in_bundle(bundle, phi)
        scores = (manifest.get("scores") or {}).get("test_strict") or {}
        rows[bundle.name] = {
            "shareable_k": (manifest.get("shareable") or {}).get("min_documents"),
            "crfsuite_mb": round(sum(p.stat().st_size for p in models) / 2**20, 2),
            "check_seconds": round(check[0], 4), "check_cpu_seconds": round(check[1], 4),
            "crfsuite_open_seconds": round(open_[0], 6), "crfsuite_open_cpu_seconds": round(open_[1], 6),
            "load_seconds": round(load[0], 3), "load_cpu_seconds": round(load[1], 3),
            "load_average_1min": [load_before, load1()],
            "training_phi_words_found": len(found), "training_phi_words": len(phi),
            "test_strict": {k: scores.get(k) for k in ("precision", "recall", "f1")},
        }
        r = rows[bundle.name]
        print(f"{bundle.name}: {r['crfsuite_mb']} MB CRFsuite; check {r['check_seconds']} s, open {r['crfsuite_open_seconds']} s, "
              f"load {r['load_seconds']} s; {len(found)} of {len(phi)} training PHI words found; test strict F1 "
              f"{scores.get('f1')}")
    data = {"benchmark": "bundle", "corpus": corpus, "bundles": rows, "nice": os.nice(0), "machine": machine}
    print(f"wrote {shown(write_json(Path(args.out), data))}")
    lines = "\n".join(
        f"| `{name}` | {r['shareable_k'] or '-'} | {r['crfsuite_mb']} | {r['check_seconds']} ({r['check_cpu_seconds']}) "
        f"| {r['crfsuite_open_seconds']:.6f} ({r['crfsuite_open_cpu_seconds']:.6f}) | {r['load_seconds']} ({r['load_cpu_seconds']}) "
        f"| {load_range(*r['load_average_1min'])} | {r['training_phi_words_found']} / {r['training_phi_words']} "
        f"| {r['test_strict']['precision']:.4f} | {r['test_strict']['recall']:.4f} | {r['test_strict']['f1']:.4f} |"
        for name, r in rows.items())
    source = ("MEDDOCAN, train 500 -> dev 250; CC BY 4.0, Marimon et al., IberLEF@SEPLN 2019" if not args.corpus
              else f"corpus {args.corpus}, its train -> test split")
    md = (f"# Model bundles ({corpus}): file check, training PHI, shareable mode\n\n"
          "`python benchmarks/deidentify/bench_bundle.py " + (f"--corpus {args.corpus} " if args.corpus else "")
          + " ".join(str(b) for b in args.bundles) + f"` (CRF with default settings; {source}). Seconds are "
          f"medians of 5, wall (CPU), at nice {data['nice']}; the load average (1 minute) before and after each "
          "bundle's timings; PHI words: distinct whole words (>= 4 letters) of the training annotations found as "
          "feature words in the bundle.\n\n"
          "| bundle | shareable K | CRFsuite MB | check s (CPU s) | CRFsuite open s (CPU s) | bundle load s (CPU s) "
          "| load (1 min) | training PHI words found | test P | test R | test F1 |\n"
          "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n" + lines + "\n\n"
          + "\n".join(machine_lines(machine)))
    print(f"wrote {shown(write_markdown(Path(args.out).with_suffix('.md'), md))}")


if __name__ == "__main__":
    main()
