"""Studies: what a researcher publishes [KIM20 sections 5-7].

One corpus: a table of base taggers (test strict P, R, F1; [KIM20] Table 4),
a table of ensembles ([KIM20] Table 5) and their leaks (F1 beside the entity
and token leak rates with 95% document-bootstrap intervals, and the leak of
the members' union, the ceiling; ``studies.leaks``). Two corpora A and B: every trainable tagger is
trained on A, on B and on A∪B and scored on both test splits; ensembles are
built of the A-models, of the B-models and of all models (A and B models plus
the external systems, included once), each tuned on the test corpus's
training-set outputs. Cells marked * are not significantly different from the
best of their column (paired test over test documents, Holm-corrected).

A study writes one results folder: tables (``base_taggers``, ``ensembles``
and ``leaks`` as Markdown, CSV, JSON, LaTeX), plots and a ``manifest.json`` of what produced
it (git commit, command line, corpus and cache fingerprints, member cache
entries, chosen hyperparameters, versions, seeds, timings).

Config (``study.toml``)::

    name = "i2b2-vs-ngrid"
    corpora = ["i2b2-2014", "ngrid-2016"]     # one or two registered corpora
    taggers = ["crf", "memm", "rules", "lstm-crf-l:epochs=30"]
    methods = ["voting", "voting-pruned", "decision-templates", "stacked-svm"]
    folds = 10
    seed = 0
    jobs = 2
    objective = "f1"                          # what ensembles are tuned for (docs/ensembles.md),
                                              # e.g. "binary-token:recall>=0.99"
    test = "randomization"                    # or "t-test", "bootstrap"
    trials = 10000
    union = true                              # also train on A ∪ B

    [method_params.stacked-lstm]              # fixed parameters of a method
    epochs = 10
"""
from __future__ import annotations

import json
import os
import platform
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from .. import __version__
from ..experiment.cache import PredictionCache
from .crosscorpus import MemberOutputs, collect_cross_corpus, members_trained_on
from ..experiment.cv import TaggerSpec
from ..errors import EnsembleDeidError, did_you_mean
from ..files import private_dir, read_toml, write_private
from ..progress import phase, progress_bar
from ..taggers.constraints import MAX_COUNT, SEED, Interval, Options
from .report import Cell, ResultTable
from .table import fold_lines
from ..corpus.workspace import Corpus, Workspace

ALL_METHODS = ("voting", "voting-pruned", "decision-templates", "stacked-svm", "stacked-searn", "stacked-lstm")
_CONFIG_KEYS = {"name", "corpora", "taggers", "methods", "folds", "seed", "jobs", "objective", "metric", "test", "trials",
                "union", "method_params", "significance_level"}


def cpu_seconds(ended_workers: bool = False) -> float:
    """User + system CPU seconds of this process and of the child processes it
    has waited for. ``ended_workers`` first ends joblib's reusable worker pool
    (cross-validation's), whose live workers are not counted otherwise."""
    import resource

    if ended_workers:
        pool = sys.modules.get("joblib.externals.loky.reusable_executor")
        if pool is not None and pool._executor is not None:
            pool._executor.shutdown(wait=True)
    return sum(u.ru_utime + u.ru_stime for u in (resource.getrusage(resource.RUSAGE_SELF),
                                                resource.getrusage(resource.RUSAGE_CHILDREN)))

