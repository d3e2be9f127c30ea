"""Cross-corpus training sets and member outputs [KIM20 section 5].

Every trainable tagger is trained on corpus A, on corpus B and on their union.
For a test corpus T, an ensemble is tuned on T's training-set outputs of its
members and applied to their T test outputs:

- a model trained on T itself contributes its out-of-fold predictions on
  T's training set (and, for the union, out-of-fold predictions restricted to
  T's documents);
- a model trained on the other corpus contributes the predictions of its
  full model on T's training set;
- an external system contributes its (fold-independent) predictions, once.

The full-training models' predictions on another corpus's test split are
cached under that split's fingerprint, whichever command asked for them
(``study``, or ``cv --target``), so each reuses the other's.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence

from ..experiment.cache import PredictionCache
from ..experiment.cv import CrossValidation, TaggerRun, TaggerSpec, cross_corpus_target
from ..corpus.document import Document
from ..errors import EnsembleDeidError
from ..taggers.prediction import DocumentPrediction
from ..corpus.workspace import Corpus

Predictions = dict[str, DocumentPrediction]


def union_corpus(a: Corpus, b: Corpus) -> Corpus:
    """A ∪ B for training: documents of both training sets, patient groups kept apart."""
    ids_a = {d.id for docs in a.splits.values() for d in docs}
    clash = sorted(ids_a & {d.id for docs in b.splits.values() for d in docs})
    if clash:
        raise EnsembleDeidError(
            f"corpora {a.name!r} and {b.name!r} share {len(clash)} document id(s) (e.g. {clash[0]!r}); "
            "a union needs distinct ids"
        )

    def regroup(doc: Document, corpus: str) -> Document:
        copy = Document(doc.id, doc.text, doc.annotations, {**doc.metadata, "group": f"{corpus}:{doc.group}"})
        copy.__dict__["tokens"] = doc.tokens  # same text, same tokens
        return copy

    train = [regroup(d, a.name) for d in a.train] + [regroup(d, b.name) for d in b.train]
    return Corpus(f"{a.name}+{b.name}", {"train": train, "test": []})


@dataclass
class MemberOutputs:
    """Per test corpus: each member's predictions on its training and test documents."""

    train: dict[str, Predictions] = field(default_factory=dict)
    test: dict[str, Predictions] = field(default_factory=dict)
    trained_on: dict[str, str] = field(default_factory=dict)  # member label -> training corpus name
    runs: dict[str, TaggerRun] = field(default_factory=dict)


def category_scores(documents: Sequence[Document], predictions: Predictions) -> dict[str, tuple[int, float]]:
    """Per category: (gold spans, strict F1) of predictions on documents;
    categories that only the predictions use have 0 gold spans."""
    from ..evaluation import evaluate
    from .summary import prediction_spans

    report = evaluate(documents, prediction_spans(documents, predictions), criteria=("strict",), leak=False)
    return {cat: (s.tp + s.fn, s.f1) for cat, s in report["strict"].by_category.items() if s.tp + s.fn + s.fp}


def member_label(spec: TaggerSpec, trained_on: str, external: bool) -> str:
    return spec.label if external else f"{spec.label}@{trained_on}"


def collect_cross_corpus(
    corpora: Sequence[Corpus], specs: Sequence[TaggerSpec], cache: PredictionCache, k: int = 10, seed: int = 0,
    jobs: int = 1, union: bool = True, progress: bool = True, on_corrupt=None,
) -> dict[str, MemberOutputs]:
    """Train every tagger on every corpus (and on the union of two), fill the
    cache, and gather member outputs for each corpus as a test corpus."""
    training_sets: list[Corpus] = list(corpora)
    if union and len(corpora) == 2:
        training_sets.append(union_corpus(*corpora))
    out = {c.name: MemberOutputs() for c in corpora}
    external_done: set[str] = set()
    for source in training_sets:
        targets: dict[str, list[Document]] = {}
        for t in corpora:
            targets[cross_corpus_target(t.name)] = t.test
            if t.name != source.name and not source.name.startswith(t.name + "+") and not source.name.endswith("+" + t.name):
                targets[f"{t.name}.train"] = t.train
        engine = CrossValidation(source.train, targets, cache, k=k, seed=seed)
        runs = engine.run(specs, jobs=jobs, progress=progress, on_corrupt=on_corrupt, desc=f"cv, trained on {source.name}")
        for spec in specs:
            run = runs[spec.label]
            if run.external and spec.label in external_done:
                continue  # external systems enter an ensemble once
            label = member_label(spec, source.name, run.external)
            for t in corpora:
                mo = out[t.name]
                if f"{t.name}.train" in run.targets:
                    train_preds = run.targets[f"{t.name}.train"]
                else:  # trained on t (alone or in the union): out-of-fold on t's documents
                    train_preds = {d.id: run.oof[d.id] for d in t.train}
                mo.train[label] = train_preds
                mo.test[label] = run.targets[cross_corpus_target(t.name)]
                mo.trained_on[label] = "external" if run.external else source.name
                mo.runs[label] = run
            if run.external:
                external_done.add(spec.label)
    return out


def members_trained_on(outputs: MemberOutputs, names: Sequence[str], include_external: bool = True) -> list[str]:
    return [m for m, src in outputs.trained_on.items() if src in names or (include_external and src == "external")]
