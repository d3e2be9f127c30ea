"""Every folder the docs' commands write a model or note text into, or read
notes from, inside the repository is git-ignored: a new user following the
guide from the repository root must not be one `git add .` away from
committing training words or PHI (issue 34 item 1; the fresh-clone walk found
the guide's `fit ... --out model/` again, and notes/, deid-out/ and exported/
not ignored)."""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# the folders of each command that hold a model or note text
COMMANDS = [
    re.compile(r"ensemble-deid fit\b.*?--out[ =](?P<out>\S+)"),
    re.compile(r"ensemble-deid deidentify (?P<model>\S+) (?P<notes>\S+)(?:.*?--out[ =](?P<out>\S+))?"),
    re.compile(r"ensemble-deid cache export (?P<out>\S+)"),
    # corpora written as files: the synthetic stand-ins hold invented note text, an export the notes' own
    re.compile(r"ensemble-deid corpus (?:synth|export)\b.*?--out[ =](?P<out>\S+)"),
]


def written_paths(text: str) -> list[str]:
    found = []
    for line in text.splitlines():
        for pattern in COMMANDS:
            m = pattern.search(line)
            if m:
                found += [p for p in m.groupdict().values()
                          if p and not p.startswith(("/", "~", "$", "-")) and not p.isupper()]  # OUT, MODEL: placeholders
    return found


def ignored(path: str) -> bool:
    probe = path.rstrip("/") + "/x"  # a file inside the folder
    return subprocess.run(["git", "check-ignore", "--no-index", "-q", probe], cwd=ROOT).returncode == 0


@pytest.mark.skipif(shutil.which("git") is None or not (ROOT / ".git").exists(), reason="needs git and a checkout")
def test_every_folder_the_docs_write_note_text_or_models_into_is_ignored():
    paths = {p for doc in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
             for p in written_paths(doc.read_text(encoding="utf-8"))}
    assert {"models/synthetic-voting", "notes/", "deid-out", "i2b2-2014-like/training-PHI-Gold-Set1",
            "s14/train"} <= paths  # the guide's own examples are seen
    assert not [p for p in sorted(paths) if not ignored(p)]


@pytest.mark.skipif(shutil.which("git") is None or not (ROOT / ".git").exists(), reason="needs git and a checkout")
def test_the_api_walk_throughs_folders_are_ignored():
    api = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    # fit_ensemble(..., "model", ...), Path("notes"), FolderDeidentifier(...).run(notes, "deidentified")
    folders = {"model", "notes", "deidentified"}
    assert all(f'"{f}"' in api for f in folders)
    assert not [f for f in sorted(folders) if not ignored(f)]


def test_the_commands_are_read_with_their_folders():
    assert written_paths("$ ensemble-deid deidentify models/m notes/ --out deid-out --jobs 2") == [
        "models/m", "notes/", "deid-out"]
    assert written_paths("ensemble-deid fit --corpus c --method voting --members a,b --out model/") == ["model/"]
    assert written_paths("ensemble-deid cache export OUT --corpus c") == []
    assert written_paths("ensemble-deid deidentify MODEL /shared/notes --out /shared/out") == []