@dataclass
class StudyConfig:
    corpora: list[str]
    taggers: list[str]
    methods: list[str] = field(default_factory=lambda: list(ALL_METHODS))
    name: str = "study"
    folds: int = 10
    seed: int = 0
    jobs: int = 1
    objective: str = "f1"
    test: str = "randomization"
    trials: int = 10_000
    union: bool = True
    significance_level: float = 0.05
    method_params: dict[str, dict[str, Any]] = field(default_factory=dict)

    def __post_init__(self):
        self.validate()

    def validate(self) -> None:
        """The one check of a study's settings, from a config file, the
        command line or code alike: every value, every tagger spec and every
        method parameter, before any work starts."""
        from ..ensemble import METHODS, GridSearch, make_method
        from ..ensemble.objective import check_objective
        from ..taggers.constraints import Check
        from ..experiment.cv import JOBS
        from ..taggers.constraints import InvalidParameter, validate_params
        from .significance import TESTS

        if not isinstance(self.corpora, list) or not 1 <= len(self.corpora) <= 2:
            raise EnsembleDeidError(f"a study takes one or two corpora, got {self.corpora!r}")
        if not isinstance(self.taggers, list) or not self.taggers:
            raise EnsembleDeidError("a study needs at least one tagger")
        if not isinstance(self.methods, list):
            raise EnsembleDeidError(f"methods must be a list, got {self.methods!r}")
        bad = [m for m in self.methods if m not in METHODS]
        if bad:
            raise EnsembleDeidError(f"unknown ensemble method(s) {bad}; known: {', '.join(METHODS)}"
                                    + did_you_mean(bad[0], METHODS))
        constraints = {
            "name": [str], "folds": [Interval(int, 2, MAX_COUNT)], "seed": [SEED], "jobs": JOBS,
            "objective": [Check(check_objective, "an objective such as 'f1' or 'binary-token:recall>=0.99' "
                                "(see docs/ensembles.md)")], "test": [Options(*TESTS)], "trials": [Interval(int, 100, MAX_COUNT)],
            "union": [bool], "significance_level": [Interval(float, 0, 1, closed="neither")],
            "method_params": [dict],
        }
        try:
            validate_params("study config", {k: getattr(self, k) for k in constraints}, constraints)
            for text in self.taggers:
                TaggerSpec.parse(text).make()
            for method, params in self.method_params.items():
                if method not in METHODS:
                    raise InvalidParameter(f"study config [method_params.{method}]: unknown ensemble method"
                                           + did_you_mean(method, METHODS))
                if not isinstance(params, dict):
                    raise InvalidParameter(f"study config [method_params.{method}] must be a table of parameters")
                GridSearch(make_method(method, **params), folds=self.folds, seed=self.seed, objective=self.objective,
                           fixed=tuple(params)).validate_params()
        except (ValueError, KeyError, EnsembleDeidError) as exc:
            raise EnsembleDeidError(str(exc)) from None

    @classmethod
    def load(cls, path: str | Path, **overrides: Any) -> "StudyConfig":
        path = Path(path)
        data = read_toml(path, EnsembleDeidError, "study config")
        unknown = sorted(set(data) - _CONFIG_KEYS)
        if unknown:
            raise EnsembleDeidError(f"{path}: unknown key(s) {unknown}; known: {sorted(_CONFIG_KEYS)}")
        if "metric" in data:  # the key before objectives: its values (f1, f2, recall) are objectives
            if "objective" in data:
                raise EnsembleDeidError(f"{path}: give 'objective' only ('metric' is its older name)")
            data["objective"] = data.pop("metric")
        data.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**data)


@dataclass
class StudyResult:
    directory: Path
    base_table: ResultTable
    ensemble_table: ResultTable
    manifest: dict
    leak_table: ResultTable | None = None


# --- scoring helpers -----------------------------------------------------------

def _counts(scorer, docs, preds):
    from .summary import prediction_spans

    return scorer.counts(prediction_spans(docs, preds))


def _score_cell(counts, **extra) -> Cell:
    p, r, f = counts.prf()
    return Cell(float(f), precision=float(p), recall=float(r), **extra)


