"""The HTML error-analysis page (``ensemble-deid report``) on MEDDOCAN dev:
build time, page size, and the page in headless Chromium.

    python benchmarks/scoring/bench_report.py                         # the repository root as the workspace
    python benchmarks/scoring/bench_report.py --workspace WS          # WS's registry and cache
    python benchmarks/scoring/bench_report.py --screenshot docs/img/report-meddocan.png

Needs MEDDOCAN registered as ``meddocan`` (train -> dev) and the members'
and ensembles' predictions cached (the members are published in
cached_predictions/meddocan; make the ensembles with ``ensemble-deid
ensemble``). Runs the command as a user would (a fresh interpreter, the
imports included), ``--repeat`` times, then opens the page in headless
Chromium: console errors, network requests, the documents listed, whether
the filters change them, and the time to load. Targets (issue 30): built in
< 30 s on 2 cores, < 20 MB. Writes benchmarks/results/report-meddocan.{json,md}.

MEDDOCAN (CC BY 4.0): Marimon M, Gonzalez-Agirre A, Intxaurrondo A, Rodríguez H,
Lopez Martin J, Villegas M, Krallinger M. IberLEF@SEPLN 2019, pp. 618-638.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common.py and the groups
from chromium import Chromium, find_chromium  # noqa: E402
from common import MEDDOCAN_CITATION, MEDDOCAN_PUBLISHED_MEMBERS, ROOT, console_script, machine_description, machine_lines, progress, shown, write_json, write_markdown  # noqa: E402

MEMBERS = ",".join(MEDDOCAN_PUBLISHED_MEMBERS)
ENSEMBLES = "voting,voting-pruned,decision-templates,stacked-svm,stacked-searn,stacked-lstm"
TARGET_S, TARGET_MB = 30, 20


def build(args, page: Path) -> dict:
    """One run of the command in a fresh interpreter: wall and CPU seconds, peak memory."""
    cmd = [console_script(), "report", "--corpus", args.corpus,
           "--members", args.members, "--ensembles", args.ensembles, "-o", str(page)]
    if args.include_text:
        cmd.append("--include-text")
    env = dict(os.environ)
    if args.workspace:
        env["ENSEMBLE_DEID_HOME"] = args.workspace
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=ROOT)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode:
        raise SystemExit(f"report failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return {"wall_s": round(wall, 2), "cpu_s": round(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, 2),
            "peak_rss_mb": round(after.ru_maxrss / 1024, 1), "output": done.stdout.strip()}


def browse(page: Path, screenshot: str | None, lanes: list[str] | None = None) -> dict:
    count = "document.querySelectorAll('#doc-table tbody tr').length"
    with Chromium(width=1400, height=1000) as b:
        t0 = time.perf_counter()
        b.open(page)
        load_s = time.perf_counter() - t0
        listed = b.evaluate(count)
        b.evaluate("document.querySelectorAll('input.kind').forEach(function(x){ x.checked = x.value === '1'; });"
                   "document.querySelector('input.kind').dispatchEvent(new Event('change'))")
        leaks = b.evaluate(count)
        b.evaluate("var c = document.getElementById('category'); c.value = 'NAME'; c.dispatchEvent(new Event('change'))")
        name_leaks = b.evaluate(count)
        b.evaluate("var c = document.getElementById('category'); c.value = ''; c.dispatchEvent(new Event('change'));"
                   "document.querySelectorAll('input.kind').forEach(function(x){ x.checked = true; });"
                   "document.querySelector('input.kind').dispatchEvent(new Event('change'))")
        t1 = time.perf_counter()
        b.evaluate("document.querySelector('#doc-table tbody tr').click()")
        view_s = time.perf_counter() - t1
        shots = []
        if lanes:  # keep only these lanes in the document view (the screenshot's)
            b.evaluate("""(function(keep){
                for (;;) {  // each click redraws the view: look the boxes up again
                  const box = Array.from(document.querySelectorAll('input.lane-box')).find(function(x){
                    return x.checked !== keep.includes(x.parentNode.textContent.trim()); });
                  if (!box) return;
                  box.click();
                } })(%s)""" % json.dumps(lanes))
        if screenshot:
            # with note text: the first text the ranked system leaks, else the documents section
            b.evaluate("""(function(){
                const leak = document.querySelector('#text-view .seg.leak');
                if (leak) window.scrollTo(0, leak.getBoundingClientRect().top + window.scrollY - 350);
                else document.getElementById('documents').scrollIntoView(); })()""")
            shots.append(str(b.screenshot(screenshot)))
            top = Path(screenshot).with_name(Path(screenshot).stem + "-top.png")
            b.evaluate("window.scrollTo(0, 0)")
            shots.append(str(b.screenshot(top)))
        return {"problems": b.problems(), "requests": len(b.requests()), "load_s": round(load_s, 2),
                "document_view_s": round(view_s, 2), "documents_listed": listed, "with_leaks": leaks,
                "with_name_leaks": name_leaks, "screenshots": [shown(Path(s)) for s in shots]}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workspace", help="workspace with the registry and cache (default: ENSEMBLE_DEID_HOME or the repository)")
    parser.add_argument("--corpus", default="meddocan")
    parser.add_argument("--members", default=MEMBERS)
    parser.add_argument("--ensembles", default=ENSEMBLES)
    parser.add_argument("--include-text", action="store_true", help="measure the page with note text (kept in a temporary folder)")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--screenshot", help="also save screenshots of the documents section and of the top (a PNG path)")
    parser.add_argument("--lanes", help="comma-separated lanes kept in the screenshot's document view (gold, system names)")
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "report-meddocan.json"))
    args = parser.parse_args(argv)
    if not find_chromium():
        raise SystemExit("no Chromium found (apt-get install chromium)")
    machine = machine_description()
    with tempfile.TemporaryDirectory(prefix="bench-report-") as tmp:
        page = Path(tmp) / "report.html"
        runs = []
        for i in range(args.repeat):
            progress(f"report run {i + 1} of {args.repeat}")
            runs.append(build(args, page))
        size_mb = page.stat().st_size / 1e6
        progress("headless Chromium")
        browser = browse(page, args.screenshot, args.lanes.split(",") if args.lanes else None)
    best = min(r["wall_s"] for r in runs)
    result = {
        "command": " ".join(["python benchmarks/scoring/bench_report.py", *(argv if argv is not None else sys.argv[1:])]),
        "corpus": args.corpus, "members": args.members, "ensembles": args.ensembles, "include_text": args.include_text,
        "runs": runs, "best_wall_s": best, "size_mb": round(size_mb, 2), "browser": browser,
        "targets": {"build_s": TARGET_S, "size_mb": TARGET_MB},
        "met": {"build": best < TARGET_S, "size": size_mb < TARGET_MB, "no_console_errors": not browser["problems"]},
        "machine": machine, "citation": MEDDOCAN_CITATION,
    }
    write_json(Path(args.out), result)
    from ensemble_deid.ensemble.run import parse_members  # a member's own parameters hold commas too
    n_members, n_ens = len(parse_members(args.members)[0]), len([e for e in args.ensembles.split(",") if e])
    lines = [
        f"# The report page on MEDDOCAN dev: {n_members} members, {n_ens} ensembles",
        "",
        f"`{result['command']}` ({MEDDOCAN_CITATION}; dev split, 250 documents).",
        "",
        "| figure | value | target |",
        "|---|--:|--:|",
        *(f"| build, run {i + 1} (wall s; CPU s) | {r['wall_s']:.1f}; {r['cpu_s']:.1f} | < {TARGET_S} |"
          for i, r in enumerate(runs)),
        f"| peak memory (MB) | {max(r['peak_rss_mb'] for r in runs):.0f} | |",
        f"| page size (MB{', with note text' if args.include_text else ', no note text'}) | {size_mb:.2f} | < {TARGET_MB} |",
        f"| Chromium: console errors and warnings | {len(browser['problems'])} | 0 |",
        f"| Chromium: requests (the page itself) | {browser['requests']} | 1 |",
        f"| Chromium: load (s) | {browser['load_s']:.2f} | |",
        f"| Chromium: open the first document (s) | {browser['document_view_s']:.2f} | |",
        f"| documents listed: any error / leaks / NAME leaks | {browser['documents_listed']} / {browser['with_leaks']} / "
        f"{browser['with_name_leaks']} | |",
        "",
        "The command's own line (last run): " + runs[-1]["output"].replace(str(page), "report.html"),
        "",
        "The command is single-threaded: its CPU seconds are about what it takes on an idle machine; the wall "
        "time above is at the load shown below (other work sharing the two cores).",
        "",
        *machine_lines(machine),
    ]
    write_markdown(Path(args.out).with_suffix(".md"), "\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
