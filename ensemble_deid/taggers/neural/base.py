"""``NeuralTagger``: the Tagger base of the BiLSTM(-CRF) adapters.

Importing this module does not import torch (the registry loads adapter
classes to list them); torch loads on fit/predict/load.

Fitted state, all picklable without live modules: ``tags_`` (the tag set,
the column order of marginals), ``words_`` / ``chars_`` (vocabularies),
``state_dict_`` (CPU tensors), ``history_`` (one dict per epoch) and
``train_info_``. The network is rebuilt from them on first use.
"""
from __future__ import annotations

import logging
import math
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar, Sequence

import numpy as np

from ...corpus.bio import OUTSIDE, gold_tags
from ...corpus.document import Document
from ...errors import printable
from ..prediction import DocumentPrediction
from ..base import Tagger
from ..constraints import (
    DEVICE, EXISTING_FILE, MAX_BUCKETS, MAX_COUNT, MAX_NORM, MAX_PENALTY, MAX_RATE, MAX_SIZE, THREADS, Interval, Options,
)
from .vocab import Vocab

log = logging.getLogger("ensemble_deid.taggers.neural")

CHECKPOINT_FORMAT = "ensemble-deid/neural-checkpoint/2"  # 2: vocabularies packed (see pack_vocab)
READABLE_FORMATS = ("ensemble-deid/neural-checkpoint/1", CHECKPOINT_FORMAT)
# Each field of a checkpoint and the type it must have (checked before use:
# a bundle received from elsewhere is untrusted input).
CHECKPOINT_FIELDS = {"tagger": str, "version": str, "params": dict, "tags": list, "words": dict, "chars": dict,
                     "state_dict": dict, "history": list, "train_info": dict, "extra": dict}
CONTEXTS = ("sentence", "document")
# Parameters that never change a fitted model's output: left out of the
# cache key, so showing progress or using more threads reuses cached runs.
_NOT_HASHED = ("verbose", "num_threads")
# Parameters added after models were published, off by default: left out of the
# cache key while off, so the published entries keep their keys.
_ADDED_LATER = ("linear_buckets", "linear_decay", "bio_decode")