@contextmanager
def _ticking(bar, every: float = 1.0):
    """Redraw a progress bar every second while one long step runs, so that
    its elapsed time moves (a stacked-LSTM fit takes minutes)."""
    stop = threading.Event()

    def tick():
        while not stop.wait(every):
            bar.refresh()

    thread = threading.Thread(target=tick, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def _mark_not_different(table: ResultTable, counts: Mapping[tuple[int, int], Any], test: str, trials: int,
                        seed: int, alpha: float) -> None:
    """Asterisk the cells of each column not significantly different from its
    best, and keep each cell's Holm-adjusted p-value against that best."""
    from .significance import TESTS, PairedCounts, holm

    for j in range(len(table.columns)):
        cells = [(i, c) for i, c in enumerate(table.column(j)) if isinstance(c.value, float) and (i, j) in counts]
        if len(cells) < 2:
            continue
        best_i, _ = max(cells, key=lambda ic: ic[1].value)
        others = [(i, c) for i, c in cells if i != best_i]
        pvals = []
        for i, _ in others:
            pc = PairedCounts.from_document_counts(counts[(best_i, j)], counts[(i, j)])
            kwargs = {"trials": trials, "seed": seed} if test == "randomization" else (
                {"samples": trials, "seed": seed} if test == "bootstrap" else {})
            pvals.append(TESTS[test](pc, **kwargs).p_value)
        for (i, c), p in zip(others, holm(pvals)):
            c.p_value = float(p)
            if p >= alpha:
                c.mark = "*"


# --- the study ---------------------------------------------------------------------

class Study:
    def __init__(self, workspace: Workspace, config: StudyConfig, log: Callable[[str], None] = print,
                 progress: bool = True, command: Sequence[str] | None = None,
                 skipped: Mapping[str, str] | None = None):
        self.ws = workspace
        self.config = config
        self.log = lambda message: log(fold_lines(message))  # each step's line fits 80 columns, as the tables do
        self.progress = progress
        self.command = list(command) if command is not None else [Path(sys.argv[0]).name, *sys.argv[1:]]
        self.skipped = dict(skipped or {})  # tagger -> why it could not run here

    def run(self, out_dir: str | Path | None = None) -> StudyResult:
        from . import plots
        from ..evaluation import Scorer

        cfg = self.config
        t_start, cpu_start, load_start = time.perf_counter(), cpu_seconds(), os.getloadavg()[0]
        corpora = [self.ws.load(name) for name in cfg.corpora]
        specs = [TaggerSpec.parse(t) for t in cfg.taggers]
        cache = PredictionCache(self.ws.cache_dir)
        out = Path(out_dir) if out_dir else self.ws.results_dir / f"{cfg.name}-{time.strftime('%Y%m%d-%H%M%S')}"
        private_dir(out, root=self.ws.results_dir)

        self.log(f"[1/3] base taggers: {len(specs)} tagger(s), {cfg.folds}-fold CV, training sets: "
                 + ", ".join(cfg.corpora + ([f"{cfg.corpora[0]}+{cfg.corpora[1]}"] if cfg.union and len(corpora) == 2 else [])))
        t0 = time.perf_counter()
        outputs = collect_cross_corpus(corpora, specs, cache, k=cfg.folds, seed=cfg.seed, jobs=cfg.jobs,
                                       union=cfg.union, progress=self.progress,
                                       on_corrupt=lambda m: self.log(f"warning: {m}"))
        base_seconds = time.perf_counter() - t0
        scorers = {c.name: Scorer(c.test, criterion="strict") for c in corpora}

        base = self._base_table(corpora, specs, outputs, scorers)
        self.log(f"[2/3] ensembles: {len(cfg.methods)} method(s) per member set, parameters chosen by "
                 f"{cfg.folds}-fold CV on each test corpus's training set")
        t0 = time.perf_counter()
        ens, ens_counts, ens_preds, curves, category, chosen, leaks = self._ensembles(corpora, outputs, scorers)
        ens_seconds = time.perf_counter() - t0
        _mark_not_different(ens, ens_counts, cfg.test, cfg.trials, cfg.seed, cfg.significance_level)
        ens.mark_best()

        self.log("[3/3] tables, plots, manifest")
        base.write(out, "base_taggers")
        ens.write(out, "ensembles")
        leaks.write(out, "leaks")
        figures = []
        # One category axis for every corpus, so that their plots line up.
        all_categories = sorted({c for scores, gold in category.values() for c in gold})
        for corpus in corpora:
            name = corpus.name
            if name in curves:
                figures.append(plots.threshold_curve(curves[name]["curves"], out / f"voting_threshold_{name}.png",
                                                     title=f"Voting on {name} test ({curves[name]['members']})",
                                                     best_single=curves[name]["best_single"],
                                                     best_name=curves[name]["best_name"]))
            if name in category:
                scores, gold = category[name]
                figures.append(plots.category_f1(scores, out / f"category_f1_{name}.png",
                                                 title=f"Strict F1 by category, {name} test (n = gold spans)",
                                                 gold_counts=gold, categories=all_categories))
            agree = self._agreement(corpus, corpora, outputs[name])
            if agree is not None:
                figures.append(plots.agreement_heatmap(*agree, out / f"agreement_{name}.png",
                                                       title=f"Member agreement on {name} test"))
        spent = {"total": time.perf_counter() - t_start, "cpu": cpu_seconds(ended_workers=True) - cpu_start,
                 "load": [load_start, os.getloadavg()[0]]}
        manifest = self._manifest(corpora, outputs, base_seconds, ens_seconds, spent, figures, chosen)
        write_private(out / "manifest.json", json.dumps(manifest, indent=2, sort_keys=True, default=str))
        write_private(out / "summary.md", base.markdown() + "\n" + ens.markdown() + "\n" + leaks.markdown())
        return StudyResult(out, base, ens, manifest, leaks)

    # --- tables ------------------------------------------------------------
    def _training_sets(self, corpora: Sequence[Corpus]) -> list[str]:
        names = [c.name for c in corpora]
        if self.config.union and len(corpora) == 2:
            names.append(f"{names[0]}+{names[1]}")
        return names

    def _base_table(self, corpora, specs, outputs: Mapping[str, MemberOutputs], scorers) -> ResultTable:
        sources = self._training_sets(corpora)
        columns = [f"{t.name} test: {s} model" if len(corpora) > 1 else f"{t.name} test" for t in corpora for s in
                   (sources if len(corpora) > 1 else sources[:1])]
        headers = [f"{_letter(corpora, t.name)} test / {_letter(corpora, s)} model" for t in corpora for s in sources] \
            if len(corpora) > 1 else None
        table = ResultTable("Base taggers: strict micro F1 (%) on each test split, by training set", columns,
                            row_header="tagger", headers=headers, headers_legend=_letters_legend(corpora),
                            note="External systems are not trained: one value per test split, in the in-corpus column. "
                                 "Best of a column in bold; P and R in the .csv/.json files.")
        for spec in specs:
            row = []
            for t in corpora:
                mo = outputs[t.name]
                for s in (sources if len(corpora) > 1 else sources[:1]):
                    label = spec.label if spec.label in mo.test else f"{spec.label}@{s}"
                    external = mo.trained_on.get(spec.label) == "external"
                    if label not in mo.test or (external and s != t.name):
                        row.append(None)
                        continue
                    row.append(_score_cell(_counts(scorers[t.name], t.test, mo.test[label]), params=dict(spec.params)))
            table.add(spec.label, row)
        table.mark_best()
        return table

    def _member_sets(self, corpus: Corpus, corpora: Sequence[Corpus], mo: MemberOutputs) -> dict[str, list[str]]:
        names = [c.name for c in corpora]
        sets = {f"{corpus.name} models": members_trained_on(mo, [corpus.name])}
        if len(corpora) == 2:
            other = [n for n in names if n != corpus.name][0]
            sets[f"{other} models"] = members_trained_on(mo, [other])
            sets["all models"] = members_trained_on(mo, names)
        return {k: v for k, v in sets.items() if v}

    def _ensembles(self, corpora, outputs, scorers):
        from ..ensemble import GridSearch, make_method
        from ..evaluation import Scorer

        cfg = self.config
        train_scorers = {t.name: Scorer(t.train, criterion="strict") for t in corpora}
        columns, headers, blocks = [], [], []
        for t in corpora:
            for set_name, members in self._member_sets(t, corpora, outputs[t.name]).items():
                columns.append(f"{t.name} test: {set_name}")
                source = set_name.removesuffix(" models")
                headers.append(f"{_letter(corpora, t.name)} test / "
                               f"{source if source == 'all' else _letter(corpora, source)} models")
                blocks.append((t, set_name, members))
        table = ResultTable("Ensembles: strict micro F1 (%) on each test split, by member set", columns,
                            row_header="method", headers=headers if len(corpora) > 1 else None,
                            headers_legend=_letters_legend(corpora),
                            note="best single member: the member with the highest F1 on the test corpus's training "
                                 "set (out-of-fold for models trained on it), chosen like the ensembles' parameters, "
                                 "then scored on test; union-trained models are not members. Best of a column in bold; "
                                 "P, R, p-values and chosen parameters in the .csv/.json files.",
                            mark_note=f"* not significantly different from the best of its column ({cfg.test}, "
                                      f"Holm-corrected, {int(100 * (1 - cfg.significance_level))}% level).")
        # The oracle is a recall bound, not an F1: it goes in the note below the
        # table, not in a row of F1 columns (where it read as a contradiction).
        rows: dict[str, list] = {"best single member": [None] * len(columns)}
        oracle_recall: list[str] = []
        rows.update({m: [None] * len(columns) for m in cfg.methods})
        counts: dict[tuple[int, int], Any] = {}
        preds: dict[tuple[str, int], dict] = {}
        curves: dict[str, dict] = {}
        category: dict[str, tuple[dict[str, dict[str, float | None]], dict[str, int]]] = {}
        chosen: dict[str, dict[str, Any]] = {}
        row_index = {name: i for i, name in enumerate(rows)}
        leak_rows: list[tuple[str, list[Cell]]] = []
        # No time-remaining: a voting fit takes a second, a stacked learner's many minutes,
        # so an average over the fits done so far says nothing about the ones to come.
        bar = progress_bar(total=len(blocks) * len(cfg.methods), desc="ensembles", unit="fit",
                           disable=not self.progress, eta=False, file=sys.stderr)
        say = (lambda m: bar.write(fold_lines(m), file=sys.stderr)) if self.progress else self.log
        for j, (t, set_name, members) in enumerate(blocks):
            mo = outputs[t.name]
            train_members = {m: mo.train[m] for m in members}
            test_members = {m: mo.test[m] for m in members}
            # Chosen on the training-set outputs, as the ensembles choose their
            # parameters: picking by test F1 would flatter the baseline.
            train_f1 = {m: _counts(train_scorers[t.name], t.train, mo.train[m]).prf()[2] for m in members}
            best_member = max(train_f1, key=train_f1.get)
            best_counts = _counts(scorers[t.name], t.test, mo.test[best_member])
            rows["best single member"][j] = _score_cell(best_counts, params={"member": best_member})
            counts[(row_index["best single member"], j)] = best_counts
            chosen.setdefault(columns[j], {})["best single member"] = best_member
            oracle_recall.append(f"{(headers[j] if len(corpora) > 1 else columns[j])} "
                                 f"{100 * _oracle_recall(t.test, test_members):.2f}")
            for method in cfg.methods:
                where = f"{method} on {t.name} test, {set_name} ({len(members)} members)"
                phase(bar, where)
                fixed = cfg.method_params.get(method, {})
                search = GridSearch(make_method(method, **fixed), folds=cfg.folds, seed=cfg.seed, objective=cfg.objective,
                                    fixed=tuple(fixed))
                t0 = time.perf_counter()
                try:
                    with _ticking(bar) if self.progress else _nothing():
                        search.fit(train_members, t.train)
                        pred = {p.doc_id: p for p in search.predict(test_members, t.test)}
                except ValueError as exc:  # e.g. too few members for a method
                    say(f"  {where}: skipped: {exc}")
                    bar.update()
                    continue
                c = _counts(scorers[t.name], t.test, pred)
                learned = _learned(search.best_estimator_)
                params = {**cfg.method_params.get(method, {}), **search.best_params_, **learned}
                rows[method][j] = _score_cell(c, params=params)
                counts[(row_index[method], j)] = c
                preds[(method, j)] = pred
                # The manifest's one record of the ensemble: every parameter of the
                # final model, which of them CV chose and which were fixed, and
                # what the fit itself chose (pruned voting's threshold and members).
                chosen[columns[j]][method] = {"params": search.chosen_params(), "chosen_by_cv": search.best_params_,
                                              "fixed": sorted(fixed), "learned": learned}
                say(f"  {where}: F1 {100 * c.prf()[2]:.2f} in {time.perf_counter() - t0:.1f} s"
                    + (f" ({_plain_params(params)})" if params else ""))
                bar.update()
            if set_name == "all models" or (len(corpora) == 1):
                t0 = time.perf_counter()
                bar.set_postfix_str(f"voting thresholds 1-{len(members)} on {t.name} test, {set_name}", refresh=True)
                curves[t.name] = self._threshold_curves(t, train_members, test_members, scorers[t.name],
                                                        float(best_counts.prf()[2]), best_member, set_name)
                category[t.name] = self._category_scores(t, {best_member: mo.test[best_member], **{
                    m: preds[(m, j)] for m in ("voting-pruned", "stacked-svm") if (m, j) in preds}})
                say(f"  voting-threshold curves and category scores for the plots of {t.name} test: "
                    f"{time.perf_counter() - t0:.1f} s")
            source = set_name.removesuffix(" models")
            block = f", {_letter(corpora, t.name)}/{source if source == 'all' else _letter(corpora, source)}" \
                if len(corpora) > 1 else ""
            systems = {"best single member": (rows["best single member"][j], mo.test[best_member]),
                       **{m: (rows[m][j], preds[(m, j)]) for m in cfg.methods if (m, j) in preds}}
            leak_rows += _leak_rows(t.test, systems, test_members, block, cfg.seed)
        bar.close()
        for name, values in rows.items():
            table.add(name, values)
        table.note += (" Oracle recall (%), a bound on what an ensemble of these members can find, not an F1 "
                       "(a gold span counts as found if any member tagged it exactly): " + "; ".join(oracle_recall) + ".")
        leaks = ResultTable("Leaks: strict F1 (%) beside the share of gold PHI entities and tokens no predicted span "
                            "covers (%, 95% document-bootstrap interval), on each test split",
                            ["F1", "entity leak", "token leak"], row_header="system",
                            note="members' union (ceiling): every span of the members together; no ensemble of them "
                                 "leaks less. An entity leaks when one of its tokens does."
                                 + (f" T/M: test split T, members trained on M ({_letters_legend(corpora)})."
                                    if len(corpora) > 1 else ""))
        for label, cells in leak_rows:
            leaks.add(label, cells)
        return table, counts, preds, curves, category, chosen, leaks

    def _threshold_curves(self, corpus, train_members, test_members, scorer, best_single, best_name, set_name) -> dict:
        from ..ensemble import PrunedVoting, Voting

        n = len(train_members)
        all_pts, pruned_pts = [], []
        for t in range(1, n + 1):
            for cls, pts in ((Voting, all_pts), (PrunedVoting, pruned_pts)):
                model = cls(threshold=t).fit(train_members, corpus.train)
                pred = {p.doc_id: p for p in model.predict(test_members, corpus.test)}
                pts.append((t, float(_counts(scorer, corpus.test, pred).prf()[2])))
        return {"curves": {"all members": all_pts, "pruned at each threshold": pruned_pts},
                "best_single": best_single, "best_name": best_name, "members": f"{set_name}, {n} members"}

    def _category_scores(self, corpus, systems: Mapping[str, Mapping]):
        """(system -> {category: F1, None where the test split has no gold of it},
        category -> gold spans in the test split)."""
        from ..evaluation import evaluate
        from .summary import prediction_spans

        scores, gold = {}, {}
        for name, preds in systems.items():
            report = evaluate(corpus.test, prediction_spans(corpus.test, preds), criteria=("strict",), leak=False)
            by_category = report["strict"].by_category
            scores[name] = {cat: (s.f1 if s.tp + s.fn > 0 else None) for cat, s in by_category.items()}
            gold.update({cat: s.tp + s.fn for cat, s in by_category.items()})
        return scores, gold

    def _agreement(self, corpus, corpora, mo: MemberOutputs):
        """Agreement of the members of the largest member set: union-trained
        models are no ensemble's members, so they are left out."""
        from ..ensemble import build_candidates, pairwise_agreement

        names = max(self._member_sets(corpus, corpora, mo).values(), key=len, default=[])
        if len(names) < 2:
            return None
        table = build_candidates([mo.test[n] for n in names], tuple(names), corpus.test)
        jaccard, _ = pairwise_agreement(table)
        return names, jaccard

    def _manifest(self, corpora, outputs, base_s, ens_s, spent, figures, chosen) -> dict:
        from importlib import metadata

        versions = {}
        for dist in ("numpy", "scipy", "scikit-learn", "python-crfsuite", "vowpalwabbit", "torch", "pytorch-crf"):
            try:
                versions[dist] = metadata.version(dist)
            except metadata.PackageNotFoundError:
                pass
        members = {}
        for name, mo in outputs.items():
            for label, run in mo.runs.items():
                e = run.entry
                members[label] = {"tagger": e.tagger, "version": e.version, "param_hash": e.param_hash,
                                  "params": dict(run.spec.params), "train_fingerprint": e.train_fingerprint,
                                  "trained_on": mo.trained_on[label]}
        return {
            "ensemble_deid": __version__, "git": git_state(), "command": self.command,
            "python": platform.python_version(), "platform": platform.platform(),
            "libraries": versions, "config": asdict(self.config),
            "corpora": {c.name: {"fingerprints": c.fingerprints, "documents": {s: len(d) for s, d in c.splits.items()}}
                        for c in corpora},
            "cache": str(self.ws.cache_dir), "members": members, "chosen": chosen, "skipped": self.skipped,
            # wall seconds, with the CPU seconds of the process and its workers and the 1-minute load
            # around the run: on a shared machine wall time mostly measures the others' work
            "seconds": {"base_taggers": round(base_s, 1), "ensembles": round(ens_s, 1), "total": round(spent["total"], 1),
                        "cpu": round(spent["cpu"], 1), "load_average": [round(x, 2) for x in spent["load"]]},
            "figures": [str(Path(f).name) for f in figures],
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }


def git_state() -> dict[str, Any] | None:
    """The commit of the source tree the package runs from, and whether it had
    uncommitted changes; None when it is not a git checkout (an installed wheel)."""
    import subprocess

    root = Path(__file__).resolve().parents[2]
    try:
        commit = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                                timeout=10, check=True).stdout.strip()
        status = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                                capture_output=True, text=True, timeout=10, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return {"commit": commit, "dirty": bool(status.strip())}


