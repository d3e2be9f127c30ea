"""``deidentify --jobs N`` and ``--backend dask|ray`` on real local workers
(processes started here on 127.0.0.1 and stopped after, never mocks):
outputs byte-identical to the sequential run, a worker or the client killed
mid-run loses nothing, every file owner-only, bad addresses refused first."""
from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from ensemble_deid.cli import main
from ensemble_deid.corpus.formats import write_i2b2_xml

from .clusters import dask_cluster, env, free_port, ray_cluster
from .test_deid_cli import tiny_bundle  # noqa: F401 - the fixture: one bundle-fitting recipe

CLI = [sys.executable, "-c", "from ensemble_deid.cli import main; main()"]


def _run(*args, ok=True):
    result = CliRunner().invoke(main, list(map(str, args)))
    if ok:
        assert result.exit_code == 0, result.output + repr(result.exception)
    return result


@pytest.fixture(scope="module")
def bundle(tiny_bundle):
    """The voting bundle of the deidentify CLI tests, a folder of 120 notes
    (its 8 test notes under 15 ids each) and that folder tagged sequentially
    (its surrogate mapping in sequential-map.json)."""
    from ensemble_deid.corpus.formats import read_i2b2_xml

    (tiny_bundle / "notes").mkdir(exist_ok=True)
    for copy in range(15):
        for path in sorted((tiny_bundle / "test").glob("*.xml")):
            doc, _ = read_i2b2_xml(path)
            name = f"c{copy:02d}-{doc.id}"
            write_i2b2_xml(doc.__class__(name, doc.text, doc.annotations, doc.metadata), tiny_bundle / "notes" / f"{name}.xml")
    _run("deidentify", tiny_bundle / "model", tiny_bundle / "notes", "--out", tiny_bundle / "sequential", *OPTIONS,
         "--save-mapping", tiny_bundle / "sequential-map.json")
    return tiny_bundle


# Surrogate mode with a mapping: the most state a worker must reproduce.
OPTIONS = ("--batch-size", "2", "--spans", "xml", "--spans", "brat", "--mode", "surrogate", "--seed", "7",
           "--no-progress")


def _files(folder: Path) -> dict[str, bytes]:
    """Every output, and run.json's options but the seed's salted digest (a salt per folder, issue 52)."""
    # the review page is the command's, written after the run (runs through the API write none)
    files = {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
             if p.is_file() and p.name not in (".lock", "run.json", "review.html")}
    record = json.loads((folder / "run.json").read_text())
    record["options"]["seed"] = sorted(record["options"]["seed"])
    files["run.json"] = json.dumps(record, sort_keys=True).encode()
    return files


def _same_as_sequential(bundle: Path, out: Path) -> None:
    assert _files(out) == _files(bundle / "sequential")
    for path in [out, *out.rglob("*")]:
        assert stat.S_IMODE(path.stat().st_mode) & 0o077 == 0, path
    assert not (out / ".scratch").exists()


def test_jobs_give_the_sequential_outputs_byte_for_byte(bundle, tmp_path):
    out = tmp_path / "out"
    result = _run("deidentify", bundle / "model", bundle / "notes", "--out", out, *OPTIONS, "--jobs", "2",
                  "--save-mapping", tmp_path / "map.json")
    assert "120 note(s) de-identified" in result.output
    _same_as_sequential(bundle, out)
    assert (tmp_path / "map.json").read_bytes() == (bundle / "sequential-map.json").read_bytes()
    again = _run("deidentify", bundle / "model", bundle / "notes", "--out", out, *OPTIONS, "--jobs", "2",
                 "--save-mapping", tmp_path / "map.json")
    assert "0 note(s) de-identified, 120 already done" in again.output