class NeuralTagger(Tagger):
    """Character BiLSTM + word BiLSTM, with a CRF or softmax output layer.

    Parameters (the adapters change some defaults):
      epochs: the number of epochs; with a held-out part (``validation_fraction``,
        the default) a ceiling: early stopping on that part chooses the epoch;
      patience: epochs without a better held-out F1 before stopping (0: never);
      batch_size: sequences (sentences or notes, see ``context``) per update;
      lr: learning rate; optimizer: "adam", "amsgrad" (Adam whose steps do not
        grow back as gradients shrink), "sgd" (plain) or "momentum" (SGD,
        momentum 0.9). With "sgd"/"momentum" the loss is summed over the
        sequences of a batch, so ``lr`` keeps the meaning it had for the
        one-sentence updates of [LAMPLE16]/NeuroNER; with "adam"/"amsgrad" it
        is averaged per sequence. Each epoch uses ``lr / (1 + lr_decay * (epoch - 1))``;
      anneal, anneal_patience: after ``anneal_patience`` epochs in a row
        without a better held-out F1, the learning rate is multiplied by
        ``anneal`` and training resumes from the weights and optimizer state
        of the best epoch so far (anneal 1: off);
      ema_decay: keep an exponential moving average of the weights, updated
        after every step with this decay (0: off); the averaged weights are
        the ones scored on the held-out part, kept and returned;
      clip: gradient norm clipping (0: none); dropout: on the word BiLSTM's
        inputs and, with ``output_dropout``, on its outputs too;
      bio_constraints: the CRF never moves to ``I-X`` except from ``B-X`` or
        ``I-X`` (forbidden moves scored -10000 in training and decoding; the
        softmax variant ignores it);
      bio_decode: (the softmax variant, ``lstm-l``) tag a sequence by
        Viterbi over the tokens' log-probabilities with those moves
        forbidden and no others scored, instead of each token's most
        probable tag (False: the published member; leaves the cache key as
        it was before the parameter existed);
      char_dim, char_lstm_dim (per direction), word_dim, word_lstm_dim (per
        direction): layer sizes; shape_dim: size of a token shape embedding
        (casing class x glued to the previous token; 0 = none);
      embeddings_path: a local GloVe or word2vec *text* file of ``word_dim``-d
        vectors (None: random vectors; nothing is downloaded);
      corpus_vectors: start the word embeddings from vectors fitted on the
        training notes' own text (PPMI + SVD, ``word_vectors.py``): words
        that share contexts start close together (months, towns, hospital
        words). Only the training documents are read. An
        ``embeddings_path`` file takes precedence;
      unk_prob: chance that a training word seen once is read as unknown;
      context: "sentence" (one sequence per sentence of the common splitter)
        or "document" (one per note: the BiLSTM sees across sentences);
      max_length: with ``context="document"``, notes longer than this many
        tokens are cut at line breaks into pieces of at most this length (a
        longer line stays whole; 0: whole notes);
      device: "auto" (the GPU when torch sees one, else the CPU), "cpu", "cuda";
      random_state: seeds weights, batch order, dropout and the held-out split;
      validation_fraction: share of the training documents (whole patient
        groups) held out for early stopping (default 0.1: the number of
        epochs is chosen inside each training run, on that run's own training
        notes, so no test split is looked at; 0: none, train every note for
        ``epochs`` epochs, version 2's defaults with ``epochs=12``, 16 for
        ``lstm-l``, which were settled by MEDDOCAN dev F1 and are the
        published members' settings);
      linear_buckets: with a positive count, the linear CRF's own [LIU17]
        feature strings (``FeatureExtractor`` with its defaults, as ``crf``
        reads them) are hashed into this many buckets, each with a weight per
        tag, and each token's sum is added to the BiLSTM's tag scores: a
        linear-chain CRF and a BiLSTM-CRF trained as one model (0: off, the
        published members; a 0 leaves the cache key as it was before the
        parameter existed); linear_decay: their decoupled weight decay (L2)
        per unit of learning rate, after every step (0: none);
      refit: after early stopping, train again from fresh weights on every
        training note (held-out part included) for the number of epochs
        early stopping chose, at the learning rates those epochs used; the
        final model is that one (about twice the training time);
      num_threads: torch CPU threads during fit/predict (None: leave torch's
        setting; 1 is fastest on a small shared CPU for networks this size);
      verbose: a tqdm bar with loss and held-out F1 per epoch on a terminal,
        plain lines (one per epoch, at most one each 30 s) elsewhere (``progress``; per-epoch lines
        also go to the ``ensemble_deid.taggers.neural`` logger at INFO level).
    ``verbose`` and ``num_threads`` do not enter the cache key (param_hash).
    """

    version: ClassVar[str] = "1"
    requires: ClassVar[tuple[str, ...]] = ("torch", "torchcrf")
    # An adapter states only the defaults it changes and the parameters it adds
    # (name -> default); its constructor is derived from this class's, so the
    # full signature is written once (see ``__init_subclass__``).
    defaults: ClassVar[dict[str, Any]] = {}
    use_crf: ClassVar[bool] = True
    uses_features: ClassVar[bool] = False
    # Checked before any fold runs (Tagger.validate_params; _check_params follows).
    _parameter_constraints: ClassVar[dict[str, list]] = {
        "epochs": [Interval(int, 1, MAX_COUNT)], "patience": [Interval(int, 0, MAX_COUNT)],
        "batch_size": [Interval(int, 1, MAX_COUNT)], "lr": [Interval(float, 0, MAX_RATE, closed="right")],
        "optimizer": [str], "lr_decay": [Interval(float, 0, MAX_PENALTY)], "anneal": [Interval(float, 0, 1, closed="right")],
        "anneal_patience": [Interval(int, 0, MAX_COUNT)], "ema_decay": [Interval(float, 0, 1, closed="left")],
        "clip": [Interval(float, 0, MAX_NORM)], "dropout": [Interval(float, 0, 1, closed="left")],
        "output_dropout": [bool], "bio_constraints": [bool], "char_dim": [Interval(int, 1, MAX_SIZE)],
        "char_lstm_dim": [Interval(int, 1, MAX_SIZE)], "word_dim": [Interval(int, 1, MAX_SIZE)],
        "word_lstm_dim": [Interval(int, 1, MAX_SIZE)], "shape_dim": [Interval(int, 0, MAX_SIZE)],
        "embeddings_path": [None, EXISTING_FILE], "corpus_vectors": [bool], "unk_prob": [Interval(float, 0, 1)],
        "context": [Options(*CONTEXTS)], "max_length": [Interval(int, 0, MAX_COUNT)],
        "device": [DEVICE],
        "validation_fraction": [Interval(float, 0, 1, closed="left")], "refit": [bool],
        "num_threads": [None, THREADS], "verbose": [bool],
        "linear_buckets": [Interval(int, 0, MAX_BUCKETS)], "linear_decay": [Interval(float, 0, MAX_PENALTY)],
        "bio_decode": [bool],
    }
    _fitted_caches = ("_model",)
    # Only fit reads the vectors file (the checkpoint holds the embeddings learned from it).
    fit_only_params: ClassVar[tuple[str, ...]] = ("embeddings_path",)
    machine_params: ClassVar[tuple[str, ...]] = ("num_threads", "device")

    def __init__(
        self,
        epochs: int = 30,
        patience: int = 8,
        batch_size: int = 16,
        lr: float = 0.005,
        optimizer: str = "adam",
        lr_decay: float = 0.05,
        anneal: float = 0.5,
        anneal_patience: int = 3,
        ema_decay: float = 0.99,
        clip: float = 5.0,
        dropout: float = 0.5,
        output_dropout: bool = True,
        bio_constraints: bool = True,
        char_dim: int = 25,
        char_lstm_dim: int = 25,
        word_dim: int = 100,
        word_lstm_dim: int = 100,
        shape_dim: int = 10,
        embeddings_path: str | None = None,
        corpus_vectors: bool = True,
        unk_prob: float = 0.5,
        context: str = "document",
        max_length: int = 200,
        device: str = "auto",
        random_state: int = 0,
        validation_fraction: float = 0.1,
        refit: bool = True,
        num_threads: int | None = 1,
        verbose: bool = False,
        linear_buckets: int = 0,
        linear_decay: float = 0.0,
        bio_decode: bool = False,
    ):
        self._store_params(locals())

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "__init__" not in cls.__dict__:
            cls.__init__ = _derived_init(cls)

    # --- parameters ----------------------------------------------------------------
    def hashed_params(self) -> dict[str, Any]:
        # Progress output and thread count do not change the model.
        params = {k: v for k, v in super().hashed_params().items() if k not in _NOT_HASHED}
        for name in _ADDED_LATER:  # at their defaults: the key of every run made before they existed
            if not params.get(name):
                params.pop(name, None)
        return params

    def _check_params(self) -> None:
        from .training import OPTIMIZERS

        problems = []
        if self.context not in CONTEXTS:
            problems.append(f"context must be one of {CONTEXTS}, not {self.context!r}")
        if self.optimizer not in OPTIMIZERS:
            problems.append(f"optimizer must be one of {OPTIMIZERS}, not {self.optimizer!r}")
        if not (0 <= self.validation_fraction < 1):
            problems.append("validation_fraction must lie in [0, 1)")
        if not (0 <= self.dropout < 1):
            problems.append("dropout must lie in [0, 1)")
        if not (0 < self.anneal <= 1):
            problems.append("anneal must lie in (0, 1]")
        if not (0 <= self.ema_decay < 1):
            problems.append("ema_decay must lie in [0, 1)")
        if not (0 <= self.unk_prob <= 1):
            problems.append("unk_prob must lie in [0, 1]")
        if self.bio_decode and self.use_crf:
            problems.append("bio_decode is for a tagger without a CRF (lstm-l): a CRF decodes by Viterbi already")
        if float(self.linear_decay) * float(self.lr) >= 1:
            problems.append(f"linear_decay x lr must be below 1 (each step multiplies the linear weights by "
                            f"1 - lr x linear_decay), not {float(self.linear_decay) * float(self.lr):g}")
        if int(self.max_length) < 0:
            problems.append(f"max_length must be 0 (whole notes) or positive, not {self.max_length!r}")
        for name in ("epochs", "batch_size", "word_dim", "word_lstm_dim"):
            if int(getattr(self, name)) < 1:
                problems.append(f"{name} must be at least 1")
        if not (self.lr > 0):
            problems.append("lr must be positive")
        if problems:
            raise ValueError(f"{self.name or type(self).__name__}: " + "; ".join(problems))

    # --- hooks for the feature-augmented variant ---------------------------------------
    def _fit_features(self, documents: Sequence[Document]) -> None:
        """Fit whatever produces per-token features (lstm-crf-fea)."""

    def _features(self, doc: Document) -> np.ndarray:
        raise NotImplementedError

    def _network_extra(self) -> dict[str, Any]:
        """Extra keyword arguments of BiLSTMTagger (feature sizes)."""
        return {}

    # --- learning -------------------------------------------------------------------------
    def fit(self, documents: Sequence[Document]) -> "NeuralTagger":
        self.check_available()
        self.validate_params()  # declared constraints, then _check_params
        documents = list(documents)
        if not documents:
            raise ValueError(f"{self.name}: no training documents")
        from .training import select_device

        self._clear_fitted()
        train_docs, dev_docs = split_held_out(documents, self.validation_fraction, self.random_state)
        labels = sorted({a.label for d in documents for a in d.annotations})
        tags = [OUTSIDE] + [f"{p}-{label}" for label in labels for p in ("B", "I")]
        vectors = self._word_vectors(documents)
        device = select_device(self.device)

        model, words, chars, result = self._train(train_docs, dev_docs, tags, vectors, device)
        self.history_ = [dict(vars(r)) for r in result.history]
        self.train_info_ = {
            "epochs_run": len(result.history),
            "best_epoch": result.best_epoch,
            "best_held_out_f1": result.best_dev_f1,
            "stopped_early": result.stopped_early,
            "seconds": result.seconds,
            "train_documents": len(train_docs),
            "held_out_documents": len(dev_docs),
            # Which notes early stopping judged on, as a hash (the ids stay out of saved models).
            "held_out_fingerprint": held_out_fingerprint(dev_docs),
            "train_tokens": result.train_tokens,
            "device": str(device),
        }
        if self.refit and dev_docs and result.best_epoch > 0:
            # Early stopping chose the number of epochs; the final model learns
            # from every note for that many, at the rates those epochs used.
            schedule = [r.lr for r in result.history[: result.best_epoch]]
            model, words, chars, again = self._train(documents, [], tags, vectors, device, schedule)
            self.train_info_["refit"] = {
                "epochs": len(again.history), "documents": len(documents),
                "train_tokens": again.train_tokens, "seconds": again.seconds,
                "loss": again.history[-1].loss if again.history else None,
            }
            self.train_info_["seconds"] += again.seconds

        self.tags_ = tags
        self.words_ = words
        self.chars_ = chars
        self.state_dict_ = {k: v.detach().cpu().clone() for k, v in model.state_dict().items()}
        self._model = model.eval()
        self._model_device = device
        return self

    def _word_vectors(self, documents: Sequence[Document]) -> dict[str, np.ndarray]:
        if self.embeddings_path:
            from .vocab import load_embeddings

            return load_embeddings(self.embeddings_path, self.word_dim)
        if self.corpus_vectors:
            from .vocab import normalize_word
            from .word_vectors import fit_word_vectors

            # Every training note, held-out part included: no labels are read.
            return fit_word_vectors(
                [[normalize_word(w) for w in d.tokens.words] for d in documents],
                dim=self.word_dim, random_state=self.random_state,
            )
        return {}

    def _train(self, train_docs, dev_docs, tags, vectors, device, lr_schedule=None):
        """One training run from fresh weights: the network, its vocabularies
        (from ``train_docs``) and the TrainResult."""
        from .training import TrainConfig, encode_documents, forked_rng, seed_everything, train_model
        from .vocab import build_char_vocab, build_word_vocab

        tag_index = {t: i for i, t in enumerate(tags)}
        train_words = [w for d in train_docs for w in d.tokens.words]
        words = build_word_vocab(train_words, extra=vectors.keys())
        chars = build_char_vocab(train_words)
        pretrained = None
        if vectors:
            pretrained = np.zeros((len(words), self.word_dim), dtype=np.float32)
            for i, w in enumerate(words.itos):
                vec = vectors.get(w)
                if vec is not None:
                    pretrained[i] = vec

        self._fit_features(train_docs)
        features = self._features if self.uses_features else None
        linear = self._linear_ids if self.linear_buckets else None
        with self._threads(), forked_rng(device):
            seed_everything(self.random_state)
            model = self._network(len(words), len(chars), tags, pretrained)
            train = encode_documents(
                train_docs, words, chars, self.context, tag_index, gold_tags, features, self.max_length,
                start_with_begin=self._constrained, feature_ids=linear,
            )
            dev = None
            if dev_docs:
                dev = encode_documents(dev_docs, words, chars, self.context, None, None, features, self.max_length,
                                       feature_ids=linear)
            config = TrainConfig(
                epochs=len(lr_schedule) if lr_schedule else int(self.epochs), patience=int(self.patience),
                batch_size=int(self.batch_size), lr=float(self.lr), optimizer=self.optimizer,
                clip=float(self.clip or 0), lr_decay=float(self.lr_decay), unk_prob=float(self.unk_prob),
                anneal=float(self.anneal), anneal_patience=int(self.anneal_patience),
                ema_decay=float(self.ema_decay), linear_decay=float(self.linear_decay), lr_schedule=lr_schedule,
                seed=int(self.random_state),
                verbose=bool(self.verbose), name=(self.name or type(self).__name__) + (" refit" if lr_schedule else ""),
            )
            result = train_model(model, train, dev, dev_docs, tags, words.singletons(), config, device)
        return model, words, chars, result

    def _network(self, n_words: int, n_chars: int, tags: Sequence[str], pretrained=None):
        from .network import BiLSTMTagger

        return BiLSTMTagger(
            n_words, n_chars, len(tags),
            word_dim=self.word_dim, char_dim=self.char_dim, char_lstm_dim=self.char_lstm_dim,
            word_lstm_dim=self.word_lstm_dim, shape_dim=self.shape_dim, dropout=self.dropout,
            output_dropout=self.output_dropout, use_crf=self.use_crf, pretrained=pretrained,
            allowed=self._allowed(tags), linear_buckets=int(self.linear_buckets), bio_decode=bool(self.bio_decode),
            **self._network_extra(),
        )

    def _linear_ids(self, doc: Document) -> np.ndarray:
        """(n_tokens, M) bucket ids (1..linear_buckets) of each token's
        feature strings, 0-padded to the note's longest row (int32)."""
        fx = self.__dict__.get("_linear_fx")
        if fx is None:
            from ..features import FeatureExtractor

            fx = self._linear_fx = FeatureExtractor()
        from ..feature_hash import hashed_ids

        rows = fx.document_features(doc)
        lengths = np.fromiter(map(len, rows), dtype=np.int64, count=len(rows))
        # int32 (buckets < 2**22): a training set's ids are held until its batches are made
        out = np.zeros((len(rows), int(lengths.max()) if len(rows) else 0), dtype=np.int32)
        flat = hashed_ids([f for row in rows for f in row]) % int(self.linear_buckets) + 1
        token = np.repeat(np.arange(len(rows)), lengths)
        out[token, np.arange(len(flat)) - np.repeat(np.cumsum(lengths) - lengths, lengths)] = flat
        return out

    @property
    def _constrained(self) -> bool:
        """Whether the CRF forbids invalid BIO moves (``bio_constraints``)."""
        return bool(self.use_crf and self.bio_constraints)

    def _allowed(self, tags):
        if not (self._constrained or self.bio_decode):
            return None
        from .network import bio_constraints

        return bio_constraints(tags)

    # --- inference ------------------------------------------------------------------------------
    def network(self):
        """The live torch module (built from the fitted state on first use)."""
        self.check_fitted()
        from .training import select_device

        device = select_device(self.device)
        model = self.__dict__.get("_model")
        if model is None:
            model = self._network(len(self.words_), len(self.chars_), self.tags_)
            model.load_state_dict(self.state_dict_)
            self._model = model.eval()
            self._model_device = None
        if self.__dict__.get("_model_device") != device:
            self._model.to(device)
            self._model_device = device
        return self._model

    def _run(self, documents: Sequence[Document], marginals: bool) -> tuple[list[np.ndarray], list[np.ndarray] | None]:
        self.check_fitted()
        from .training import encode_documents, predict_encoded

        documents = list(documents)
        with self._threads():
            model = self.network()
            features = self._features if self.uses_features else None
            linear = self._linear_ids if self.linear_buckets else None
            data = encode_documents(documents, self.words_, self.chars_, self.context, features=features,
                                    max_length=self.max_length, feature_ids=linear)
            return predict_encoded(
                model, data, len(documents), [len(d.tokens) for d in documents], self._model_device, marginals
            )

    def predict(self, documents: Sequence[Document]) -> list[DocumentPrediction]:
        """BIO tags; confidence = marginal probability of each predicted tag
        (CRF forward-backward, or the softmax)."""
        documents = list(documents)
        ids, probs = self._run(documents, marginals=True)
        out = []
        for doc, tag_ids, p in zip(documents, ids, probs):
            conf = p[np.arange(len(tag_ids)), tag_ids].astype(np.float64)
            out.append(DocumentPrediction(doc.id, tuple(self.tags_[i] for i in tag_ids), np.clip(conf, 0.0, 1.0)))
        return out

    def predict_tags(self, documents: Sequence[Document]) -> list[DocumentPrediction]:
        """The Viterbi tags alone (no forward-backward)."""
        documents = list(documents)
        ids, _ = self._run(documents, marginals=False)
        return [DocumentPrediction(doc.id, tuple(self.tags_[i] for i in tag_ids), None)
                for doc, tag_ids in zip(documents, ids)]

    def predict_marginals(self, documents: Sequence[Document]) -> list[np.ndarray]:
        """Per document, an array (n_tokens, len(tags_)) of per-token tag
        probabilities (rows sum to 1): features for stacking."""
        return self._run(documents, marginals=True)[1]

    def _threads(self):
        return torch_threads(self.num_threads)

    # --- persistence ----------------------------------------------------------------------------
    def __getstate__(self):
        state = dict(self.__dict__)
        state.pop("_model", None)  # rebuilt from state_dict_ on first use
        state.pop("_model_device", None)
        state.pop("_linear_fx", None)
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)

    def training_choices(self) -> dict[str, Any]:
        """What this run chose on its own held-out training notes (cache metadata)."""
        info = dict(getattr(self, "train_info_", None) or {})
        choices = {key: info.get(key) for key in ("best_epoch", "epochs_run", "stopped_early", "best_held_out_f1",
                                                   "train_documents", "held_out_documents", "held_out_fingerprint")}
        choices["chosen_epoch"] = choices.pop("best_epoch")
        if "refit" in info:
            choices["refit_epochs"] = info["refit"]["epochs"]
        return choices

    def _extra_state(self) -> dict[str, Any]:
        return {}

    def _load_extra_state(self, extra: dict[str, Any]) -> None:
        pass

    def save(self, path: str | Path) -> Path:
        """A checkpoint of the fitted tagger (torch.save of plain data only:
        loads back with ``weights_only=True``)."""
        self.check_fitted()
        import torch

        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        torch.save(
            {
                "format": CHECKPOINT_FORMAT,
                "tagger": self.name,
                "class": f"{type(self).__module__}:{type(self).__qualname__}",
                "version": self.version,
                "params": self.saved_params(),
                "tags": list(self.tags_),
                "words": pack_vocab(self.words_),
                "chars": pack_vocab(self.chars_),
                "state_dict": self.state_dict_,
                "history": self.history_,
                "train_info": self.train_info_,
                "extra": self._extra_state(),
            },
            path,
        )
        return path

    @classmethod
    def load(cls, path: str | Path, vet=None) -> "NeuralTagger":
        """A fitted tagger from ``save``'s checkpoint. Called on the base
        class, the registry name stored in the checkpoint picks the adapter.
        ``vet``: as :meth:`Tagger.load`'s (sees the parameters before any
        check); the thread count and device are this machine's."""
        import torch

        check_checkpoint_sizes(Path(path))  # before torch unpacks anything
        try:
            ckpt = torch.load(Path(path), map_location="cpu", weights_only=True)
        except Exception as exc:  # noqa: BLE001 - pickle, zip and torch errors alike: a file we did not write
            # weights_only refuses any object but tensors and plain data (its message may quote the file)
            raise ValueError(f"{path}: not a weights-only ensemble-deid checkpoint "
                             f"({type(exc).__name__}; code or objects in a checkpoint are refused)") from None
        if not isinstance(ckpt, dict) or ckpt.get("format") not in READABLE_FORMATS:
            raise ValueError(f"{path}: not an ensemble-deid neural checkpoint")
        for key, kind in CHECKPOINT_FIELDS.items():
            if not isinstance(ckpt.get(key), kind):
                what = "missing" if key not in ckpt else f"not a {kind.__name__}"
                raise ValueError(f"{path}: checkpoint field {key!r} is {what}")
        if not all(isinstance(t, str) for t in ckpt["tags"]):
            raise ValueError(f"{path}: checkpoint field 'tags' holds something other than tag names")
        if not all(isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in ckpt["state_dict"].items()):
            raise ValueError(f"{path}: checkpoint field 'state_dict' holds something other than named tensors")
        target = cls
        if not cls.name:
            from ..registry import entry_points, tagger_class

            registered = entry_points()
            target = tagger_class(ckpt["tagger"], registered) if ckpt["tagger"] in registered else None
            if not (isinstance(target, type) and issubclass(target, NeuralTagger)):
                raise ValueError(f"{path}: checkpoint field 'tagger' names no neural tagger")
        elif ckpt["tagger"] != cls.name:
            raise ValueError(f"{path}: a checkpoint of {printable(ckpt['tagger'])!r}, not {cls.name!r}")
        if ckpt["version"] != target.version:
            log.warning("%s: checkpoint of version %s loaded by version %s", path, printable(ckpt["version"]),
                        target.version)
        unknown = sorted(set(ckpt["params"]) - set(target._param_names()))
        if unknown:
            raise ValueError(f"{path}: checkpoint field 'params' names {len(unknown)} parameter(s) "
                             f"{target.name!r} does not have, e.g. {printable(str(unknown[0]))!r}")
        if vet is not None:
            vet(target, ckpt["params"])
        tagger = target(**target.loaded_params(ckpt["params"], str(path)))
        tagger.validate_params()  # InvalidParameter (a ValueError): a value no fit accepts
        tagger.tags_ = list(ckpt["tags"])
        tagger.words_ = unpack_vocab(ckpt["words"], f"{path}: checkpoint field 'words'")
        tagger.chars_ = unpack_vocab(ckpt["chars"], f"{path}: checkpoint field 'chars'")
        tagger.state_dict_ = ckpt["state_dict"]
        tagger.history_ = ckpt["history"]
        tagger.train_info_ = ckpt["train_info"]
        try:
            tagger._load_extra_state(ckpt["extra"])
        except (KeyError, TypeError):
            raise ValueError(f"{path}: checkpoint field 'extra' lacks what {target.name!r} keeps there") from None
        return tagger