def _learned(model) -> dict[str, Any]:
    """Values a method chooses while fitting rather than by grid search
    (pruned voting's threshold and member subset)."""
    out = {}
    if hasattr(model, "threshold_"):
        out["threshold"] = int(model.threshold_)
    if hasattr(model, "subset_"):
        out["members"] = list(model.subset_)
    if getattr(model, "trusted_", None):
        out["trusted"] = [list(p) for p in model.trusted_]
    return out


@contextmanager
def _nothing():
    yield


def _plain_params(params: Mapping[str, Any]) -> str:
    """Parameters for a log line; a member list as its size (the manifest has the names)."""
    return ", ".join(f"{k}={len(v) if isinstance(v, (list, tuple)) else v}" for k, v in sorted(params.items()))


def _letter(corpora: Sequence[Corpus], name: str) -> str:
    """A and B for the two corpora of a study (A+B for their union), to keep headers short."""
    letters = {c.name: "AB"[i] for i, c in enumerate(corpora)}
    return "+".join(letters[part] for part in name.split("+")) if all(
        part in letters for part in name.split("+")) else name


def _letters_legend(corpora: Sequence[Corpus]) -> str:
    if len(corpora) < 2:
        return ""
    return "; ".join(f"{_letter(corpora, c.name)} = {c.name}" for c in corpora) + " (A+B: trained on both)"


