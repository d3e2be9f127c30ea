"""What a bundle can and cannot do to the machine that loads it (issue 52
items 3, 4, 5, 11, 13): thread counts and devices are the loading machine's,
a bundle names no file (and cannot learn whether one exists), a method's
parameters pass the same checks against the members as in ``fit``, a damaged
Vowpal Wabbit model is called damaged, and a compressed tensor is refused from
its declared sizes. Each test failed before the fix."""
from __future__ import annotations

import io
import json
import os
import shutil
import sys
import zipfile
from pathlib import Path

import pytest

from ensemble_deid.corpus.document import Document
from ensemble_deid.deid import BundleError, Deidentifier
from ensemble_deid.taggers.state import encodable

from .test_bundle_security import NOTE, _copy, bundle, neural_bundle, philter_bundle, reseal  # noqa: F401 - fixtures
from .tiny_corpus import tiny_corpus


def _edit_checkpoint(copy: Path, member: str, change) -> Path:
    import torch

    path = next((copy / "members").glob(f"*-{member}"))
    ckpt = torch.load(path, weights_only=True)
    change(ckpt)
    torch.save(ckpt, path)
    reseal(copy)
    return path


def _edit_params(copy: Path, where: str, **values) -> None:
    state = copy / where / "state.json"
    body = json.loads(state.read_text())
    body["header"]["params"] = encodable({**dict(body["header"]["params"]["__dict__"]), **values})
    state.write_text(json.dumps(body))
    reseal(copy)


# --- item 3: thread counts and devices -----------------------------------------------------------

def test_a_bundle_s_thread_count_and_device_are_not_used(neural_bundle, tmp_path, caplog):
    """num_threads=1000000 made libgomp run out of memory; a device the bundle
    names ('cuda:7') is not this machine's to choose either."""
    copy = _copy(neural_bundle, tmp_path)
    _edit_checkpoint(copy, "lstm-l", lambda c: c["params"].update(num_threads=1_000_000, device="cuda:7"))
    with caplog.at_level("WARNING"):
        model = Deidentifier.load(copy)
    member = model.members["lstm-l"]
    # Checked before anything is tagged: the old code would now start a million threads.
    assert (member.num_threads, member.device) == (1, "auto")
    assert "num_threads=1000000 saved with the model is not used" in caplog.text
    assert "device='cuda:7' saved with the model is not used" in caplog.text
    assert model.spans([Document("note", NOTE)]) is not None


def test_a_thread_count_is_bounded_by_this_machine_s_cpus():
    from ensemble_deid.taggers.constraints import InvalidParameter, usable_cpus
    from ensemble_deid.taggers.registry import make_tagger

    for name, param in (("lstm-l", "num_threads"), ("char-cnn", "num_threads")):
        with pytest.raises(InvalidParameter, match=rf"{param}=1000000; expected None or an integer in \[1, "
                                                     rf"{usable_cpus()}\]"):
            make_tagger(name, **{param: 1_000_000})
    from ensemble_deid.ensemble.registry import make_method

    with pytest.raises(InvalidParameter, match=r"threads=1000000"):
        make_method("stacked-lstm", threads=1_000_000).validate_params()


def test_a_saved_stacked_lstm_s_threads_and_device_are_not_used(tmp_path):
    """The meta-learners share the mechanism: a saved method's machine settings are dropped."""
    from ensemble_deid.ensemble.stacked_lstm import StackedLSTM

    params = {**StackedLSTM().get_params(), "threads": 1_000_000, "device": "cuda:7"}
    loaded = StackedLSTM.loaded_params(params, "method")
    assert StackedLSTM(**loaded).get_params() == StackedLSTM().get_params()


# --- item 4: file parameters ------------------------------------------------------------------

class _Lookups:
    """Every stat, access or open of a path under ``roots`` while armed (an
    audit hook sees opens; the os functions a constraint or a library would
    use to look a path up are wrapped)."""

    hook_installed = False
    armed: "_Lookups | None" = None

    def __init__(self, monkeypatch, *roots):
        self.roots = tuple(str(r) for r in roots)
        self.seen: list[str] = []
        if not _Lookups.hook_installed:
            sys.addaudithook(lambda event, args: _Lookups.armed and event == "open" and _Lookups.armed._saw(args[0]))
            _Lookups.hook_installed = True
        for name in ("stat", "lstat", "access"):
            real = getattr(os, name)
            monkeypatch.setattr(os, name, self._wrap(real))
        monkeypatch.setattr(_Lookups, "armed", self)

    def _saw(self, path) -> None:
        if isinstance(path, (str, bytes, os.PathLike)) and os.fsdecode(path).startswith(self.roots):
            self.seen.append(os.fsdecode(path))

    def _wrap(self, real):
        def wrapped(path, *args, **kwargs):
            self._saw(path)
            return real(path, *args, **kwargs)
        return wrapped