def check_checkpoint_sizes(path: Path) -> None:
    """Refuse a checkpoint whose zip entries would unpack to more than the
    file holds, reading only its central directory: ``torch.save`` stores
    every entry uncompressed, so an entry that is compressed (a 200 MB tensor
    from a few hundred kilobytes) was not written by it and is refused before
    torch decompresses it. A file that is no zip is left to torch's own
    refusal (the legacy format is not weights-only loadable)."""
    import zipfile

    try:
        with zipfile.ZipFile(path) as zf:
            infos = zf.infolist()
    except (zipfile.BadZipFile, OSError, ValueError, EOFError):
        return
    size = path.stat().st_size
    if sum(i.file_size for i in infos) > size:
        raise ValueError(f"{path}: its entries declare {sum(i.file_size for i in infos):,} bytes unpacked, more than "
                         f"the file's {size:,} (a compressed or damaged checkpoint: torch.save stores entries "
                         f"uncompressed)")
    for info in infos:
        if info.compress_type != zipfile.ZIP_STORED:
            raise ValueError(f"{path}: entry {printable(info.filename)[:80]!r} is compressed (torch.save stores "
                             f"entries uncompressed): not a checkpoint ensemble-deid wrote")


@contextmanager
def torch_threads(n: int | None):
    """torch's CPU threads set to ``n`` for the block, at most this machine's
    CPUs (None: left as they are)."""
    if not n:
        yield
        return
    import torch

    from ..constraints import usable_cpus

    before = torch.get_num_threads()
    torch.set_num_threads(min(int(n), usable_cpus()))
    try:
        yield
    finally:
        torch.set_num_threads(before)