def _leak_rows(documents, systems: Mapping[str, tuple], members: Mapping[str, Mapping], suffix: str,
               seed: int) -> list[tuple[str, list[Cell]]]:
    """Rows of the leak table for one column of the ensembles table: each
    system's F1 cell beside its entity and token leaks, then the members'
    union (the ceiling)."""
    from .leaks import OVERALL, leak_table, union_spans
    from .summary import prediction_spans

    def cells(spans) -> list[Cell]:
        got = leak_table(documents, spans, seed=seed)
        return [Cell(got[u][OVERALL].percent() if OVERALL in got[u] else None,
                     params={k: v.to_dict() for k, v in got[u].items()}) for u in ("entity", "token")]

    out = [(name + suffix, [Cell(f1.value, precision=f1.precision, recall=f1.recall), *cells(prediction_spans(documents, p))])
           for name, (f1, p) in systems.items() if f1 is not None]
    union = union_spans(documents, {m: prediction_spans(documents, p) for m, p in members.items()})
    out.append(("members' union (ceiling)" + suffix, [Cell(""), *cells(union)]))
    return out


def _oracle_recall(documents, members: Mapping[str, Mapping]) -> float:
    """Strict recall of the members' pooled spans: a span counts if any member found it."""
    from ..ensemble import build_candidates, oracle

    names = tuple(members)
    return float(oracle(build_candidates([members[n] for n in names], names, documents)).recall)
