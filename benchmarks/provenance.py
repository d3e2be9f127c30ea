"""Where each results file came from, and whether the code it measured has
changed since.

Every file in ``benchmarks/results/`` carries a provenance record: a JSON
results file a top-level ``"provenance"`` object, a Markdown one a first line

    <!-- provenance: {"script": ..., "command": ..., "commit": ..., "fingerprint": ...} -->

``common.write_json`` and ``common.write_markdown`` write it for every
script run as ``python benchmarks/<group>/<script>.py``: the script, the
command line, the commit checked out (and whether tracked files were
modified) and the fingerprint of the code the script depends on.

The fingerprint hashes the script itself, the definitions it imports from
``common.py`` and the other scripts (with what those import in turn), every
package module it names (a named package: every module under it), and the
folders ``DEPENDS`` adds for a script that runs the command line as a child
process. Docstrings, comments, import statements and ``sys.path`` lines are
left out, so moving or documenting code changes no fingerprint; any other
change does. A results file is stale when the current tree's fingerprint
of its script differs from its record: ``benchmarks/stale.json`` lists every
stale file with the reason it was not regenerated, and
``tests/test_benchmark_provenance.py`` requires that list to be exactly the
stale files (a newly stale file fails with its regeneration command; a
regenerated one must leave the list). Results of the scripts in
``HISTORICAL`` are a record of a study no longer run, never checked.

    python benchmarks/provenance.py                # the index table into docs/benchmarks.md
    python benchmarks/provenance.py --check        # exit 1 if the index or stale.json is out of date
    python benchmarks/provenance.py stale          # each stale file, why, and its command
    python benchmarks/provenance.py stale --write --reason "..."   # list the newly stale ones with a reason
    python benchmarks/provenance.py record FILE --script S --command C   # a record for a file made elsewhere
"""
from __future__ import annotations

import argparse
import ast
import copy
import hashlib
import json
import shlex
import sys
import time
from functools import lru_cache
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import RESULTS, ROOT, _atomic_write_text, git_revision, shown  # noqa: E402

BENCH = ROOT / "benchmarks"
STALE = BENCH / "stale.json"
DOC = ROOT / "docs" / "benchmarks.md"
MARK = "<!-- provenance: "
INDEX_BEGIN = "<!-- results index (python benchmarks/provenance.py) -->"
INDEX_END = "<!-- end of results index -->"

# Folders a script's figures depend on that it does not import: it times or runs
# the ``ensemble-deid`` command as a child process.
CLI = ("ensemble_deid/cli",)
DEPENDS = {
    "benchmarks/scale/bench_commands.py": ("ensemble_deid",),  # the demo: the whole package
    "benchmarks/members/cv_runs.py": CLI + ("ensemble_deid/experiment", "ensemble_deid/taggers", "adapters"),
    "benchmarks/deidentify/bench_deidentify.py": CLI + ("ensemble_deid/deid", "ensemble_deid/ensemble",
                                                        "ensemble_deid/taggers", "adapters"),
    "benchmarks/deidentify/bench_dask.py": CLI + ("ensemble_deid/deid",),
    "benchmarks/deidentify/bench_stream.py": CLI + ("ensemble_deid/deid",),
    "benchmarks/deidentify/deidentify_profile.py": CLI + ("ensemble_deid/deid", "ensemble_deid/taggers", "adapters"),
    "benchmarks/scoring/bench_scorer.py": CLI + ("ensemble_deid/evaluation",),
    "benchmarks/scoring/bench_report.py": CLI + ("ensemble_deid/evaluation",),
    "benchmarks/scale/bench_publish.py": CLI + ("ensemble_deid/experiment",),
}

# Helpers of common.py that write or describe a run, never compute a figure: left out
# of the fingerprint (as is provenance.py itself), so a change to how results are
# written does not make every results file stale.
NOT_FIGURES = {"write_json", "write_markdown", "_record", "_atomic_write_text", "machine_description",
               "machine_lines", "progress", "shown", "replace_between_markers", "git_revision"}

# Studies no longer run (a script, or one results file): their results stay as the
# record of a finished study and are never checked against the current code.
_CV_LOG = ("the log of a finished long CV run (issue 29): the CPU time and load it took; its parts "
           "are published predictions, and a rerun would be another run")