def test_backend_options_are_checked_before_any_work(bundle, tmp_path):
    for args, hint in ((("--backend", "dask"), "--scheduler"), (("--backend", "ray"), "--address"),
                       (("--scheduler", "tcp://127.0.0.1:1"), "--scheduler")):
        result = _run("deidentify", bundle / "model", bundle / "notes", "--out", tmp_path / "o", *args, ok=False)
        assert result.exit_code == 2 and hint in result.output
    address = f"tcp://127.0.0.1:{free_port()}"  # nothing listens there
    start = time.monotonic()
    result = _run("deidentify", bundle / "model", bundle / "notes", "--out", tmp_path / "o", "--backend", "dask",
                  "--scheduler", address, "--connect-timeout", "1", "--no-progress", ok=False)
    # --connect-timeout, not Dask's default 30 s of retries, bounds the wait
    assert time.monotonic() - start < 15
    assert result.exit_code == 2 and f"cannot reach a Dask scheduler at {address} within 1 s" in result.output
    assert "--scheduler" in result.output and not (tmp_path / "o").exists()


def test_an_unreachable_ray_head_is_refused_within_the_connect_timeout(bundle, tmp_path):
    """Ray itself retries an address where nothing listens for minutes (Ray
    2.60: still waiting after 400 s); the head's port is tried first."""
    pytest.importorskip("ray")
    address = f"127.0.0.1:{free_port()}"
    start = time.monotonic()
    result = _run("deidentify", bundle / "model", bundle / "notes", "--out", tmp_path / "o", "--backend", "ray",
                  "--address", address, "--connect-timeout", "1", "--no-progress", ok=False)
    assert time.monotonic() - start < 30
    assert result.exit_code == 2 and f"cannot reach a Ray cluster at {address} within 1 s" in result.output
    assert not (tmp_path / "o").exists()


# -- a real Dask cluster ---------------------------------------------------------------------------