@pytest.mark.parametrize("member, param", [("lstm-l", "embeddings_path"), ("lstm-crf-fea", "ehr_names_path")])
def test_a_file_parameter_in_a_bundle_is_refused_without_looking_the_path_up(neural_bundle, tmp_path, monkeypatch,
                                                                             member, param):
    """embeddings_path=/etc/passwd loaded (stat'ed and access-checked); a
    missing path was refused naming it, so a bundle could probe which files
    exist. Now both are refused alike, and no path outside the bundle is
    stat'ed, access-checked or opened."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "exists.txt").write_text("word 0.1 0.2\n")
    messages = []
    for target in (outside / "exists.txt", outside / "missing.txt"):
        copy = _copy(neural_bundle, tmp_path, target.stem)
        _edit_checkpoint(copy, member, lambda c: c["params"].update({param: str(target)}))
        with monkeypatch.context() as m:
            lookups = _Lookups(m, outside)
            with pytest.raises(BundleError) as caught:
                Deidentifier.load(copy)
        assert lookups.seen == [], lookups.seen
        messages.append(str(caught.value).replace(target.stem, "X").replace(copy.name, "C"))
        assert f"sets {param!r}" in str(caught.value) and "nothing outside itself" in str(caught.value)
    assert messages[0] == messages[1]  # the refusal says nothing of whether the file exists


@pytest.mark.parametrize("param", ["config", "label_map"])
def test_a_philter_member_naming_its_configuration_files_is_refused(philter_bundle, tmp_path, monkeypatch, param):
    outside = tmp_path / "outside"
    outside.mkdir()
    copy = _copy(philter_bundle, tmp_path)
    _edit_params(copy, "members/00-philter", **{param: str(outside / "philter.json")})
    with monkeypatch.context() as m:
        lookups = _Lookups(m, outside)
        with pytest.raises(BundleError, match=f"sets '{param}'.*nothing outside itself"):
            Deidentifier.load(copy)
    assert lookups.seen == []


def test_a_bundle_fitted_with_a_local_vectors_file_loads_where_the_file_is_not(tmp_path):
    """Only fit reads the vectors file: the bundle records no path, and loads
    (with the same output) on a machine without the file."""
    pytest.importorskip("torch")
    from ensemble_deid.taggers.registry import make_tagger

    docs = tiny_corpus(10, seed=3)
    vectors = tmp_path / "local" / "vectors.txt"
    vectors.parent.mkdir()
    words = sorted({w.lower() for d in docs for w in d.tokens.words})[:50]
    vectors.write_text("".join(f"{w} " + " ".join(f"{(i * 7 + k) % 11 / 10:.1f}" for k in range(8)) + "\n"
                               for i, w in enumerate(words)))
    tagger = make_tagger("lstm-l", epochs=1, batch_size=4, char_dim=6, char_lstm_dim=6, word_dim=8, word_lstm_dim=8,
                         validation_fraction=0.0, max_length=0, embeddings_path=str(vectors)).fit(docs)
    before = [p.tags for p in tagger.predict(docs)]
    Deidentifier({"lstm-l": tagger}).save(tmp_path / "model", {"labels": ["NAME:PATIENT"]})
    shutil.rmtree(vectors.parent)
    assert str(vectors) not in (tmp_path / "model" / "manifest.json").read_text()
    loaded = Deidentifier.load(tmp_path / "model").members["lstm-l"]
    assert loaded.embeddings_path is None
    assert [p.tags for p in loaded.predict(docs)] == before


def test_every_parameter_naming_a_file_or_the_machine_is_declared_so():
    """Contract over every registered tagger and meta-learner: a parameter
    naming a file, folder or program is local (refused in a bundle) or
    fit-only, and one setting threads, processes or a device is the machine's."""
    from ensemble_deid.ensemble.registry import METHODS
    from ensemble_deid.taggers.constraints import EXISTING_FILE
    from ensemble_deid.taggers.registry import entry_points, tagger_class

    classes = [tagger_class(name) for name in sorted(entry_points())] + list(METHODS.values())
    wrong = []
    for cls in classes:
        constraints = cls.parameter_constraints()
        declared_local = {*getattr(cls, "local_params", ()), *cls.fit_only_params, getattr(cls, "program_param", None)}
        for name in cls._param_names():
            names_a_file = (EXISTING_FILE in constraints.get(name, []) or name in ("config", "label_map", "model")
                            or name.endswith(("_path", "_dir", "_dirs", "_home", "_pl")))
            if names_a_file and name not in declared_local and not (cls.name == "rules" and name == "label_map"):
                wrong.append(f"{cls.name}: {name} names a file but is not local")
            machine = any(word in name for word in ("thread", "device", "jobs", "workers", "processes"))
            if machine and name not in cls.machine_params:
                wrong.append(f"{cls.name}: {name} is the machine's but not in machine_params")
    assert wrong == []


