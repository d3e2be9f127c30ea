"""The cross-validation engine: resume after SIGKILL, corruption, concurrency, dask."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from ensemble_deid.experiment.cache import PredictionCache
from ensemble_deid.experiment.cv import CrossValidation, TaggerSpec

from . import PLUGINS
from .tiny_corpus import tiny_corpus

ROOT = Path(__file__).resolve().parents[1]


def _engine(cache_dir, k=5):
    docs = tiny_corpus(40)
    return CrossValidation(docs[:30], {"test": docs[30:]}, PredictionCache(cache_dir), k=k, seed=1)


def _tags(runs):
    return {label: ({d: p.tags for d, p in r.oof.items()}, {d: p.tags for d, p in r.targets["test"].items()})
            for label, r in runs.items()}


def test_spec_parsing():
    spec = TaggerSpec.parse("crf:max_iterations=50,c1=0.1,all_possible=true")
    assert spec.name == "crf"
    assert dict(spec.params) == {"max_iterations": 50, "c1": 0.1, "all_possible": True}
    with pytest.raises(ValueError, match="key=value"):
        TaggerSpec.parse("crf:c1")


def test_run_then_reuse(tmp_path):
    engine = _engine(tmp_path)
    spec = TaggerSpec.parse("memorize")
    first = engine.run([spec], progress=False)
    assert first["memorize"].computed == 6 and first["memorize"].reused == 0
    assert set(first["memorize"].oof) == {d.id for d in engine.train}
    second = engine.run([spec], progress=False)
    assert second["memorize"].computed == 0 and second["memorize"].reused == 6
    assert _tags(first) == _tags(second)


def test_patients_never_predicted_by_a_model_that_saw_them(tmp_path):
    """Out-of-fold: a memorizing tagger cannot recall PHI seen only in the held-out patient."""
    engine = _engine(tmp_path)
    for fold in range(engine.k):
        train, held = engine.folds.split(engine.train, fold)
        assert not {d.group for d in train} & {d.group for d in held}


def test_corrupt_part_is_recomputed_not_used(tmp_path):
    engine = _engine(tmp_path)
    spec = TaggerSpec.parse("memorize")
    reference = _tags(engine.run([spec], progress=False))
    task = engine.parts(spec)[2]
    npz = (engine.cache.root / task.part.relpath).with_suffix(".npz")
    data = bytearray(npz.read_bytes())
    data[100] ^= 0xFF
    npz.write_bytes(bytes(data))
    warnings = []
    again = engine.run([spec], progress=False, on_corrupt=warnings.append)
    assert len(warnings) == 1 and task.part.name in warnings[0]
    assert again["memorize"].computed == 1
    assert _tags(again) == reference
    assert engine.cache.verify() == []


def _script(cache_dir, delay, jobs=1):
    return textwrap.dedent(f"""
        import sys
        sys.path[:0] = [{str(ROOT)!r}, {PLUGINS!r}]
        from tests.tiny_corpus import tiny_corpus
        from ensemble_deid.experiment.cache import PredictionCache
        from ensemble_deid.experiment.cv import CrossValidation, TaggerSpec
        docs = tiny_corpus(40)
        engine = CrossValidation(docs[:30], {{"test": docs[30:]}}, PredictionCache({str(cache_dir)!r}), k=5, seed=1)
        runs = engine.run([TaggerSpec.parse("memorize:delay={delay}")], jobs={jobs}, progress=False)
        print("computed", runs["memorize:delay={delay}"].computed)
    """)


def _count_parts(cache_dir):
    """Prediction parts (commit records); not the kept model's record."""
    return len([p for p in Path(cache_dir).glob("v1/*/*/*/*/*.json") if p.parent.name != "model"])


def test_sigkill_then_resume_computes_only_missing(tmp_path):
    cache_dir = tmp_path / "killed"
    proc = subprocess.Popen([sys.executable, "-c", _script(cache_dir, 0.6)], cwd=ROOT)
    deadline = time.time() + 60
    while _count_parts(cache_dir) < 2 and time.time() < deadline:
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    done = _count_parts(cache_dir)
    assert 2 <= done < 6, "the run should have been killed part-way"

    spec = TaggerSpec.parse("memorize:delay=0.6")
    resumed = _engine(cache_dir).run([spec], progress=False)
    assert resumed[spec.label].computed == 6 - done
    # The delay only sleeps in fit: the same tagger without it is the uninterrupted reference, 3.6 s sooner.
    undelayed = TaggerSpec.parse("memorize")
    uninterrupted = _engine(tmp_path / "clean").run([undelayed], progress=False)
    assert _tags(resumed)[spec.label] == _tags(uninterrupted)[undelayed.label]
    assert PredictionCache(cache_dir).verify() == []


def test_two_concurrent_runs_share_one_cache(tmp_path):
    cache_dir = tmp_path / "shared"
    procs = [subprocess.Popen([sys.executable, "-c", _script(cache_dir, 0.3)], cwd=ROOT, stdout=subprocess.PIPE, text=True)
             for _ in range(2)]
    outs = [p.communicate(timeout=120)[0] for p in procs]
    assert all(p.returncode == 0 for p in procs)
    computed = [int(o.split()[-1]) for o in outs]
    assert sum(computed) == 6, "the per-part lock means no part is computed twice"
    assert PredictionCache(cache_dir).verify() == []
    assert _count_parts(cache_dir) == 6


def test_dask_backend_on_a_local_cluster(tmp_path):
    distributed = pytest.importorskip("dask.distributed")
    env_path = os.environ.get("PYTHONPATH", "")
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [PLUGINS, str(ROOT), env_path]))
    try:
        with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                      dashboard_address=None) as cluster:
            engine = _engine(tmp_path / "dask")
            spec = TaggerSpec.parse("memorize")
            runs = engine.run([spec], backend="dask", scheduler=cluster.scheduler_address, progress=False)
    finally:
        os.environ["PYTHONPATH"] = env_path
    assert runs["memorize"].computed == 6
    local = _engine(tmp_path / "local").run([spec], progress=False)
    assert _tags(runs) == _tags(local)


@pytest.mark.slow
def test_ray_backend_on_a_local_cluster(tmp_path):
    from .clusters import ray_cluster

    with ray_cluster(tmp_path / "cluster.log") as (address, _):
        engine = _engine(tmp_path / "ray")
        spec = TaggerSpec.parse("memorize")
        runs = engine.run([spec], jobs=2, backend="ray", scheduler=address, progress=False)
    assert runs["memorize"].computed == 6
    local = _engine(tmp_path / "local").run([spec], progress=False)
    assert _tags(runs) == _tags(local)