def _start(bundle: Path, out: Path, *backend: str) -> subprocess.Popen:
    return subprocess.Popen([*CLI, "deidentify", str(bundle / "model"), str(bundle / "notes"), "--out", str(out),
                             *OPTIONS, *backend], env=env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _wait_for_outputs(out: Path, n: int, proc: subprocess.Popen, timeout: float = 300) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if (out / "text").is_dir() and len(list((out / "text").glob("*.txt"))) >= n:
            return
        assert proc.poll() is None, proc.communicate()[1].decode()[-2000:]
        time.sleep(0.05)
    raise AssertionError(f"fewer than {n} notes done in {timeout} s")


@pytest.mark.slow
def test_dask_two_workers_give_the_sequential_outputs(bundle, tmp_path):
    with dask_cluster(tmp_path / "cluster.log") as (address, _):
        out = tmp_path / "out"
        result = _run("deidentify", bundle / "model", bundle / "notes", "--out", out, *OPTIONS, "--backend", "dask",
                      "--scheduler", address)
        assert "120 note(s) de-identified" in result.output
    _same_as_sequential(bundle, out)


@pytest.mark.slow
def test_dask_worker_killed_mid_run_loses_nothing(bundle, tmp_path):
    with dask_cluster(tmp_path / "cluster.log") as (address, workers):
        out = tmp_path / "out"
        proc = _start(bundle, out, "--backend", "dask", "--scheduler", address)
        _wait_for_outputs(out, 10, proc)
        os.kill(workers[0].pid, signal.SIGKILL)
        _, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err.decode()[-2000:]
        assert workers[0].wait(timeout=10) == -signal.SIGKILL
    _same_as_sequential(bundle, out)


@pytest.mark.slow
def test_dask_client_killed_mid_run_resumes(bundle, tmp_path):
    with dask_cluster(tmp_path / "cluster.log") as (address, _):
        out = tmp_path / "out"
        proc = _start(bundle, out, "--backend", "dask", "--scheduler", address)
        _wait_for_outputs(out, 10, proc)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        done_before = len(list((out / "text").glob("*.txt")))
        assert done_before < 120
        result = _run("deidentify", bundle / "model", bundle / "notes", "--out", out, *OPTIONS, "--backend", "dask",
                      "--scheduler", address)
        assert "already done" in result.output
    _same_as_sequential(bundle, out)


# -- a real Ray cluster (ray from PyPI, CPU only: pip install 'ensemble-deid[ray]') ---------------


def _ray_workers_on_a_chunk(head) -> list:
    import psutil

    return [p for p in psutil.Process(head.pid).children(recursive=True)
            if "tag_chunk" in " ".join(p.cmdline())]


@pytest.mark.slow
def test_ray_gives_the_sequential_outputs_and_survives_a_killed_worker(bundle, tmp_path):
    with ray_cluster(tmp_path / "cluster.log") as (address, head):
        out = tmp_path / "out"
        proc = _start(bundle, out, "--backend", "ray", "--address", address)
        _wait_for_outputs(out, 10, proc)
        busy = _ray_workers_on_a_chunk(head)
        assert busy, "no Ray worker was tagging a chunk"
        busy[0].kill()
        _, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err.decode()[-2000:]
    _same_as_sequential(bundle, out)


def test_stream_benchmark_small_version_keeps_memory_flat(bundle, tmp_path):
    """benchmarks/deidentify/bench_stream.py on 60 notes: memory over the last 20 within 10% of the first 20."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    from deidentify import bench_stream

    result = bench_stream.main(["--model", str(bundle / "model"), "--notes", "60", "--window", "20", "--pool", "5",
                                "--batch-size", "4", "--workdir", str(tmp_path), "--out", str(tmp_path / "s.json")])
    assert result["notes"] == 60 and result["tokens"] > 0
    assert result["flat_within_10_percent"], result["last_over_first"]
    assert (tmp_path / "s.md").is_file() and not list(tmp_path.glob("bench-stream-*"))


def test_local_workers_run_the_clients_loaded_bundle_without_reading_it_again(bundle, tmp_path):
    """Forked workers tag with the model the client checked and loaded: the
    bundle folder is not read again (each worker importing, checking and
    loading it made --jobs 2 slower than one process). Removed after the load,
    the run still gives the sequential outputs; a spawned worker could not."""
    import shutil

    from ensemble_deid.deid import Deidentifier
    from ensemble_deid.deid.batch import FolderDeidentifier
    from ensemble_deid.deid.distribute import BundleRef, Distributor
    from ensemble_deid.deid.surrogate import Surrogator

    copy = tmp_path / "model"
    shutil.copytree(bundle / "model", copy)
    model = Deidentifier.load(copy)
    shutil.rmtree(copy)
    # the bundle's review budget, as deidentify uses it by default
    runner = FolderDeidentifier(model, "surrogate", ("xml", "brat"), Surrogator(seed=7), batch_size=2,
                                review=model.review.budget)
    out = tmp_path / "out"
    with Distributor(BundleRef(str(copy), model.manifest["manifest_sha256"]), "local", jobs=2) as pool:
        run = runner.run(bundle / "notes", out, executor=pool)
    assert run.processed == 120
    _same_as_sequential(bundle, out)


def test_local_workers_share_the_cores_between_their_threads(bundle):
    """Each of N local workers runs torch and BLAS on its share of the cores
    (threads x processes never above the cores)."""
    import torch

    from ensemble_deid.deid import Deidentifier
    from ensemble_deid.deid.distribute import BundleRef, Distributor

    model = Deidentifier.load(bundle / "model")
    share = max(1, (os.cpu_count() or 1) // 2)
    with Distributor(BundleRef(str(bundle / "model"), model.manifest["manifest_sha256"]), "local", jobs=2) as pool:
        pool._engine.prepare(model, 2)
        assert pool._engine.pool.submit(torch.get_num_threads).result() == share
        assert pool._engine.pool.submit(os.getenv, "OMP_NUM_THREADS").result() == str(share)


def test_jobs_client_killed_mid_run_resumes_at_once(bundle, tmp_path):
    """The client of a --jobs 2 run killed mid-run: its workers go with it and
    hold no lock on the folder, so the same command run again at once resumes
    (not 'another deidentify run is writing there') and ends with the
    sequential run's files."""
    out = tmp_path / "out"
    proc = _start(bundle, out, "--jobs", "2")
    _wait_for_outputs(out, 10, proc)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert len(list((out / "text").glob("*.txt"))) < 120
    result = _run("deidentify", bundle / "model", bundle / "notes", "--out", out, *OPTIONS, "--jobs", "2")
    assert "already done" in result.output
    _same_as_sequential(bundle, out)


def test_chunks_go_to_the_workers_largest_first(bundle, tmp_path):
    """Chunks are handed out largest first (bytes of notes), whatever their
    ids: the last chunks the workers pick up are the smallest, so they finish
    together. One worker tags them in the order handed out; a chunk's
    outputs are all written before the next chunk's."""
    notes = tmp_path / "notes"
    notes.mkdir()
    line = "Seen by Dr. Smith on 03/04/2012 at the General Clinic.\n"
    for i, repeat in enumerate((3, 3, 1, 1, 9, 9)):  # chunks of 2: ids a4-a5 largest, then a0-a1, then a2-a3
        (notes / f"a{i}.txt").write_text(line * repeat, encoding="utf-8")
    from ensemble_deid.deid import Deidentifier
    from ensemble_deid.deid.batch import FolderDeidentifier
    from ensemble_deid.deid.distribute import BundleRef, Distributor

    model = Deidentifier.load(bundle / "model")
    out = tmp_path / "out"
    with Distributor(BundleRef(str(bundle / "model"), model.manifest["manifest_sha256"]), "local", jobs=1) as pool:
        FolderDeidentifier(model, "tag", ("xml",), batch_size=2).run(notes, out, executor=pool)

    def written(ids):
        return [(out / "text" / f"a{i}.txt").stat().st_mtime_ns for i in ids]

    largest, middle, smallest = written((4, 5)), written((0, 1)), written((2, 3))
    assert max(largest) <= min(middle) and max(middle) <= min(smallest)
    assert max(largest) < min(smallest)


def test_forked_workers_leave_the_inherited_model_out_of_their_collector(bundle, tmp_path):
    """While notes are tagged, the loaded model is frozen out of the garbage
    collector (whose full passes would walk it again and again, and in a
    forked worker write to, so copy, the pages it shares with the client):
    in a sequential run and in the local workers, which inherit the freeze.
    The caller's objects are collectable again once the run is over, as they
    are after a deidentify command run in-process."""
    import gc

    from ensemble_deid.deid import Deidentifier
    from ensemble_deid.deid.batch import FolderDeidentifier
    from ensemble_deid.deid.distribute import BundleRef, Distributor

    gc.unfreeze()  # whatever an earlier test left
    model = Deidentifier.load(bundle / "model")
    runner = FolderDeidentifier(model, "tag", ("xml",), batch_size=2)  # the 8 test notes: 4 batches, 4 chunks
    here = []
    runner.run(bundle / "test", tmp_path / "sequential", progress=lambda n: here.append(gc.get_freeze_count()))
    assert min(here[1:]) > 1000 and gc.get_freeze_count() == 0
    inherited = []
    with Distributor(BundleRef(str(bundle / "model"), model.manifest["manifest_sha256"]), "local", jobs=2) as pool:
        def probe(n):  # after a chunk: the workers exist
            if pool._engine.pool is not None and not inherited:
                inherited.append(pool._engine.pool.submit(gc.get_freeze_count).result())
        runner.run(bundle / "test", tmp_path / "local", progress=probe, executor=pool)
    assert inherited and inherited[0] > 1000
    assert gc.get_freeze_count() == 0
    _run("deidentify", bundle / "model", bundle / "test", "--out", tmp_path / "out", *OPTIONS, "--jobs", "2")
    assert gc.get_freeze_count() == 0