# --- item 5: the method's parameters against its members ----------------------------------------

def test_a_voting_threshold_above_the_members_is_refused_at_load_as_in_fit(bundle, tmp_path):
    """A resealed voting bundle of 2 members with threshold 3 loaded and tagged nothing; fit refused it."""
    copy = _copy(bundle, tmp_path)
    _edit_params(copy, "method", threshold=3)
    with pytest.raises(BundleError, match=r"method: threshold 3 exceeds the number of members \(2\)"):
        Deidentifier.load(copy)


def test_fit_refuses_a_threshold_above_the_members_through_the_same_check():
    from ensemble_deid.ensemble import make_method

    docs = tiny_corpus(6, seed=2)
    preds = {"a": {d.id: _gold(d) for d in docs}, "b": {d.id: _gold(d) for d in docs}}
    with pytest.raises(ValueError, match=r"threshold 3 exceeds the number of members \(2\)"):
        make_method("voting", threshold=3).fit(preds, docs)
    with pytest.raises(ValueError, match=r"threshold 3 exceeds the number of members \(2\)"):
        make_method("voting-pruned", threshold=3, trust=None).fit(preds, docs)


def _gold(doc):
    from ensemble_deid.corpus.bio import gold_tags
    from ensemble_deid.taggers.prediction import DocumentPrediction

    return DocumentPrediction(doc.id, tuple(gold_tags(doc)), None)


def test_a_pruned_voting_bundle_whose_thresholds_exceed_its_members_is_refused(tmp_path):
    from ensemble_deid.ensemble import make_method
    from ensemble_deid.taggers.registry import make_tagger

    docs = tiny_corpus(10, seed=4)
    members = {"crf": make_tagger("crf", max_iterations=5).fit(docs), "rules": make_tagger("rules").fit(docs)}
    preds = {name: {p.doc_id: p for p in t.predict(docs)} for name, t in members.items()}
    method = make_method("voting-pruned", trust=None).fit(preds, docs)
    Deidentifier(members, method).save(tmp_path / "model", {"labels": ["NAME:PATIENT"]})
    for name, edit in (("param", lambda s: _edit_params(s, "method", threshold=3)),
                       ("chosen", lambda s: _edit_state(s, "method", threshold_=len(method.subset_) + 1))):
        copy = _copy(tmp_path / "model", tmp_path, name)
        edit(copy)
        with pytest.raises(BundleError, match="exceeds the number of members"):
            Deidentifier.load(copy)


def _edit_state(copy: Path, where: str, **values) -> None:
    state = copy / where / "state.json"
    body = json.loads(state.read_text())
    body["state"].update(values)
    state.write_text(json.dumps(body))
    reseal(copy)


# --- item 11: a damaged Vowpal Wabbit model ----------------------------------------------------

@pytest.fixture(scope="module")
def vw_bundle(tmp_path_factory):
    pytest.importorskip("vowpalwabbit")
    from ensemble_deid.taggers.registry import make_tagger

    root = tmp_path_factory.mktemp("vw")
    tagger = make_tagger("ogd", passes=1, bits=16).fit(tiny_corpus(8, seed=5))
    return Deidentifier({"ogd": tagger}).save(root / "model", {"labels": ["NAME:PATIENT"]})


@pytest.mark.parametrize("damage", ["random-bytes", "header"])
def test_a_damaged_vowpal_wabbit_model_is_called_damaged_not_a_full_disk(vw_bundle, tmp_path, damage):
    import random

    copy = _copy(vw_bundle, tmp_path)
    (model,) = (copy / "members" / "00-ogd").glob("*.bin")
    data = bytearray(model.read_bytes())
    rng = random.Random(52)
    if damage == "random-bytes":
        data = bytearray(rng.randbytes(len(data)))
    else:
        data[:40] = rng.randbytes(40)
    model.write_bytes(bytes(data))
    reseal(copy)
    with pytest.raises(BundleError) as caught:
        Deidentifier.load(copy)
    text = str(caught.value)
    assert "00-ogd: ogd: its Vowpal Wabbit model model_.bin: not a model Vowpal Wabbit can read (the file is damaged" \
        in text, text
    assert model.name == "model_.bin"
    assert "disk" not in text


def test_a_full_disk_while_reading_a_vowpal_wabbit_model_back_is_still_said(vw_bundle, tmp_path, monkeypatch):
    """The other cause stays told apart: the model's scratch copy cannot be written."""
    from ensemble_deid.files import FileWriteError
    from ensemble_deid.taggers import linear

    real_open = open

    def full(path, mode="r", *args, **kwargs):
        if "w" in mode and str(path).endswith("model.vw"):
            raise OSError(28, "No space left on device")
        return real_open(path, mode, *args, **kwargs)

    monkeypatch.setattr("builtins.open", full)
    with pytest.raises(FileWriteError, match="disk full"):
        linear.VowpalModel(b"anything")