HISTORICAL = {
    "benchmarks/ensembles/bench_stacked.py": "a one-off speed comparison with revision 538a320 (the stacked "
                                             "learners' speed fix); a rerun measures against an ever older baseline",
    "benchmarks/members/bench_neural_vs_crf.py": "paired tests of the version-1 neural models against the CRF "
                                                 "(2026-11-21); the neural defaults are version 2 since 44db6d8",
    "neural-settings-tried.json": "the settings tried while choosing the version-2 neural defaults (one-off)",
    "neural-throughput.json": "the batch-size sweep behind the version-2 neural defaults (one-off)",
    "neural-gpu.json": "one run on a lent GPU (NVIDIA H200, 2026-11-26); no GPU here to rerun it",
    **{f"cv-runs-{label}.{ext}": _CV_LOG for label in ("lstm-l-bio-decode", "lstm-l-hybrid", "members-train",
                                                       "neural-train", "train-dev-750") for ext in ("json", "md")},
}


# --- the fingerprint ---------------------------------------------------------------------------

def _strip(tree: ast.AST) -> ast.AST:
    """``tree`` without docstrings, import statements and ``sys.path`` lines."""
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if not isinstance(body, list):
            continue
        kept = []
        for i, stmt in enumerate(body):
            if isinstance(stmt, (ast.Import, ast.ImportFrom)):
                continue
            if (i == 0 and isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)
                    and isinstance(stmt.value.value, str)
                    and isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))):
                continue  # a docstring
            if (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)
                    and ast.unparse(stmt.value.func).startswith("sys.path.")):
                continue
            kept.append(stmt)
        node.body = kept
    return tree


@lru_cache(maxsize=None)
def _parsed(path: Path) -> ast.Module | None:
    try:
        return ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError):
        return None


def _dump(node: ast.AST) -> str:
    """A definition's normalised code (the cached tree is left as it is)."""
    return ast.dump(_strip(copy.deepcopy(node)), annotate_fields=False, include_attributes=False)


@lru_cache(maxsize=None)
def _file_dump(path: Path) -> str:
    """A whole file's normalised code ("" when it is missing or not Python)."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError):
        return ""
    return ast.dump(_strip(tree), annotate_fields=False, include_attributes=False)


def _imports(node: ast.AST) -> list[tuple[str, tuple[str, ...]]]:
    """(module, names) of every import statement in ``node``, however deep."""
    out = []
    for n in ast.walk(node):
        if isinstance(n, ast.Import):
            out += [(a.name, ()) for a in n.names]
        elif isinstance(n, ast.ImportFrom) and n.module and not n.level:
            out.append((n.module, tuple(a.name for a in n.names)))
    return out


def _package_paths(root: Path, module: str, names: tuple[str, ...]) -> set[str]:
    """The files of a package module named by an import: the module's file, or
    every module under a package (``from ensemble_deid import x``: ``x`` alone)."""
    top, _, rest = module.partition(".")
    base = {"ensemble_deid": "ensemble_deid", "ensemble_deid_adapters": "adapters"}[top]
    parts = [base, *rest.split(".")] if rest else [base]
    if not rest and names:  # the package's top: what it names, not all of it
        found = set()
        for name in names:
            found |= _package_paths(root, f"{module}.{name}", ()) or {f"{base}/__init__.py"}
        return found
    folder, file = root.joinpath(*parts), root.joinpath(*parts[:-1], parts[-1] + ".py")
    if folder.is_dir():
        return {relative_to(p, root) for p in folder.rglob("*.py")}
    return {relative_to(file, root)} if file.is_file() else set()


def relative_to(path: Path, root: Path) -> str:
    return path.relative_to(root).as_posix()


def _bench_module(root: Path, module: str) -> Path | None:
    """The file of a benchmark module (``common``, ``scale.bench_pruning``) under ``root``'s benchmarks/."""
    path = root / "benchmarks" / (module.replace(".", "/") + ".py")
    return path if path.is_file() else None


def _definition(tree: ast.Module, name: str) -> ast.AST | None:
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name:
            return node
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                return node
    return None


def dependencies(script: str, root: Path = ROOT, known_as: str | None = None) -> dict[str, ast.AST | None]:
    """What ``script`` (a path relative to ``root``) depends on: label -> the
    node hashed (a whole file when None). ``known_as``: the script's path in
    ``DEPENDS`` when ``root`` is an older tree where it lay elsewhere."""
    found: dict[str, ast.AST | None] = {}
    pending: list[tuple[str, ast.AST]] = []
    tree = _parsed(root / script)
    if tree is None:
        raise FileNotFoundError(f"{script}: not a readable Python file under {root}")
    found["script"] = tree
    pending.append(("script", tree))
    for folder in DEPENDS.get(known_as or script, ()):
        where = root / folder
        files = where.rglob("*.py") if where.is_dir() else [where]
        found.update({relative_to(p, root): None for p in files if p.is_file()})
    while pending:
        _, node = pending.pop()
        for module, names in _imports(node):
            top = module.partition(".")[0]
            if top in ("ensemble_deid", "ensemble_deid_adapters"):
                for path in _package_paths(root, module, names):
                    found.setdefault(path, None)
                continue
            bench = _bench_module(root, module)
            if bench is None:  # the standard library or a third-party distribution
                continue
            if module == "provenance":
                continue
            btree = _parsed(bench)
            for name in names or ():
                if module == "common" and name in NOT_FIGURES:
                    continue
                sub = _bench_module(root, f"{module}.{name}")
                if sub is not None:  # ``from ensembles import recall_first``: the whole script
                    label, target = f"{module}.{name}", _parsed(sub)
                else:
                    label, target = f"{module}:{name}", _definition(btree, name)
                if target is not None and label not in found:
                    found[label] = target
                    pending.append((label, target))
    return found


