"""How long the documented user commands take, as a user sees them: each one
run as a whole child process in a fresh temporary workspace (nothing cached),
timed from start to exit.

    python benchmarks/scale/bench_commands.py quick          # ensemble-deid demo --quick (make quick)
    python benchmarks/scale/bench_commands.py demo           # ensemble-deid demo (make demo; long)
    python benchmarks/scale/bench_commands.py quick demo     # both, one after the other
    python benchmarks/scale/bench_commands.py install        # make's install into a fresh .venv, pip's cache off
    python benchmarks/scale/bench_commands.py test           # make test: the default suite (slow tests excluded)

Recorded per command: wall seconds; CPU seconds (user + system) of the child
and all its descendants, from ``os.wait4`` (worker processes included); the
1-minute load average before and after (on a shared machine wall time
mostly measures the others' work, so the docs print CPU time and load next
to it); the cores, the niceness it ran at and the machine description. Results:
benchmarks/results/commands.json (entries merge by command name, so one
command can be re-measured without losing the others) and commands.md;
``python benchmarks/sync_docs.py`` copies the figures into the docs.
The command runs this tree's code (``PYTHONPATH``), as ``make`` installs it.
``install`` runs the Makefile's own install recipe into a fresh virtual
environment in a temporary folder, with pip's cache turned off (a fresh
machine has none; the package downloads are in its time); ``test`` runs the
default suite from the repository root as ``make test`` does.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common.py and the groups
from common import (RESULTS, code_env, load1, machine_description, machine_lines, progress,  # noqa: E402
                    timed_child, timing_phrase, write_json, write_markdown)

# name -> (what a user types, the CLI's arguments, the make target that runs it)
COMMANDS = {
    "quick": ("ensemble-deid demo --quick", ["demo", "--quick"], "make quick"),
    "demo": ("ensemble-deid demo", ["demo"], "make demo"),
    "install": ("make (the install: .venv, torch CPU, the package and its extras)", None, "make"),
    "test": ("pytest (the default suite, slow tests excluded)", None, "make test"),
}
ROOT = RESULTS.parent.parent


def argv_of(name: str, ws: str) -> tuple[list[str], str, dict]:
    """(argv, working folder, environment changes) of a command run in the fresh folder ``ws``."""
    if name == "install":  # the Makefile's recipe, into a venv of the fresh folder
        venv = str(Path(ws) / ".venv")
        return ["make", "-s", f"VENV={venv}", f"{venv}/.installed"], str(ROOT), {"PIP_NO_CACHE_DIR": "1"}
    if name == "test":  # as make test runs it, with this interpreter's environment
        return [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"], str(ROOT), {}
    return [sys.executable, "-c", "from ensemble_deid.cli import main; main()", *COMMANDS[name][1]], ws, {}
JSON_PATH = RESULTS / "commands.json"
MD_PATH = RESULTS / "commands.md"


def run_command(name: str) -> dict:
    """Run one command in a fresh workspace; wall, CPU (child + descendants), load."""
    typed, args, make = COMMANDS[name]
    # a fresh workspace: its own, empty prediction cache
    env = code_env(drop=("ENSEMBLE_DEID_CACHE", "ENSEMBLE_DEID_HOME"))
    with tempfile.TemporaryDirectory(prefix=f"bench-{name}-") as ws:
        argv, cwd, extra = argv_of(name, ws)
        progress(f"{name}: {typed} in a fresh workspace (load {load1()})")
        if name == "install":  # the fresh venv's own packages, not this tree's path
            env.pop("PYTHONPATH", None)
        # the suite's report on stderr (which failed, if any); the others' tables are not wanted
        run = timed_child(argv, cwd, {**env, **extra}, stdout=sys.stderr if name == "test" else subprocess.DEVNULL)
    if run["exit_status"]:
        raise SystemExit(f"{typed}: exit status {run['exit_status']}; nothing recorded")
    progress(f"{name}: {run['wall_s']:.1f} s wall, {run['cpu_s']:.1f} s CPU, load {run['load_before']} -> {run['load_after']}")
    machine = machine_description()
    return {
        "command": typed, "make": make, "wall_s": run["wall_s"], "cpu_s": run["cpu_s"],
        "load_before": run["load_before"], "load_after": run["load_after"], "cores": machine["cpus_usable"],
        "nice": run["nice"], "peak_rss_mib": run["peak_rss_mib"], "machine": machine,
    }


def merged(new: dict[str, dict]) -> dict:
    data = json.loads(JSON_PATH.read_text(encoding="utf-8")) if JSON_PATH.is_file() else {}
    commands = dict(data.get("commands", {}))
    for name, entry in new.items():
        commands[name] = {**entry, "figure": timing_phrase(entry)}
    return {"benchmark": "commands", "commands": dict(sorted(commands.items()))}


def markdown(data: dict) -> str:
    rows = ["| command | make | wall s | CPU s | CPU / wall | cores | load (1 min) before-after | nice | measured |",
            "|---|---|---:|---:|---:|---:|---|---:|---|"]
    for e in data["commands"].values():
        rows.append(f"| `{e['command']}` | `{e['make']}` | {e['wall_s']:.1f} | {e['cpu_s']:.1f} | "
                    f"{e['cpu_s'] / e['wall_s']:.2f} | {e['cores']} | {e['load_before']}-{e['load_after']} | "
                    f"{e.get('nice', 0)} | {e['machine']['when'][:16]} |")
    last = max(data["commands"].values(), key=lambda e: e["machine"]["when"])
    return ("Each command as a whole child process in a fresh temporary workspace (nothing cached); CPU s is the "
            "child's and its descendants' user + system time (os.wait4). A CPU / wall well below the cores "
            "means the machine was shared.\n\n" + "\n".join(rows) + "\n\nMachine (latest measurement):\n"
            + "\n".join(machine_lines(last["machine"])) + "\n\nReproduce: `python benchmarks/scale/bench_commands.py "
            + " ".join(data["commands"]) + "`\n")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("names", nargs="+", choices=sorted(COMMANDS), help="commands to time")
    args = ap.parse_args(argv)
    new = {}
    for name in dict.fromkeys(args.names):
        new[name] = run_command(name)
        data = merged(new)  # written after each command, so a long second one loses nothing
        write_json(JSON_PATH, data)
        write_markdown(MD_PATH, markdown(data))
    for name in new:
        print(f"{name}: {data['commands'][name]['figure']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
