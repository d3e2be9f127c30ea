"""``Deidentifier``: a fitted tagger or ensemble that finds PHI in new notes.

    from ensemble_deid.deid import Deidentifier
    model = Deidentifier.load("model/")          # a bundle written by ``fit``
    model.deidentify("Seen by Dr. Smith on 3/4/2012.")   # -> "Seen by Dr. [NAME:DOCTOR] on [DATE]."
    predictions = model.predict(documents)      # [DocumentPrediction], as a tagger's

Members are fitted exactly as the cross-validation engine fits them for the
test split (every training document; nothing for external systems), so a
bundle reproduces the ``ensemble`` command's test predictions.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

from ..corpus.document import Annotation, Document
from ..taggers.prediction import DocumentPrediction, check_predictions


PROBE_NOTE = "Seen on 03/04/2012 by Dr. Probe at the General Clinic; call 555-0100."


def fit_member(spec, train: Sequence[Document]):
    """One member fitted as the CV engine fits it for the test split."""
    tagger = spec.make()
    tagger.fit([] if tagger.external else list(train))
    return tagger


def needed_members(method, names: Sequence[str]) -> list[str]:
    """The members whose predictions can change the method's output: a pruned
    voting ignores the members it eliminated, unless they are trusted on a
    label (``ensemble.trust``)."""
    from ..ensemble.trust import trusted_members

    subset = getattr(method, "subset_", None) if method is not None else None
    trusted = trusted_members(method) if method is not None else set()
    return [n for n in names if subset is None or n in subset or n in trusted]


class FeatureCache:
    """Each document's features computed once, within one ``predict`` call,
    for every member whose extractor has these settings, the n-gram order
    aside: ``extractor`` is the one of the highest order among them, and a
    member of a lower order gets these rows with the longer n-grams cut out
    (``FeatureExtractor.fewer_ngrams``). The hashed rows of the linear
    members' feature indexes and the Vowpal Wabbit members' example lines
    are kept too. Members only read them, never
    change them. Extraction and hashing are most of a linear tagger's
    prediction time."""

    def __init__(self, extractor):
        self.extractor = extractor
        self._memo: dict[tuple, tuple[Document, Any]] = {}

    def _memoized(self, what: str, doc: Document, ngrams: int, make):
        key = (what, id(doc), ngrams)
        hit = self._memo.get(key)
        if hit is None or hit[0] is not doc:
            hit = self._memo[key] = (doc, make())
        return hit[1]

    def features(self, doc: Document, ngrams: int | None) -> list[list[str]]:
        if ngrams == _order(self.extractor):
            return self._memoized("rows", doc, ngrams, lambda: self.extractor.document_features(doc))
        return self._memoized("rows", doc, ngrams,
                              lambda: self.extractor.fewer_ngrams(self.features(doc, self.extractor.ngrams), ngrams))

    def hashed(self, doc: Document, ngrams: int | None):
        from ..taggers.linear import FeatureIndex

        return self._memoized("hashed", doc, ngrams, lambda: FeatureIndex.hash(self.features(doc, ngrams)))

    def vw_lines(self, doc: Document, ngrams: int | None, n_window: int) -> list[str]:
        from ..taggers.linear import vw_lines

        return self._memoized(("vw", n_window), doc, ngrams, lambda: vw_lines(self.features(doc, ngrams), None, n_window))

    def clear(self) -> None:
        self._memo.clear()


class SharedFeatures:
    """A member's feature extractor answered from a :class:`FeatureCache`:
    the member's own extractor for everything else."""

    def __init__(self, cache: FeatureCache, extractor):
        self.cache = cache
        self.extractor = extractor

    def document_features(self, doc: Document) -> list[list[str]]:
        return self.cache.features(doc, _order(self.extractor))

    def document_hashed(self, doc: Document):
        """The document's features hashed (``FeatureIndex.hash``)."""
        return self.cache.hashed(doc, _order(self.extractor))

    def document_vw_lines(self, doc: Document, n_window: int) -> list[str]:
        """The document's Vowpal Wabbit example lines (``linear.vw_lines``, no labels)."""
        return self.cache.vw_lines(doc, _order(self.extractor), n_window)

    def __getattr__(self, name: str):
        return getattr(self.extractor, name)


