"""Fuzz: a published folder comes from outside (a clone, a pull request), so
any damage to it, even a manifest re-checksummed after an edit, must end in
a clean report, never a traceback, a hang or a wrong prediction served."""
from __future__ import annotations

import json
import os
import random
import shutil
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from ensemble_deid.cli import main
from ensemble_deid.corpus.workspace import Corpus
from ensemble_deid.experiment import cache as cache_module
from ensemble_deid.experiment.cache import PUBLISHED_MANIFEST, PredictionCache, PublishedFolder, _record_checksum
from ensemble_deid.experiment.cv import CrossValidation, TaggerSpec
from ensemble_deid.experiment.publish import publish

from .tiny_corpus import tiny_corpus

SEED = 20261124
MUTATIONS = 80
TIME_BUDGET_S = 60
ODD_VALUES = [None, 0, -1, "x", [], {}, "../../../etc/passwd", 1e308, True, {"sha256": 1}]


@pytest.fixture(scope="module")
def original(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("fuzz-publish")
    docs = tiny_corpus(24)
    corpus = Corpus("tiny", {"train": docs[:18], "test": docs[18:]})
    cache = PredictionCache(tmp / "ws-cache", published=())
    engine = CrossValidation(corpus.train, {"test": corpus.test}, cache, k=3)
    spec = TaggerSpec.parse("memorize")
    run = engine.run([spec], progress=False)["memorize"]
    out = tmp / "pub" / "tiny"
    out.parent.mkdir()
    publish(cache, corpus, out, licence="test", specs=[spec], k=3)
    expected = {task.part: cache.read_part(task.part)[0] for task in engine.parts(spec)}
    assert len(expected) == 4 and run.computed == 4
    return out, expected


def _json_paths(value, path=()):
    yield path
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _json_paths(v, path + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _json_paths(v, path + (i,))


def _mutate(folder: Path, rng: random.Random) -> str:
    files = sorted(p for p in folder.rglob("*") if p.is_file())
    target = rng.choice(files)
    kind = rng.choice(["flip", "truncate", "delete", "forge", "forge", "special"])
    if kind == "flip":
        data = bytearray(target.read_bytes())
        if data:
            data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        target.write_bytes(bytes(data))
    elif kind == "truncate":
        data = target.read_bytes()
        target.write_bytes(data[: rng.randrange(max(1, len(data)))])
    elif kind == "delete":
        target.unlink()
    elif kind == "forge":  # an edit whose author re-computes the manifest checksum
        manifest_path = folder / PUBLISHED_MANIFEST
        manifest = json.loads(manifest_path.read_text())
        path = rng.choice([p for p in _json_paths(manifest) if p and p[0] != "manifest_sha256"])
        node = manifest
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = rng.choice(ODD_VALUES)
        manifest["manifest_sha256"] = _record_checksum(manifest, "manifest_sha256")
        manifest_path.write_text(json.dumps(manifest))
        return f"forge {'/'.join(map(str, path))}"
    else:  # a FIFO or a link where a file was: never read, never followed
        target.unlink()
        if rng.random() < 0.5:
            os.mkfifo(target)
        else:
            target.symlink_to("/dev/zero")
    return f"{kind} {target.relative_to(folder)}"


def test_damaged_published_folders_are_reported_never_used_wrongly(original, tmp_path, monkeypatch):
    out, expected = original
    rng = random.Random(SEED)
    monkeypatch.setattr(cache_module, "_REPORTED", set())
    start = time.monotonic()
    served = ignored = 0
    for i in range(MUTATIONS):
        if time.monotonic() - start > TIME_BUDGET_S:
            break
        copy = tmp_path / f"m{i}" / "tiny"
        shutil.copytree(out, copy, symlinks=True)
        what = _mutate(copy, rng)
        pc = PredictionCache(tmp_path / f"m{i}" / "empty-root", published=[copy])
        for part, preds in expected.items():
            status = pc.part_status(part)
            assert status in ("valid", "missing"), (what, status)
            if status == "valid":
                served += 1
                got, _ = pc.read_part(part)
                assert {d: p.tags for d, p in got.items()} == {d: p.tags for d, p in preds.items()}, what
            else:
                ignored += 1
        problems = PublishedFolder(copy).verify()
        if not what.startswith("forge"):
            assert problems, what  # any change to a file's bytes is named
        if i % 8 == 0:  # the command line too: a report, no traceback
            monkeypatch.setenv("ENSEMBLE_DEID_HOME", str(tmp_path / f"m{i}" / "ws"))
            monkeypatch.setenv("ENSEMBLE_DEID_PUBLISHED", str(copy))
            for command in (["cache", "verify"], ["cache", "ls"]):
                res = CliRunner().invoke(main, command)
                assert res.exit_code in (0, 1) and (res.exception is None or isinstance(res.exception, SystemExit)), (
                    what, command, res.output)
        shutil.rmtree(copy.parent)
    assert served and ignored  # both outcomes were exercised
