"""Honest parameters (issue 21 items 9-11, issue 22 items 1 and 7): fixed
ensemble parameters are the ones used, every tagger, method and study value
is checked before any work starts, and mistyped names get a suggestion."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from click.testing import CliRunner

from ensemble_deid.cli import main
from ensemble_deid.cli.ensemble import SCORE_HEADERS
from ensemble_deid.ensemble import GridSearch, StackedSVM, Voting
from ensemble_deid.errors import EnsembleDeidError
from ensemble_deid.studies.study import StudyConfig
from ensemble_deid.taggers.constraints import Interval, InvalidParameter, Options, validate_params
from ensemble_deid.taggers.registry import make_tagger

from .tables import terminal_row
from .test_ensemble_fixtures import NAME, doc, members_of, spans_of


def _run(*args, ok=True):
    result = CliRunner().invoke(main, [str(a) for a in args])
    if ok:
        assert result.exit_code == 0, result.output + repr(result.exception)
    else:
        assert result.exit_code != 0, result.output
        assert "Traceback" not in result.output and not isinstance(result.exception, (TypeError, AttributeError))
    return result


def _entries(workspace: Path) -> list[Path]:
    root = workspace / "cached_predictions"
    return sorted(p for p in root.rglob("*") if p.is_dir()) if root.exists() else []


# --- 21.9 = 22.1: fixed ensemble parameters --------------------------------------

def _three_vote_case():
    """Four notes (four patients), gold A = tokens 0-1 and B = tokens 2-3.
    m0 finds A, B and a false span C (tokens 4-5); m1 finds A and B; m2 finds A.
    Votes: A 3, B 2, C 1. Per note, by hand:
      threshold 1: A, B, C -> tp 2, fp 1, fn 0
      threshold 2: A, B    -> tp 2, fp 0, fn 0   (the best: CV chooses it)
      threshold 3: A       -> tp 1, fp 0, fn 1
    Over the four notes: F1 0.8, 1.0 and 2*4/(2*4+4) = 2/3."""
    docs = [doc(f"d{i}", 8, [(0, 1, NAME), (2, 3, NAME)], group=f"p{i}") for i in range(4)]
    a, b, c = (0, 1, NAME), (2, 3, NAME), (4, 5, NAME)
    members = members_of(docs, {"m0": {d.id: [a, b, c] for d in docs}, "m1": {d.id: [a, b] for d in docs},
                                "m2": {d.id: [a] for d in docs}})
    return docs, members


def _f1(docs, preds) -> float:
    gold = {(d.id, 0, 1, NAME) for d in docs} | {(d.id, 2, 3, NAME) for d in docs}
    found = {(p.doc_id, *s) for p, d in zip(preds, docs) for s in spans_of(d, p)}
    tp = len(gold & found)
    return 2 * tp / (len(gold) + len(found))


# Threshold 3 keeps A alone (F1 2/3) unless trust keeps m1's B: m1 is right on every NAME
# span it predicts (on the 2 notes of a CV fit: 4 / 5 = 0.8, so only the 0.8 level trusts it;
# on all 4 notes 8 / 9), so CV chooses 0.8 and F1 is 1.0. Threshold 1 keeps C whatever trust does.
@pytest.mark.parametrize("threshold, trust, expected_f1", [(1, None, 0.8), (3, 0.8, 1.0)])
def test_fixed_voting_threshold_is_the_one_used(threshold, trust, expected_f1):
    docs, members = _three_vote_case()
    chosen = GridSearch(Voting(), folds=2).fit(members, docs)
    assert chosen.best_params_ == {"threshold": 2, "trust": None}
    assert _f1(docs, chosen.predict(members, docs)) == 1.0
    fixed = GridSearch(Voting(threshold=threshold), folds=2, fixed=("threshold",)).fit(members, docs)
    assert fixed.best_params_ == {"trust": trust}  # only trust (ensemble.trust) is left to choose
    assert fixed.chosen_params() == {"overlap": "greedy", "threshold": threshold, "operating_point": None,
                                     "trust": trust}
    assert math.isclose(_f1(docs, fixed.predict(members, docs)), expected_f1)


def test_fixed_value_equal_to_the_default_is_still_fixed():
    # Voting's constructor default is threshold=2: fixing 2 must not search 1..m.
    docs, members = _three_vote_case()
    search = GridSearch(Voting(threshold=2), folds=2, fixed=("threshold",)).fit(members, docs)
    assert all("threshold" not in r.params for r in search.cv_results_) and search.fits_ == 5 * 2 + 1  # trust only


def test_fixed_and_searched_together_is_refused_before_fitting():
    with pytest.raises(InvalidParameter, match="threshold is both fixed and searched"):
        GridSearch(Voting(threshold=2), {"threshold": [1, 2]}, fixed=("threshold",)).validate_params()
    with pytest.raises(InvalidParameter, match=r"C='a'"):
        GridSearch(StackedSVM(), {"C": ["a", "b"]}).validate_params()
    with pytest.raises(InvalidParameter, match="cannot search unknown parameter 'c'"):
        GridSearch(StackedSVM(), {"c": [1.0]}).validate_params()
    with pytest.raises(InvalidParameter, match=r"threshold=0"):
        GridSearch(Voting(threshold=0), fixed=("threshold",)).validate_params()


@pytest.fixture
def tiny(tiny_registered):
    return tiny_registered


MEMBERS = "memorize,memorize:max_len=1,memorize:max_len=2"


def _test_f1(output: str) -> str:
    return terminal_row(output, "ensemble.voting")[SCORE_HEADERS.index("test F1")]


# Every parameter case runs through `ensemble` and through `fit`: both build
# their grid search in one place (issue 35 item 2), so what one uses, checks
# or refuses, the other does too.
COMMANDS = ["ensemble", "fit"]


def _ensemble_or_fit(command, out: Path, *args, ok=True):
    extra = ["--no-diagnostics"] if command == "ensemble" else ["--out", out]
    return _run(command, *args, "--no-progress", *extra, ok=ok)


def _fixed_record(command, out: Path, workspace: Path) -> tuple[dict, list]:
    """(parameters used, fixed names) as the command records them."""
    if command == "fit":
        from ensemble_deid.deid import read_bundle

        manifest, _, method = read_bundle(out)
        assert method.get_params() == manifest["selection"]["params"]  # the saved method is the one recorded
        return manifest["selection"]["params"], manifest["selection"]["fixed"]
    records = [data["selection"] for meta in (workspace / "cached_predictions").rglob("*.json")
               if isinstance(data := json.loads(meta.read_text()), dict) and "selection" in data]
    (record,) = records
    return record["params"], record["fixed"]


def _f1_of(command, output: str, out: Path) -> str:
    if command == "fit":
        from ensemble_deid.deid import read_manifest

        assert "spans identical to the cached 'ensemble' predictions on 10/10" in output
        return f"{read_manifest(out)['scores']['test_strict']['f1']:.4f}"
    return _test_f1(output)


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("threshold", [1, 2])
def test_cli_param_is_used_printed_and_recorded(tiny, workspace, tmp_path, command, threshold):
    fixed = _ensemble_or_fit(command, tmp_path / "fixed", "--corpus", tiny, "--method", "voting", "--members",
                             MEMBERS, "--folds", "3", "--param", f"threshold={threshold}").output
    params, names = _fixed_record(command, tmp_path / "fixed", workspace)
    params.pop("trust")  # chosen by CV (ensemble.trust), not fixed
    assert params == {"overlap": "greedy", "threshold": threshold, "operating_point": None} and names == ["threshold"]
    if command == "ensemble":
        assert "chosen parameters: {'trust': " in fixed  # only trust (ensemble.trust) is left to choose
        assert f"parameters used: overlap='greedy', threshold={threshold} (fixed)" in fixed
    else:
        assert f"fixed {{'threshold': {threshold}}}" in fixed
    searched = _ensemble_or_fit(command, tmp_path / "searched", "--corpus", tiny, "--method", "voting", "--members",
                                MEMBERS, "--folds", "3", "--grid", f"threshold={threshold}",
                                "--grid", "trust=None|0.99|0.95|0.9").output
    # The same model: threshold fixed or the one value searched (trust searched in both).
    assert _f1_of(command, searched, tmp_path / "searched") == _f1_of(command, fixed, tmp_path / "fixed")


def _refused(command, tmp_path, workspace, *args, says: str):
    before = _entries(workspace)
    res = _ensemble_or_fit(command, tmp_path / "model", "--corpus", "tiny", *args, ok=False)
    assert res.exit_code == 2 and says in res.output, res.output
    assert _entries(workspace) == before  # no member was computed, no entry made
    assert not (tmp_path / "model").exists()
    return res


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("args, says", [
    (["--method", "stacked-svm", "--grid", "C=a|b"], "C='a'"),
    (["--method", "voting", "--param", "threshold=2", "--grid", "threshold=1|2"], "both fixed and searched"),
    (["--method", "voting", "--param", "threshold=-1"], "threshold=-1"),
    (["--method", "voting", "--param", "nope=1"], "invalid parameter 'nope'"),
    (["--method", "voting", "--grid", "threshold=1|abc"], "threshold='abc'"),
    (["--method", "voting", "--grid", "bogus=1|2"], "cannot search unknown parameter 'bogus'"),
    (["--method", "stacked-svm", "--grid", "C=0|1"], "C=0"),
    (["--method", "stacked-svm", "--param", "C=inf"], "C=inf"),  # was saved by fit as C=1.0
    # An option of the learner that would silently override one of its parameters (issue 31 item 5).
    (["--method", "stacked-searn", "--param", "vw_options=--random_seed 5"],
     "vw_options sets --random_seed, which the method sets itself from its parameter random_state"),
    (["--method", "stacked-searn", "--grid", "vw_options=-b 10|"], "vw_options sets -b"),
    (["--method", "voting", "--grid", "threshold"], "expected key=v1|v2"),
])
def test_cli_grid_and_param_errors_come_before_any_work(tiny, workspace, tmp_path, command, args, says):
    _refused(command, tmp_path, workspace, "--members", MEMBERS, *args, says=says)


def test_fit_names_one_tagger_before_any_work(tiny, workspace, tmp_path):
    res = _refused("fit", tmp_path, workspace, "--tagger", "memorize,memorize:max_len=1", says="name one tagger")
    assert "--tagger" in res.output


# --- 21.10: tagger parameters before any work ------------------------------------

BAD_TAGGER_SPECS = [
    ("crf:max_iterations=0", "max_iterations=0"), ("crf:c1=-1", "c1=-1"), ("crf:c1=abc", "c1='abc'"),
    ("crf:c1=nan", "c1=nan"), ("memm:max_iter=-1", "max_iter=-1"), ("lstm-l:epochs=-1", "epochs=-1"),
    ("lstm-l:device=tpu", "device='tpu'"), ("rules:label_map=nosuch", "label_map 'nosuch'"),
    # Issue 35 item 12: values that passed the constraints, then crashed, ran for ever or fitted nothing.
    ("crf:c1=inf", "c1=inf"), ("crf:c2=inf", "c2=inf"), ("memm:tol=inf", "tol=inf"), ("mira:c=inf", "c=inf"),
    ("lstm-l:lr=inf", "lr=inf"), ("crf:random_state=-1", "random_state=-1"),
    ("lstm-l:word_lstm_dim=100000000000000000000", "word_lstm_dim=100000000000000000000"),
    ("lstm-l:epochs=100000000000000000000", "epochs=100000000000000000000"),
    ("lstm-l:embeddings_path=/no/such/vectors.vec", "embeddings_path='/no/such/vectors.vec'"),
    ("lstm-l:device=cuda:7", "device='cuda:7'"), ("ogd:l2=1e20", "l2=1e+20"),
    ("char-cnn:device=cuda:7", "device='cuda:7'"),  # issue 36: char-cnn's device, checked as the BiLSTMs'
    # Issue 52 item 10: absurd finite values, refused naming the range; item 3: threads beyond the CPUs.
    ("crf:c1=1e308", "c1=1e+308; expected a number in [0, 10000]"), ("lstm-l:lr=1e308", "lr=1e+308"),
    ("ogd:learning_rate=1e308", "learning_rate=1e+308; expected a number in (0, 10]"),
    ("svm:c=1e308", "c=1e+308"), ("struct-svm:cost=1e308", "cost=1e+308"), ("crf:epsilon=1e308", "epsilon=1e+308"),
    ("lstm-l:num_threads=1000000", "num_threads=1000000"),
]
# Feature settings nested in ``features`` (every linear tagger rebuilds its extractor from them when loaded).
BAD_FEATURES = [{"window": 10**9}, {"ngrams": 0}, {"affixes": [1] * 1000}, {"affixes": [10**9]}, {"no_such": True}]


@pytest.mark.parametrize("spec, named", BAD_TAGGER_SPECS)
def test_bad_tagger_parameters_fail_before_any_work(tiny, workspace, spec, named):
    res = _run("cv", "--corpus", tiny, "--taggers", f"memorize,{spec}", "--folds", "3", "--no-progress", ok=False)
    tagger = spec.split(":")[0]
    assert res.exit_code == 2 and f"tagger {tagger!r}" in res.output and named in res.output, res.output
    assert _entries(workspace) == []  # not even the valid tagger's entry


def test_bad_tagger_parameters_refused_by_make_tagger():
    for spec, named in BAD_TAGGER_SPECS:
        name, _, param = spec.partition(":")
        key, _, value = param.partition("=")
        from ensemble_deid.experiment.cv import _parse_value

        with pytest.raises(InvalidParameter, match=key):
            make_tagger(name, **{key: _parse_value(value)})


ABSURD = [10**20, -(10**20), float("inf"), float("-inf"), float("nan")]


def _declared():
    from ensemble_deid.ensemble.registry import METHODS
    from ensemble_deid.taggers.registry import entry_points, tagger_class

    for name in sorted(entry_points()):
        try:
            cls = tagger_class(name)
        except Exception:  # noqa: BLE001 - an adapter whose library is missing here
            continue
        yield f"tagger {name}", cls.parameter_constraints()
    for name, cls in sorted(METHODS.items()):
        yield f"method {name}", cls.parameter_constraints()
    yield "grid search", GridSearch.parameter_constraints()


def test_no_declared_parameter_accepts_an_infinite_or_absurd_number():
    # Issue 35 item 12, the sweep over every tagger and meta-learner: a count or
    # size must be bounded and no number may be infinite or NaN.
    from ensemble_deid.taggers.constraints import accepts

    accepted = []
    for owner, declared in _declared():
        for param, constraints in declared.items():
            if constraints == "no_validation":
                continue
            integer = accepts(constraints, 1) and not accepts(constraints, 1.5)  # a count, size or seed
            for value in ABSURD if integer else ABSURD[2:]:
                if accepts(constraints, value):
                    accepted.append(f"{owner}: {param}={value!r}")
    assert accepted == []


@pytest.mark.parametrize("features", BAD_FEATURES)
def test_absurd_feature_settings_are_refused_by_every_tagger_that_takes_them(features):
    for name in ("crf", "svm", "ogd", "lstm-crf-fea"):
        with pytest.raises(InvalidParameter, match=r"features=.*expected None or a table of feature settings"):
            make_tagger(name, features=features)


def test_every_numeric_parameter_declares_finite_bounds():
    # Issue 52 item 10, the contract over every registered tagger and
    # meta-learner: a number is bounded on both sides by what means something
    # (1e308 passed every unbounded end and ended in a library's traceback).
    unbounded = []
    for owner, declared in _declared():
        for param, constraints in declared.items():
            if constraints == "no_validation":
                continue
            for c in constraints:
                if c is int or c is float or (isinstance(c, Interval) and (c.low is None or c.high is None)):
                    unbounded.append(f"{owner}: {param} ({c})")
    assert unbounded == []


def test_fit_refuses_an_absurd_vowpal_wabbit_learning_rate_before_any_work(tiny, workspace, tmp_path):
    # Was a Vowpal Wabbit traceback (its rates are 32-bit floats).
    res = _refused("fit", tmp_path, workspace, "--tagger", "ogd:learning_rate=1e308",
                   says="invalid value learning_rate=1e+308; expected a number in (0, 10]")
    assert "tagger 'ogd'" in res.output


@pytest.mark.parametrize("method, param, value", [
    ("stacked-svm", "C", float("inf")), ("stacked-svm", "random_state", -1),
    ("stacked-lstm", "hidden_size", 10**20), ("stacked-lstm", "device", "tpu"), ("stacked-lstm", "device", "cuda:7"),
    ("stacked-searn", "vw_options", "--no_such_option"), ("stacked-searn", "vw_options", "-f /tmp/model.vw"),
    ("stacked-searn", "window", 10**6),
    # Issue 52 item 10: finite but absurd.
    ("stacked-svm", "C", 1e308), ("stacked-lstm", "learning_rate", 1e308), ("stacked-searn", "learning_rate", 1e308),
    ("voting-pruned", "budget", 1e308), ("stacked-lstm", "threads", 10**6), ("stacked-svm", "class_weight", {1: 1e308}),
])
def test_meta_learner_values_that_crashed_later_are_refused_up_front(method, param, value):
    from ensemble_deid.ensemble.registry import make_method

    with pytest.raises(InvalidParameter, match=f"{param}={value!r}".replace("(", r"\(").replace("+", r"\+")):
        make_method(method, **{param: value}).validate_params()


def test_accepted_vw_options_still_work():
    from ensemble_deid.ensemble.registry import make_method

    make_method("stacked-searn", vw_options="--search_rollin policy --search_rollout policy").validate_params()


def test_constraints_in_words_and_edges():
    c = {"n": [Interval(int, 1, None)], "p": [Interval(float, 0, 1, closed="left")], "s": [None, Options("a", "b")],
         "q": [Interval(float, 0, None)]}  # unbounded above: (0, inf) holds no inf
    validate_params("t", {"n": 1, "p": 0.0, "s": None}, c)
    for bad, words in [({"n": 0}, "an integer in [1, inf)"), ({"n": True}, "n=True"), ({"n": 2.0}, "n=2.0"),
                       ({"p": 1}, "a number in [0, 1)"), ({"p": float("nan")}, "p=nan"), ({"q": float("inf")}, "q=inf"), ({"s": "c"}, "None or one of 'a', 'b'")]:
        with pytest.raises(InvalidParameter, match=words.replace("[", r"\[").replace("(", r"\(").replace(")", r"\)")):
            validate_params("t", bad, c)


# --- 21.11: folds, grid values, jobs, the study config -----------------------------

def test_more_folds_than_patients_is_one_clear_error(tiny, workspace):
    res = _run("cv", "--corpus", tiny, "--taggers", "memorize", "--folds", "500", "--no-progress", ok=False)
    assert "500 folds" in res.output and "patient group" in res.output and "lower --folds" in res.output
    assert _entries(workspace) == []


@pytest.mark.parametrize("jobs", ["-5", "0"])
def test_jobs_must_be_positive_or_minus_one(tiny, jobs):
    res = _run("cv", "--corpus", tiny, "--taggers", "memorize", "--jobs", jobs, ok=False)
    assert res.exit_code == 2 and f"jobs={jobs}" in res.output


@pytest.mark.parametrize("override, named", [
    ({"trials": 0}, "trials=0"), ({"significance_level": 2}, "significance_level=2"), ({"jobs": 0}, "jobs=0"),
    ({"objective": "xx"}, "objective='xx'"), ({"folds": 1}, "folds=1"), ({"test": "z-test"}, "test='z-test'"),
    ({"taggers": ["crf:c1=nan"]}, "c1=nan"), ({"methods": ["votng"]}, "did you mean 'voting'"),
    ({"method_params": {"stacked-svm": {"C": "a"}}}, "C='a'"),
    ({"method_params": {"voting": {"thresold": 2}}}, "invalid parameter 'thresold'"),
])
def test_study_config_is_validated_like_the_cli(override, named):
    with pytest.raises(EnsembleDeidError, match=named.replace("(", r"\(")):
        StudyConfig(**{"corpora": ["synthetic-2014"], "taggers": ["rules"], **override})


def test_study_toml_with_a_bad_metric_fails_before_running(tmp_path, workspace):
    cfg = tmp_path / "study.toml"
    cfg.write_text('corpora = ["synthetic-2014"]\ntaggers = ["rules"]\nmethods = ["voting"]\nmetric = "xx"\n')
    res = _run("study", "--config", cfg, "--no-progress", ok=False)
    assert res.exit_code == 2 and "objective='xx'" in res.output
    assert not (workspace / "results").exists()


def test_study_uses_and_records_fixed_method_params(tmp_path, workspace, tiny):
    from ensemble_deid.corpus.workspace import Workspace
    from ensemble_deid.studies.study import Study

    cfg = StudyConfig(corpora=[tiny], taggers=["memorize", "memorize:max_len=1", "memorize:max_len=2"],
                      methods=["voting"], folds=3, trials=100, method_params={"voting": {"threshold": 1}})
    result = Study(Workspace(workspace), cfg, log=lambda m: None, progress=False).run(tmp_path / "out")
    chosen = [record for column in result.manifest["chosen"].values()
              for method, record in column.items() if method != "best single member"]
    untrusted = lambda d: {k: x for k, x in d.items() if k != "trust"}  # noqa: E731  (trust: chosen by CV)
    assert chosen and all(untrusted(v["params"]) == {"overlap": "greedy", "threshold": 1, "operating_point": None}
                          and v["fixed"] == ["threshold"] and untrusted(v["chosen_by_cv"]) == {} for v in chosen)


# --- 22.7: taggers NAME and "did you mean" ----------------------------------------

def test_taggers_name_shows_parameters_defaults_and_constraints():
    out = _run("taggers", "crf").output
    row = next(line.split() for line in out.splitlines() if line.startswith("max_iterations "))
    assert row[1] == "100" and "an integer in [1, 1,000,000]" in " ".join(row)
    assert "one of 'document', 'sentence'" in " ".join(out.split())
    res = _run("taggers", "crff", ok=False)
    assert "did you mean 'crf'?" in res.output


def test_taggers_listings_fit_80_columns(monkeypatch):
    # issue 34 item 8: the listing was about 220 characters wide, a tagger's parameters up to 109
    monkeypatch.setenv("COLUMNS", "80")
    for args in (["taggers"], ["taggers", "lstm-crf-fea"], ["taggers", "memm"], ["taggers", "rules"]):
        out = _run(*args).output
        assert max(len(line) for line in out.splitlines()) <= 80, (args, out)
    listing = _run("taggers").output
    assert "mist: not configured: set ENSEMBLE_DEID_MIST_HOME" in listing  # the notes, below the table


@pytest.mark.parametrize("args, suggestion", [
    (["cv", "--corpus", "synthetic-2014", "--taggers", "memm,crff"], "did you mean 'crf'?"),
    (["cv", "--corpus", "synthetic-214", "--taggers", "rules", "--no-progress"], "did you mean 'synthetic-2014'?"),
    (["ensemble", "--corpus", "synthetic-2014", "--method", "votng", "--members", "rules,memm"], "did you mean 'voting'?"),
    (["compare", "rules", "memm", "--corpus", "synthetic-2014", "--criterion", "strcit"], "did you mean 'strict'?"),
])
def test_mistyped_names_get_a_suggestion(workspace, args, suggestion):
    res = _run(*args, ok=False)
    assert suggestion in res.output, res.output


def test_unknown_corpus_names_the_workspace_searched(workspace):
    res = _run("cv", "--corpus", "meddocan", "--taggers", "rules", "--no-progress", ok=False)
    assert f"in workspace {workspace}" in res.output and "ENSEMBLE_DEID_HOME" in res.output


# --- 22.4: silent surprises ---------------------------------------------------------

def test_ensemble_at_default_folds_reuses_the_cached_cv_and_says_so(tiny):
    _run("cv", "--corpus", tiny, "--taggers", MEMBERS, "--folds", "3", "--no-progress")
    out = _run("ensemble", "--corpus", tiny, "--method", "voting", "--members", MEMBERS, "--no-progress",
               "--no-diagnostics").output
    assert "reusing the members' cached 3-fold CV" in out and "0/" not in out
    assert "3-fold CV (folds" in out and "by 3-fold CV" in out
    explicit = _run("ensemble", "--corpus", tiny, "--method", "voting", "--members", MEMBERS, "--folds", "5",
                    "--no-progress", "--no-diagnostics").output
    assert "cached for 3-fold CV, not 5-fold: computing a 5-fold CV" in explicit


def _register(tmp_path, name, train_docs, test_docs, dev_docs=None):
    from ensemble_deid.corpus.formats import write_i2b2_xml

    args = ["corpus", "add", name]
    for split, docs in (("train", train_docs), ("test", test_docs), ("dev", dev_docs)):
        if docs is None:
            continue
        d = tmp_path / name / split
        d.mkdir(parents=True)
        for doc in docs:
            write_i2b2_xml(doc, d / f"{doc.id}.xml")
        args += [f"--{split}", d]
    _run(*args)


def test_train_equal_to_test_and_unused_dev_are_said(tmp_path, workspace):
    from .tiny_corpus import tiny_corpus

    docs = tiny_corpus(30, seed=2)
    _register(tmp_path, "same", docs[:20], docs[:20], dev_docs=docs[20:])
    out = _run("ensemble", "--corpus", "same", "--method", "voting", "--members", MEMBERS, "--folds", "3",
               "--no-progress", "--no-diagnostics").output
    assert "the test split is identical to the training split" in out
    assert "has a dev split" in out and "train and test splits only" in out
    _register(tmp_path, "overlap", docs[:20], docs[15:25])
    out = _run("cv", "--corpus", "overlap", "--taggers", "memorize", "--folds", "3", "--no-progress").output
    assert "5 of 10 test document(s) also occur (same text) in the training split" in out


def test_label_mismatch_is_warned(tmp_path, workspace):
    # Gold relabelled to types no tagger knows: rules' i2b2 labels never match.
    from dataclasses import replace

    from ensemble_deid.corpus.document import Document

    from .tiny_corpus import tiny_corpus

    docs = [Document(d.id, d.text, [replace(a, category="OTHER", type="X") for a in d.annotations], d.metadata)
            for d in tiny_corpus(24, seed=3)]
    _register(tmp_path, "foreign", docs[:18], docs[18:])
    out = _run("cv", "--corpus", "foreign", "--taggers", "rules,memorize", "--folds", "3", "--no-progress").output
    assert "tagger rules:" in out and "labels that corpus 'foreign' never uses" in out and "label_map" in out
    assert "tagger memorize:" not in out


# --- fuzz: any spec text gives a tagger or one clean error --------------------------

def test_fuzzed_tagger_specs_never_crash():
    """Seeded and bounded: random parameter names (real and not) and values
    (numbers at and past every edge, strings, unicode) for every registered
    tagger. make_tagger either accepts or raises the toolkit's own error or
    ValueError naming the tagger; never a TypeError or AttributeError."""
    import random

    from ensemble_deid.experiment.cv import TaggerSpec
    from ensemble_deid.taggers.registry import entry_points, tagger_class
    from ensemble_deid.taggers.base import TaggerUnavailable

    rng = random.Random(21)
    values = ["0", "-1", "1", "2.5", "nan", "inf", "-inf", "1e999", "true", "none", "abc", "", "é", "0x10",
              "document", "sentence", "auto", "cpu", "cuda:0", "tpu", "1,2", "-0", "3000000000"]
    names = sorted(entry_points())
    tried = 0
    while tried < 150:  # a fixed count: a bound by the clock would test the machine's load
        name = rng.choice(names)
        real = sorted(tagger_class(name)()._param_names())
        key = rng.choice(real + ["bogus", "C", "c1 "]) if real else "bogus"
        text = f"{name}:{key}={rng.choice(values)}"
        tried += 1
        try:
            TaggerSpec.parse(text).make()
        except TaggerUnavailable:
            continue
        except (ValueError, EnsembleDeidError) as exc:
            assert name in str(exc) or text in str(exc), (text, str(exc))


@pytest.mark.parametrize("command", COMMANDS)
def test_voting_threshold_above_the_member_count_is_refused(tiny, workspace, tmp_path, command):
    _refused(command, tmp_path, workspace, "--method", "voting", "--members", MEMBERS, "--param", "threshold=4",
             says="threshold 4 exceeds the number of members (3)")
    res = _refused(command, tmp_path, workspace, "--method", "voting", "--members", MEMBERS,
                   "--grid", "threshold=2|5", says="threshold 5 exceeds")
    assert "--grid" in res.output
    # Two members: threshold 3 can never be reached (issue 35 item 2).
    _refused(command, tmp_path, workspace, "--method", "voting-pruned", "--members", "memorize,memorize:max_len=1",
             "--param", "threshold=3", says="threshold 3 exceeds the number of members (2)")


# --- the cache key: an int for a float parameter is the same model ------------------

def test_an_int_for_a_float_parameter_hashes_as_that_float():
    from ensemble_deid.taggers.base import Tagger

    class Scaled(Tagger):
        name = "scaled"

        def __init__(self, alpha=1.0, rounds=3, flag=False, note="x"):
            self.alpha = alpha
            self.rounds = rounds
            self.flag = flag
            self.note = note

    assert Scaled(alpha=1).param_hash() == Scaled().param_hash()  # as typed in "scaled:alpha=1"
    assert Scaled(alpha=1).hashed_params()["alpha"] == 1.0
    assert Scaled(alpha=2).param_hash() != Scaled().param_hash()
    assert Scaled(rounds=3.0).param_hash() != Scaled().param_hash()  # int defaults are not coerced
    assert Scaled(flag=True).hashed_params()["flag"] is True


# --- 31.5: fit's --folds is the selection's folds, as ensemble's ----------------------

def test_fit_reuses_the_members_cached_folds_for_the_selection_too(tiny, workspace, tmp_path):
    # The members are cached for 3-fold CV only; --folds left at its default
    # reuses that CV (said), and the selection then uses 3 folds too: the
    # ensemble entry 'ensemble --folds 3' made, not a 10-fold choice beside it.
    _run("ensemble", "--corpus", tiny, "--method", "voting", "--members", MEMBERS, "--folds", "3", "--no-progress",
         "--no-diagnostics")
    out = _run("fit", "--corpus", tiny, "--method", "voting", "--members", MEMBERS, "--out", tmp_path / "model",
               "--no-progress").output
    assert "reusing the members' cached 3-fold CV" in out
    assert "fitting voting" not in out  # the ensemble command's own entry, reused
    from ensemble_deid.deid import read_manifest

    assert read_manifest(tmp_path / "model")["selection"]["folds"] == 3


# --- constructors store every argument under its own name (Tagger._store_params) ----

def _every_tagger_and_method():
    from ensemble_deid.ensemble.registry import METHODS
    from ensemble_deid.taggers.registry import entry_points, tagger_class

    return [tagger_class(name) for name in sorted(entry_points())] + list(METHODS.values())


@pytest.mark.parametrize("cls", _every_tagger_and_method(), ids=lambda cls: cls.name)
def test_every_argument_comes_back_from_get_params_and_clone(cls):
    # A distinct object per parameter: a value stored under another name, or a
    # default kept instead of the argument, shows as a mismatch.
    given = {name: object() for name in cls._param_names()}
    made = cls(**given)
    assert made.get_params() == given
    assert made.clone().get_params() == given
    again = cls().set_params(**given)
    assert again.get_params() == given


def test_a_subclass_adding_a_parameter_keeps_the_bases_stored():
    from ensemble_deid.taggers.base import Tagger

    class Base(Tagger):
        def __init__(self, alpha=1.0, rounds=3):
            self._store_params(locals())

    class Wider(Base):
        def __init__(self, alpha=1.0, rounds=3, extra="x"):
            super().__init__(alpha=alpha, rounds=rounds)
            self.extra = extra

    assert Wider(alpha=2.0, extra="y").get_params() == {"alpha": 2.0, "rounds": 3, "extra": "y"}
    assert Base(rounds=5).get_params() == {"alpha": 1.0, "rounds": 5}


def test_a_study_config_that_is_not_utf8_is_one_clear_error(tmp_path):
    # It was a UnicodeDecodeError traceback (the config reader caught only OSError and TOML errors).
    path = tmp_path / "study.toml"
    path.write_bytes(b'corpus = "caf\xe9"\n')
    with pytest.raises(EnsembleDeidError, match=r"study\.toml: study config is not valid UTF-8"):
        StudyConfig.load(path)