def share_features(members: Mapping[str, Any]) -> list[FeatureCache]:
    """Give members whose extractors agree (:func:`sharing_key`) one
    :class:`FeatureCache`: the linear family keeps its extractor in
    ``extractor_``, the CRF adapter in ``_fx`` (built by ``_extractor()``)."""
    found = []
    for tagger in members.values():
        if hasattr(tagger, "extractor_"):
            fx, install = tagger.extractor_, lambda t, s: setattr(t, "extractor_", s)
        elif callable(getattr(tagger, "_extractor", None)) and "features" in tagger.get_params():
            fx = tagger._extractor()
            if tagger.__dict__.get("_fx") is not fx:  # not kept between calls: nothing to share
                continue
            install = lambda t, s: t.__dict__.__setitem__("_fx", s)  # noqa: E731
        else:
            continue
        if isinstance(fx, SharedFeatures) or not hasattr(fx, "get_config"):
            continue
        found.append((tagger, fx, install))
    caches: dict[str, FeatureCache] = {}
    for _, fx, _ in sorted(found, key=lambda f: -(_order(f[1]) or 0)):  # the highest order first: it serves the others
        caches.setdefault(sharing_key(fx), FeatureCache(fx))
    for tagger, fx, install in found:
        install(tagger, SharedFeatures(caches[sharing_key(fx)], fx))
    return list(caches.values())


def sharing_key(extractor) -> str:
    """What two extractors must agree on to share features: their class and
    configuration but the n-gram order, a gazetteer object by its entries
    (its configuration names only the lists' sizes: two lists of the same
    size must not mix)."""
    import hashlib
    import json
    import pickle

    config = extractor.get_config()
    if _order(extractor) is not None:  # an order that fewer_ngrams can lower
        config.pop("ngrams")
    gazetteers = getattr(extractor, "gazetteers", None)
    if gazetteers is not None and not isinstance(gazetteers, bool):
        config["gazetteers"] = hashlib.sha256(pickle.dumps(gazetteers, protocol=4)).hexdigest()
    return json.dumps([type(extractor).__module__, type(extractor).__qualname__, config], sort_keys=True, default=str)


def _order(extractor) -> int | None:
    """The extractor's n-gram order when lower orders can be cut out of its
    rows (``FeatureExtractor``), else None."""
    return extractor.ngrams if hasattr(extractor, "fewer_ngrams") else None