def pack_vocab(vocab: Vocab) -> dict:
    """A vocabulary as a checkpoint holds it: its entries joined into one
    string with their lengths, and their counts, as tensors. torch's
    weights-only loader reads a list of strings one element at a time in
    Python (0.13 s for a 17,700-word MEDDOCAN vocabulary, paid by every
    process that loads a bundle); one string and two tensors take
    milliseconds."""
    import torch

    items = vocab.itos[2:]
    return {"text": "".join(items), "lengths": torch.tensor([len(s) for s in items], dtype=torch.int64),
            "counts": torch.tensor(vocab.counts[2:], dtype=torch.int64)}


def unpack_vocab(state: dict, where: str) -> Vocab:
    """The vocabulary ``pack_vocab`` packed (or format 1's lists of entries
    and counts), checked: anything else is a ValueError starting with
    ``where`` (never quoting an entry: they are words of training notes)."""
    import torch

    def bad(why: str) -> ValueError:
        return ValueError(f"{where} is not a vocabulary: {why}")

    if set(state) == {"itos", "counts"}:  # format 1
        items, counts = state["itos"], state["counts"]
        if not isinstance(items, list) or not all(isinstance(s, str) for s in items):
            raise bad("its entries are not strings")
        if not isinstance(counts, list) or not all(type(c) is int for c in counts):
            raise bad("its counts are not integers")
    elif set(state) == {"text", "lengths", "counts"}:
        text, lengths, counts = state["text"], state["lengths"], state["counts"]
        if not isinstance(text, str):
            raise bad("its text is not a string")
        for name, t in (("lengths", lengths), ("counts", counts)):
            if not isinstance(t, torch.Tensor) or t.dim() != 1 or t.dtype != torch.int64:
                raise bad(f"its {name} are not a vector of integers")
        if (lengths < 0).any() or int(lengths.sum()) != len(text):
            raise bad("its lengths do not cut its text")
        if int((lengths == 0).sum()) > 1:  # before any list is built: a long run of them is only a repeat
            raise bad("an entry is repeated")
        ends = lengths.cumsum(0).tolist()
        items = [text[a:b] for a, b in zip([0] + ends[:-1], ends)]
        counts = counts.tolist()
    else:
        raise bad("unknown fields")
    if len(counts) != len(items) or any(c < 0 for c in counts):
        raise bad("its counts do not match its entries")
    vocab = Vocab(items, counts)
    if len(vocab) != len(items) + 2:  # a repeated entry (or padding/unknown) would shift every later id
        raise bad("an entry is repeated")
    return vocab


