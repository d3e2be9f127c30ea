"""The review page (``ensemble-deid review page``) at MEDDOCAN scale: build
time, page size, and the page in headless Chromium (load, time per key press).

    python benchmarks/deidentify/bench_review_page.py
    python benchmarks/deidentify/bench_review_page.py --items-per-note 40

The queue is a stand-in built from MEDDOCAN dev's gold spans (up to
``--items-per-note`` per note, masked now, as many items as a generous
review budget gives): the page's cost depends on the number of items and
the size of their windows, not on how they were chosen. Targets: a key
press (accept, then the next item drawn) under 100 ms, no console error,
one request. Writes benchmarks/results/review-page-meddocan.{json,md}.

MEDDOCAN (CC BY 4.0): Marimon M, Gonzalez-Agirre A, Intxaurrondo A, Rodríguez H,
Lopez Martin J, Villegas M, Krallinger M. IberLEF@SEPLN 2019, pp. 618-638.
"""
from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common.py and the groups
from chromium import Chromium, find_chromium  # noqa: E402
from common import MEDDOCAN_CITATION, ROOT, machine_description, machine_lines, progress, write_json, write_markdown  # noqa: E402

TARGET_KEY_MS = 100
KEYS = 50


def queue_and_page(dev: Path, per_note: int, folder: Path) -> dict:
    from ensemble_deid.corpus.formats import read_i2b2_xml
    from ensemble_deid.deid.redact import pieces
    from ensemble_deid.deid.review import Queue, ReviewItem
    from ensemble_deid.deid.review_page import build_review_page
    from ensemble_deid.studies.html_report import write_page

    docs = {}
    for path in sorted(dev.glob("*.xml")):
        doc, _ = read_i2b2_xml(path)
        docs[doc.id] = doc
    rng = random.Random(0)
    items, current = [], {}
    for d, (doc_id, doc) in enumerate(docs.items()):
        current[doc_id] = sorted(doc.annotations, key=lambda a: (a.start, a.end))
        for n, a in enumerate(current[doc_id][:per_note]):
            items.append(ReviewItem(f"{d}-{n}", doc_id, a.start, a.end, a.label, rng.random(), "near-threshold", "phi"))
    t0 = time.perf_counter()
    queue = Queue({"queue": 1, "bundle": None, "budget": {}, "items": len(items)}, tuple(items))
    page = build_review_page(queue, "0" * 64, docs, current, {i: pieces(d, current[i], "mask") for i, d in docs.items()})
    path = write_page(folder / "review.html", page)
    return {"notes": len(docs), "items": len(items), "build_s": round(time.perf_counter() - t0, 2),
            "size_mb": round(path.stat().st_size / 1e6, 2), "path": path}


def browse(page: Path) -> dict:
    with Chromium() as b:
        t0 = time.perf_counter()
        b.open(page)
        load_s = time.perf_counter() - t0
        # in the page: the handler and the layout it forces, per key press
        per_key = b.evaluate(f"""(function(){{ const t0 = performance.now();
          for (let i = 0; i < {KEYS}; i++) {{ document.dispatchEvent(new KeyboardEvent('keydown', {{key: 'a'}}));
            document.body.offsetHeight; }}
          return (performance.now() - t0) / {KEYS}; }})()""")
        decided = b.evaluate("document.getElementById('progress').textContent")
        return {"load_s": round(load_s, 2), "key_ms": round(per_key, 1), "progress": decided,
                "problems": b.problems(), "requests": len(b.requests())}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dev", default=str(ROOT.parent / "shared" / "corpora" / "meddocan" / "dev" / "xml"))
    parser.add_argument("--items-per-note", type=int, default=20)
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "review-page-meddocan.json"))
    args = parser.parse_args(argv)
    if not find_chromium():
        raise SystemExit("no Chromium found (apt-get install chromium)")
    machine = machine_description()
    with tempfile.TemporaryDirectory(prefix="bench-review-") as tmp:
        progress("building the page")
        built = queue_and_page(Path(args.dev), args.items_per_note, Path(tmp))
        progress("headless Chromium")
        browser = browse(built.pop("path"))
    result = {"command": " ".join(["python benchmarks/deidentify/bench_review_page.py", *(argv if argv is not None else sys.argv[1:])]),
              **built, "browser": browser, "targets": {"key_ms": TARGET_KEY_MS},
              "met": {"key": browser["key_ms"] < TARGET_KEY_MS, "no_console_errors": not browser["problems"],
                      "one_request": browser["requests"] == 1},
              "machine": machine, "citation": MEDDOCAN_CITATION}
    write_json(Path(args.out), result)
    lines = [
        f"# The review page at MEDDOCAN scale: {built['items']} items in {built['notes']} notes",
        "",
        f"`{result['command']}` ({MEDDOCAN_CITATION}; dev split; a stand-in queue of up to {args.items_per_note} "
        "gold spans per note).",
        "",
        "| figure | value | target |",
        "|---|--:|--:|",
        f"| items | {built['items']} | |",
        f"| build (s) | {built['build_s']:.1f} | |",
        f"| page size (MB, with note text) | {built['size_mb']:.2f} | |",
        f"| Chromium: load (s) | {browser['load_s']:.2f} | |",
        f"| Chromium: a key press, handler and layout (ms) | {browser['key_ms']:.1f} | < {TARGET_KEY_MS} |",
        f"| Chromium: console errors and warnings | {len(browser['problems'])} | 0 |",
        f"| Chromium: requests (the page itself) | {browser['requests']} | 1 |",
        "",
        *machine_lines(machine),
    ]
    write_markdown(Path(args.out).with_suffix(".md"), "\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