class Deidentifier:
    """A fitted tagger (``method=None``, one member) or an ensemble."""

    def __init__(self, members: Mapping[str, Any], method: Any | None = None, manifest: Mapping | None = None):
        if method is None and len(members) != 1:
            raise ValueError("a Deidentifier without an ensemble method has exactly one member")
        self.members = dict(members)
        self.method = method
        self.manifest = dict(manifest or {})
        self._shared = share_features(self.members)
        self.source: Path | None = None
        from .shareable import masker

        self._mask = masker(self.manifest)  # a shareable bundle's members see rare words only as shapes
        self.review = review_model(self.manifest, list(self.members))

    def __repr__(self) -> str:
        what = self.method.name if self.method is not None else next(iter(self.members))
        return f"Deidentifier({what}, members={list(self.members)})"

    @classmethod
    def load(cls, path: str | Path, allow_external: Mapping[str, str] | None = None,
             trusted: Sequence[str] | None = None) -> "Deidentifier":
        """A bundle written by ``ensemble-deid fit`` (checked before loading).
        ``allow_external``: {tagger name: program path} for members that run
        a program (PhysioNet deid, MIST): refused without it. ``trusted``:
        the manifest checksums to accept (any other bundle is refused)."""
        from .bundle import read_bundle

        from .bundle import MANIFEST, BundleError

        manifest, members, method = read_bundle(path, allow_external, trusted)
        try:
            model = cls(members, method, manifest)
        except BundleError as exc:  # the stored review settings: untrusted input like the rest
            raise BundleError(f"{Path(path) / MANIFEST}: {exc}") from None
        model.source = Path(path)  # where it was loaded from: a run never writes its outputs there
        model._check_operating_point(path)
        model._probe(path)
        return model

    def _check_operating_point(self, path) -> None:
        """The operating point a bundle stores passes the checks a
        re-pointing does: an edited bundle whose threshold keeps no span
        would otherwise release every note as it came in."""
        method = self.method
        if method is None or not method.scored:
            return
        from ..ensemble.base import check_point_against
        from ..errors import ParameterError
        from .bundle import BundleError

        point = getattr(method, "operating_point_", None) or method.get_params().get("operating_point")
        if not point:
            return
        try:
            score_range = method.score_range()
        except Exception as exc:  # noqa: BLE001 - a learned state edited out of shape
            raise BundleError(f"{path}: the method's state is damaged or was edited ({type(exc).__name__})") from None
        try:
            check_point_against(point, method.name, score_range, method.score_meaning, self.categories)
        except ParameterError as exc:
            raise BundleError(f"{path}: the bundle's {exc} (the bundle was edited)") from None

    def _probe(self, path) -> None:
        """Tag one made-up note: a learned state edited into a shape no fit
        makes (a list where an array was, a rank of the wrong length) fails
        here, as a BundleError, not in the middle of a user's notes. It costs
        little of its own (a second probe takes a few hundredths of a
        second): most of its time is what the first batch would pay anyway
        (members' lazy imports, gazetteers, networks built), and forked
        ``--jobs`` workers inherit it done."""
        import shutil
        import tempfile

        from ..errors import EnsembleDeidError
        from .bundle import BundleError

        # Temp files members make go to a folder of their own, removed after (not left in $TMPDIR).
        scratch, saved = tempfile.mkdtemp(prefix="edeid-probe-"), tempfile.tempdir
        tempfile.tempdir = scratch
        try:
            self.spans([Document("probe", PROBE_NOTE)])
        except EnsembleDeidError:
            raise
        except Exception as exc:  # noqa: BLE001 - any other failure is the bundle's state
            raise BundleError(f"{path}: the model fails on a test note ({type(exc).__name__}): the bundle is "
                              f"damaged or was edited") from None
        finally:
            tempfile.tempdir = saved
            shutil.rmtree(scratch, ignore_errors=True)

    def save(self, path: str | Path, info: Mapping[str, Any] | None = None) -> Path:
        from .bundle import write_bundle

        return write_bundle(path, self.members, self.method, {**self.manifest, **(info or {})})

    @property
    def labels(self) -> tuple[str, ...]:
        return tuple(self.manifest.get("labels", ()))

    @property
    def categories(self) -> frozenset[str] | None:
        """The upper-case categories of the model's labels (None: not recorded)."""
        labels = self.manifest.get("labels")
        if not labels or not all(isinstance(lab, str) for lab in labels):
            return None
        return frozenset(lab.split(":", 1)[0].upper() for lab in labels)

    def repoint(self, point: Mapping[str, float] | None) -> "Deidentifier":
        """Move the ensemble to another operating point without retraining
        (``{"*": t, CATEGORY: t}``; None: the method's own rule). A
        ParameterError names a key that is none of the model's categories,
        or a threshold that is not a finite number inside the range of the
        method's scores: it would keep no span (every note released as it
        is) or every one."""
        from ..errors import ParameterError

        if self.method is None:
            raise ParameterError("the bundle holds a single tagger, no ensemble: there is no operating point to "
                                 "move", "--operating-point")
        self.method.repoint(point, self.categories)
        return self

    def predict(self, documents: Sequence[Document]) -> list[DocumentPrediction]:
        """BIO predictions on the common tokens, one per document."""
        return self.predict_with_members(documents)[0]

    def predict_with_members(self, documents: Sequence[Document],
                             tags_only: bool = False) -> tuple[list[DocumentPrediction], dict]:
        """``predict``'s output and, behind it, each member's own predictions
        ({member label: {document id: prediction}}; with a voting method,
        without confidences), from one run of the members. ``tags_only``:
        for a caller that reads the tags alone (spans), no member computes
        confidences the output would not use."""
        documents, outputs = self._member_outputs(documents, tags_only)
        if self.method is None:
            return list(next(iter(outputs.values())).values()), outputs
        return self.method.predict(self._consulted(outputs, documents), documents), outputs

    def _member_outputs(self, documents: Sequence[Document], tags_only: bool = False) -> tuple[list[Document], dict]:
        documents = self._mask(_documents(documents))
        outputs = {}
        # A method that reads the members' spans alone (voting) spares them their confidences; so does a
        # single tagger whose caller reads only its tags (a CRF's marginals are a forward-backward pass and
        # a Python call per token: a sixth of a CRF bundle's run).
        tags_only = (tags_only and self.method is None) or \
            (self.method is not None and not getattr(self.method, "reads_member_confidences", True))
        from ..taggers.features import gc_paused

        # No collection while the members run: the batch's feature lists (no cycles) would be walked again and
        # again; they are freed before collections resume (7% of a CRF bundle's run).
        with gc_paused():
            try:
                for label, tagger in self.members.items():
                    preds = (getattr(tagger, "predict_tags", tagger.predict) if tags_only else tagger.predict)(documents)
                    check_predictions(documents, preds, f"member {label}")
                    outputs[label] = {p.doc_id: p for p in preds}
            finally:
                self.clear_shared()
        return documents, outputs

    def _consulted(self, outputs: dict, documents: Sequence[Document]) -> dict:
        consulted = dict(outputs)
        for name in self.method.member_names_:  # eliminated by pruning: never consulted
            if name not in consulted:
                consulted[name] = {d.id: DocumentPrediction.empty(d) for d in documents}
        return consulted

    def spans_for_review(self, documents: Sequence[Document], budget=None) -> tuple[dict[str, list[Annotation]],
                                                                                   dict[str, list[dict]]]:
        """Predicted spans per document id and, per document id, the review
        items the bundle's review model queues under ``budget`` (an
        ``ensemble.review_risk.Budget``; None: the bundle's own), riskiest
        first: offsets, suggested label, risk, kind, proposing members."""
        from ..ensemble.review_risk import document_views, predict_for_review

        if self.review is None or self.method is None:
            raise ValueError("the bundle holds no review model (fit an ensemble with --review)")
        documents = _documents(documents)
        masked, outputs = self._member_outputs(documents)
        preds, gaps = predict_for_review(self.method, self._consulted(outputs, masked), self.method.member_names_,
                                         masked)
        views = document_views(documents, preds, [outputs[n] for n in self.review.member_names], gaps)
        items = self.review.items(views)
        risk = self.review.risk.risk(items)
        queued: dict[str, list[dict]] = {d.id: [] for d in documents}
        for i in sorted(self.review.select(items, risk, budget).tolist(), key=lambda i: (items.doc[i], -risk[i])):
            queued[documents[int(items.doc[i])].id].append({
                "start": int(items.start_char[i]), "end": int(items.end_char[i]), "label": items.label[i],
                "risk": float(risk[i]), "kind": items.kind[i], "current": "text",
                "members": list(items.proposed_by[i])})
        return {d.id: p.spans(d) for d, p in zip(documents, preds)}, queued

    def clear_shared(self) -> None:
        """Empty the feature caches the members share (each note's features,
        computed once for every member with the same feature settings).
        ``predict`` does so after each batch; a caller running members one by
        one itself (timing each alone) calls it between them, so that a member
        pays for its own features."""
        for shared in self._shared:
            shared.clear()

    def spans(self, documents: Sequence[Document]) -> dict[str, list[Annotation]]:
        """Predicted PHI spans per document id."""
        documents = _documents(documents)
        return {d.id: p.spans(d) for d, p in zip(documents, self.predict_with_members(documents, tags_only=True)[0])}

    def tag(self, documents: Sequence[Document]) -> tuple[dict[str, list[Annotation]], int]:
        """``spans`` and how many spans the members found in all, before the
        ensemble decided (a run that tags nothing tells a model that finds
        nothing from an ensemble that keeps nothing)."""
        documents = _documents(documents)
        predicted, outputs = self.predict_with_members(documents, tags_only=True)
        found = sum(len(p.spans(d)) for preds in outputs.values() for d in documents for p in (preds[d.id],))
        return {d.id: p.spans(d) for d, p in zip(documents, predicted)}, found

    def deidentify(self, text: str, mode: str = "tag", surrogates=None, doc_id: str = "note") -> str:
        """One note's text with its predicted PHI replaced (see ``redact``)."""
        from .redact import redact

        doc = Document(doc_id, text)
        return redact(doc, self.spans([doc])[doc_id], mode, surrogates)


def review_model(manifest: Mapping, member_names: Sequence[str]):
    """The bundle's review model (``ensemble.review_risk.ReviewModel``), None
    when it has none; a stored one that fails its checks is a BundleError."""
    stored = manifest.get("review")
    if stored is None:
        return None
    from ..ensemble.review_risk import ReviewModel
    from .bundle import BundleError

    try:
        return ReviewModel.from_dict(stored, member_names)
    except ValueError as exc:
        raise BundleError(str(exc)) from None


def _documents(documents) -> list[Document]:
    """``documents`` as a list, or a TypeError that shows the call to make
    (plain text is common: the document id is needed to key the result)."""
    single = isinstance(documents, (str, Document))
    listed = [] if single else list(documents)
    if single or not all(isinstance(d, Document) for d in listed):
        raise TypeError("expected a list of Document objects, e.g. model.spans([Document('note-1', text)]) "
                        "(from ensemble_deid.corpus.document import Document); for one note's text, "
                        "model.deidentify(text)")
    return listed
