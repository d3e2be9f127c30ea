"""The install steps a new user runs (the Makefile's, and the guide's by hand)
take PyTorch's CPU build: PyPI's default torch on Linux is the CUDA build,
gigabytes of nvidia-* packages, while the Makefile said "the CPU wheel first"
(issue 34, the fresh-clone walk)."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CPU_INDEX = "https://download.pytorch.org/whl/cpu"


def make_variables(text: str) -> dict[str, str]:
    return dict(re.findall(r"^(\w+)\s*\??=\s*(.*?)\s*$", text, re.M))


def torch_installs(lines, variables=None) -> list[str]:
    found = [line.strip() for line in lines if re.search(r"pip install\b.*\btorch==", line)]
    for name, value in (variables or {}).items():
        found = [line.replace(f"$({name})", value) for line in found]
    return found


def test_the_makefile_installs_torch_from_the_cpu_index():
    text = (ROOT / "Makefile").read_text(encoding="utf-8")
    installs = torch_installs(text.splitlines(), make_variables(text))
    assert installs, "the Makefile no longer installs torch by itself first"
    assert all(f"--index-url {CPU_INDEX}" in line for line in installs), installs


def test_the_guides_install_steps_take_the_cpu_build():
    installs = torch_installs((ROOT / "docs" / "guide.md").read_text(encoding="utf-8").splitlines())
    assert len(installs) >= 2  # the steps make runs, and the manual install
    assert all(f"--index-url {CPU_INDEX}" in line for line in installs), installs