# --- item 13: a compressed tensor -----------------------------------------------------------------

def _compress_first_tensor(path: Path) -> Path:
    """The checkpoint at ``path`` with its first tensor's entry replaced by a
    200 MB block, deflated (a few hundred kilobytes)."""
    with zipfile.ZipFile(path) as zf:
        entries = [(info, zf.read(info)) for info in zf.infolist()]
    buf, done = io.BytesIO(), False
    with zipfile.ZipFile(buf, "w") as out:
        for info, data in entries:
            if "/data/" in info.filename and not done:
                bomb = zipfile.ZipInfo(info.filename)
                bomb.compress_type = zipfile.ZIP_DEFLATED
                with out.open(bomb, "w", force_zip64=True) as fh:
                    for _ in range(200):
                        fh.write(bytes(1 << 20))
                done = True
            else:
                out.writestr(info, data)
    path.write_bytes(buf.getvalue())
    return path


def test_a_compressed_tensor_in_a_checkpoint_is_refused_before_torch_unpacks_it(neural_bundle, tmp_path, monkeypatch):
    """A 200 MB tensor deflated to a few hundred kilobytes was unpacked in
    full before it was refused; the central directory declares its size."""
    torch = pytest.importorskip("torch")
    copy = _copy(neural_bundle, tmp_path)
    path = _compress_first_tensor(next((copy / "members").glob("*-lstm-l")))
    assert path.stat().st_size < 2_000_000
    reseal(copy)
    loads = []
    real_load = torch.load
    monkeypatch.setattr(torch, "load", lambda *a, **k: loads.append(a) or real_load(*a, **k))
    with pytest.raises(BundleError, match="compressed"):
        Deidentifier.load(copy)
    assert loads == []  # refused from the central directory, before torch read the entry


# --- the neural-checkpoint fuzzer's new cases ------------------------------------------------------

def test_fuzzed_neural_checkpoint_parameters_never_reach_the_machine(neural_bundle, tmp_path, monkeypatch):
    """Checkpoint parameters of a bundle's BiLSTM members replaced by thread
    counts, devices, file paths (existing, missing, the machine's own) and
    absurd numbers, or a tensor entry replaced by a compressed 200 MB block,
    the bundle resealed (a new seed). Each case loads with this machine's
    thread count and device, or is refused as a BundleError; never another
    exception, and no path a bundle named is ever looked up."""
    import random

    pytest.importorskip("torch")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "vectors.txt").write_text("word 0.1 0.2\n")
    values = {
        "num_threads": [1_000_000, 2 ** 31, 0, -1, "x", None, 2],
        "device": ["cuda:7", "tpu", "cpu", "", None],
        "embeddings_path": [str(outside / "vectors.txt"), str(outside / "missing.txt"), "/etc/passwd", ""],
        "ehr_names_path": [str(outside / "vectors.txt"), str(outside / "missing.txt"), "/etc/passwd"],
        "lr": [1e308, 3.5e38, float("nan"), -1.0, 1e-320], "linear_decay": [1e308, -1.0],
        "epochs": [2 ** 31, 2 ** 63, 0], "clip": [1e308], "lr_decay": [1e308],
    }
    rng = random.Random(52)
    outcomes = {"loaded": 0, "refused": 0}
    for case in range(16):
        copy = _copy(neural_bundle, tmp_path, f"c{case}")
        member = rng.choice(["lstm-l", "lstm-crf-fea"])
        if rng.random() < 0.15:  # a compressed tensor entry
            _compress_first_tensor(next((copy / "members").glob(f"*-{member}")))
            reseal(copy)
        else:
            names = [n for n in values if n != "ehr_names_path" or member == "lstm-crf-fea"]
            edits = {n: rng.choice(values[n]) for n in rng.sample(names, rng.choice((1, 2, 3)))}
            _edit_checkpoint(copy, member, lambda c: c["params"].update(edits))
        with monkeypatch.context() as m:
            lookups = _Lookups(m, outside, "/etc/passwd")
            try:
                model = Deidentifier.load(copy)
                for tagger in model.members.values():
                    assert (tagger.num_threads, tagger.device) == (1, "auto")
                model.spans([Document("note", NOTE)])
                outcomes["loaded"] += 1
            except BundleError:
                outcomes["refused"] += 1
        assert lookups.seen == [], (case, lookups.seen)
        shutil.rmtree(copy)
    assert outcomes["loaded"] >= 2 and outcomes["refused"] >= 6, outcomes