def fingerprint(script: str, root: Path = ROOT, known_as: str | None = None) -> str:
    """A hash of the code ``script``'s figures depend on (see the module's docstring)."""
    h = hashlib.sha256()
    for label, node in sorted(dependencies(script, root, known_as).items()):
        text = _file_dump(root / (script if label == "script" else label)) if node is None or label == "script" \
            else _dump(node)
        h.update(label.encode() + b"\0" + text.encode() + b"\0")
    return h.hexdigest()[:16]


# --- records -----------------------------------------------------------------------------------

def current_record() -> dict | None:
    """The record of the running script, or None when the running program is
    not a benchmark script (a test, a notebook)."""
    main = Path(sys.argv[0]).resolve() if sys.argv and sys.argv[0] else None
    if main is None or not main.is_file() or not main.is_relative_to(BENCH) or main.suffix != ".py":
        return None
    script = shown(main)
    rev = git_revision()
    record = {"script": script, "command": shlex.join(["python", script, *sys.argv[1:]]),
              "commit": rev.get("commit"), "modified_tracked_files": rev.get("modified_tracked_files"),
              "fingerprint": fingerprint(script), "written": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    if "--tables" in sys.argv[1:]:  # tables rendered from a results file made earlier: as current as it is
        record["tables_only"] = True
    return record


def with_record(path: Path, text: str, record: dict | None) -> str:
    """``text`` of a results file with ``record`` in it: a JSON object's
    ``provenance`` field, a Markdown file's first line. A file of the
    repository outside benchmarks/results (the docs a script writes tables
    into) gets none."""
    where = Path(path).resolve()
    if record is None or (where.is_relative_to(ROOT) and not where.is_relative_to(RESULTS)):
        return text
    if Path(path).suffix == ".json":
        data = json.loads(text)
        if not isinstance(data, dict):
            return text
        if "provenance" in data or not data:
            return json.dumps({**data, "provenance": record}, indent=2, default=str) + "\n"
        # the record after the last field, the rest of the file as it was written
        head = text.rstrip()[:-1].rstrip()
        return head + ',\n  "provenance": ' + json.dumps(record, sort_keys=True) + "\n}\n"
    return MARK + json.dumps(record, sort_keys=True) + " -->\n" + body(text)


def body(text: str) -> str:
    """A Markdown results file's text without its provenance line."""
    return text.split("\n", 1)[1] if text.startswith(MARK) else text


def read_record(path: Path) -> dict | None:
    text = Path(path).read_text(encoding="utf-8")
    if Path(path).suffix == ".json":
        try:
            data = json.loads(text)
        except ValueError:
            return None
        return data.get("provenance") if isinstance(data, dict) else None
    if not text.startswith(MARK):
        return None
    line = text.split("\n", 1)[0]
    return json.loads(line[len(MARK):-len(" -->")])


def results_files() -> list[Path]:
    return sorted(p for p in RESULTS.iterdir() if p.is_file() and not p.name.startswith("."))


def stale_list() -> dict[str, str]:
    return json.loads(STALE.read_text(encoding="utf-8")) if STALE.is_file() else {}


def status(path: Path, record: dict | None, fingerprints: dict) -> tuple[str, str]:
    """("current" | "stale" | "historical" | "no record", why)."""
    if record is None or not record.get("script"):
        return "no record", "the file names no script"
    script = record["script"]
    if script in HISTORICAL or path.name in HISTORICAL:
        return "historical", HISTORICAL.get(path.name) or HISTORICAL[script]
    if not (ROOT / script).is_file():
        return "no record", f"{script} does not exist"
    if script not in fingerprints:
        fingerprints[script] = fingerprint(script)
    if fingerprints[script] != record.get("fingerprint"):
        return "stale", f"the code {script} depends on changed (fingerprint {record.get('fingerprint')}, now {fingerprints[script]})"
    return "current", ""


def survey() -> list[dict]:
    """Every results file with its record and status. Tables rendered by a
    ``--tables`` run from the script's JSON results are stale while one of
    those JSON files is."""
    fingerprints: dict = {}
    rows = []
    for path in results_files():
        record = read_record(path)
        state, why = status(path, record, fingerprints)
        rows.append({"file": path.name, "record": record or {}, "status": state, "why": why})
    for r in rows:
        if r["status"] == "current" and r["record"].get("tables_only"):
            sources = [s["file"] for s in rows if s["file"].endswith(".json") and s["status"] == "stale"
                       and s["record"].get("script") == r["record"]["script"]]
            if sources:
                r["status"], r["why"] = "stale", f"rendered from {', '.join(sources)}, which is stale"
    return rows


def index_table(rows: list[dict]) -> str:
    """The docs' table: each results file, its script, command, commit and status."""
    known = stale_list()
    lines = ["| results file | script | command | commit | status |", "|---|---|---|---|---|"]
    for r in rows:
        rec = r["record"]
        state = r["status"]
        if state == "stale":  # why it was not regenerated: benchmarks/stale.json
            state = "stale" + ("" if r["file"] in known else " (not listed in stale.json)")
        elif state == "historical":
            state = "historical: " + r["why"]
        command = (rec.get("command") or "").replace("|", "\\|")
        lines.append(f"| `{r['file']}` | `{rec.get('script', '')}` | `{command}` | {str(rec.get('commit') or '')[:10]} "
                     f"| {state} |")
    return "\n".join(lines)


def synced_doc(text: str, table: str) -> str:
    if INDEX_BEGIN not in text or INDEX_END not in text:
        raise SystemExit(f"{shown(DOC)}: no {INDEX_BEGIN!r} ... {INDEX_END!r} markers")
    head, rest = text.split(INDEX_BEGIN, 1)
    _, tail = rest.split(INDEX_END, 1)
    return head + INDEX_BEGIN + "\n" + table + "\n" + INDEX_END + tail


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("action", nargs="?", default="index", choices=["index", "stale", "record"])
    ap.add_argument("file", nargs="?", help="record: the results file")
    ap.add_argument("--check", action="store_true", help="index: exit 1 if the docs' index or stale.json is out of date")
    ap.add_argument("--write", action="store_true", help="stale: add the newly stale files to stale.json, drop the fresh")
    ap.add_argument("--reason", help="stale --write: why the newly stale files are not regenerated")
    ap.add_argument("--script", help="record: the script that made the file")
    ap.add_argument("--command", help="record: the command that made it")
    ap.add_argument("--commit", help="record: the commit it was made at (default: HEAD)")
    args = ap.parse_args(argv)
    if args.action == "record":
        path = Path(args.file)
        if not (args.script and args.command):
            ap.error("record needs --script and --command")
        record = {"script": args.script, "command": args.command, "commit": args.commit or git_revision().get("commit"),
                  "fingerprint": fingerprint(args.script),
                  "written": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "recorded_afterwards": True}
        _atomic_write_text(path, with_record(path, path.read_text(encoding="utf-8"), record))
        return 0
    rows = survey()
    stale = {r["file"]: r for r in rows if r["status"] == "stale"}
    known = stale_list()
    if args.action == "stale":
        for name, r in stale.items():
            print(f"{name}: {known.get(name, 'NOT LISTED')}\n    {r['why']}\n    regenerate: {r['record'].get('command')}")
        if args.write:
            new = [n for n in stale if n not in known]
            if new and not args.reason:
                ap.error(f"{len(new)} newly stale file(s): give --reason")
            _atomic_write_text(STALE, json.dumps({n: known.get(n, args.reason) for n in sorted(stale)}, indent=2) + "\n")
        return 0
    missing = [r["file"] for r in rows if r["status"] == "no record"]
    text = DOC.read_text(encoding="utf-8")
    new = synced_doc(text, index_table(rows))
    if args.check:
        problems = []
        if missing:
            problems.append(f"no provenance record: {', '.join(missing)}")
        if new != text:
            problems.append(f"{shown(DOC)}'s results index differs (run python benchmarks/provenance.py)")
        if set(stale) != set(known):
            problems.append("benchmarks/stale.json differs from the stale files (python benchmarks/provenance.py stale)")
        print("\n".join(problems) or "results index and stale list up to date")
        return 1 if problems else 0
    if new != text:
        _atomic_write_text(DOC, new)
    print(f"{len(rows)} results files: " + ", ".join(f"{sum(r['status'] == s for r in rows)} {s}"
                                                      for s in ("current", "stale", "historical", "no record")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