def held_out_fingerprint(documents: Sequence[Document]) -> str:
    """A short hash of the held-out documents' ids (order-free): two runs held out the same notes iff equal."""
    import hashlib

    return hashlib.sha256("\n".join(sorted(d.id for d in documents)).encode()).hexdigest()[:16]


def split_held_out(
    documents: Sequence[Document], fraction: float, seed: int
) -> tuple[list[Document], list[Document]]:
    """Training and held-out documents, split by patient group (the
    ``group`` metadata, else the document id) so no patient is on both sides."""
    if fraction <= 0:
        return list(documents), []
    groups = sorted({str(d.metadata.get("group", d.id)) for d in documents})
    if len(groups) < 2:
        return list(documents), []
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(groups))
    n_held = min(max(1, math.ceil(fraction * len(groups))), len(groups) - 1)
    held = {groups[i] for i in order[:n_held]}
    train = [d for d in documents if str(d.metadata.get("group", d.id)) not in held]
    dev = [d for d in documents if str(d.metadata.get("group", d.id)) in held]
    return train, dev


def _derived_init(cls: type[NeuralTagger]):
    """A constructor for ``cls`` with its parent's parameters, ``cls.defaults``
    applied (new names become new parameters), and an explicit signature, so
    scikit-learn style ``get_params``/``set_params``/``clone`` see every
    parameter with this adapter's own default."""
    import inspect

    parent = inspect.signature(cls.__mro__[1].__init__)
    params = list(parent.parameters.values())
    known = {p.name for p in params}
    overrides = dict(cls.__dict__.get("defaults", {}))
    params = [p.replace(default=overrides[p.name]) if p.name in overrides else p for p in params]
    params += [inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=value)
               for name, value in overrides.items() if name not in known]
    signature = parent.replace(parameters=params)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        bound = signature.bind(self, *args, **kwargs)
        bound.apply_defaults()
        for name, value in list(bound.arguments.items())[1:]:
            setattr(self, name, value)

    __init__.__signature__ = signature
    __init__.__qualname__ = f"{cls.__qualname__}.__init__"
    __init__.__doc__ = f"Parameters as NeuralTagger; defaults changed or added here: {overrides or 'none'}."
    return __init__
