"""The demo study: the embedded synthetic corpora with every tagger that can
run here (``ensemble-deid demo``; docs/guide.md, "The demo")."""
from __future__ import annotations

from typing import Callable

from .study import ALL_METHODS, StudyConfig

# The demo's members: every trainable tagger, the rule tagger and the
# offline external systems that are installed. 10-fold CV of 12 trained
# taggers on both corpora and their union is ~34 fits per tagger, so the
# settings are sized for two cores in under 15 minutes: fewer iterations or
# passes than Table 3, two epochs of neural training on sentences in batches
# of 32 (under-trained by design: the demo shows the pipeline, not the
# networks; lstm-l with Adam, as its SGD learns nothing in two epochs), 10
# stacked-SEARN passes and 4 stacked-LSTM epochs. docs/guide.md ("The demo")
# lists them; `ensemble-deid study` runs the full settings.
_NEURAL_DEMO = ("epochs=2,context=sentence,batch_size=32,corpus_vectors=false,ema_decay=0,refit=false,"
                "validation_fraction=0")
DEMO_TAGGERS = [
    "crf:max_iterations=30", "memm:max_iter=20,min_count=3", "searn:passes=5", "mira:epochs=10", "svm",
    "ogd:passes=3", "struct-svm:epochs=4",
    f"lstm-crf-n:{_NEURAL_DEMO}", f"lstm-crf-l:{_NEURAL_DEMO}", f"lstm-l:{_NEURAL_DEMO},optimizer=adam,lr=0.01", f"lstm-crf-fea:{_NEURAL_DEMO}",
    "rules",
]
# MIST and PhysioNet deid need a local installation: listed so that the demo
# says why they are left out when they are not configured.
DEMO_EXTERNAL = ["presidio", "philter", "scrubadub", "physionet-deid", "mist"]
QUICK_TAGGERS = ["crf:max_iterations=40", "svm", "rules"]
QUICK_METHODS = ["voting", "voting-pruned", "decision-templates", "stacked-svm"]


def available_taggers(specs: list[str], log: Callable[[str], None] = print) -> tuple[list[str], dict[str, str]]:
    """The specs whose tagger can run here, and tagger -> reason for the others."""
    from ..taggers.registry import UnknownTagger, tagger_class

    keep, skipped = [], {}
    for spec in specs:
        name = spec.split(":")[0]
        try:
            ok, reason = tagger_class(name).availability()
        except UnknownTagger:
            ok, reason = False, "not installed"
        if ok:
            keep.append(spec)
        else:
            skipped[name] = reason
            log(f"skipping {name}: {reason}")
    return keep, skipped


def demo_config(quick: bool = False, jobs: int = 2,
                log: Callable[[str], None] = print) -> tuple[StudyConfig, dict[str, str]]:
    """(the demo's StudyConfig, tagger -> why it is left out): ``quick`` is the
    small version (3 taggers, 3 folds, 4 methods). ``jobs`` is checked first."""
    from ..errors import EnsembleDeidError, ParameterError
    from ..experiment.cv import check_jobs

    try:
        check_jobs(jobs, "demo")
    except EnsembleDeidError as exc:
        raise ParameterError(str(exc), "--jobs") from None
    if quick:
        taggers, skipped = available_taggers(QUICK_TAGGERS, log)
        return StudyConfig(corpora=["synthetic-2014", "synthetic-2016"], taggers=taggers, methods=QUICK_METHODS,
                           folds=3, jobs=jobs, trials=2000, name="demo-quick"), skipped
    taggers, skipped = available_taggers(DEMO_TAGGERS + DEMO_EXTERNAL, log)
    return StudyConfig(corpora=["synthetic-2014", "synthetic-2016"], taggers=taggers, methods=list(ALL_METHODS),
                       folds=10, jobs=jobs, name="demo",
                       method_params={"stacked-lstm": {"epochs": 4}, "stacked-searn": {"passes": 10}}), skipped
