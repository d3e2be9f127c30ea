"""``char-cnn``: a character-level tagger, no word features. Dilated
convolutions over the note's characters, each token read at its first and
last character, a small token BiLSTM and a softmax over its output and the
token's own character features
(``ensemble_deid.taggers.neural.chars``). Small enough for a CPU: about 60k
weights at the defaults; ``device="auto"`` trains and predicts on a GPU when
torch sees one, as the BiLSTM members do.

    tagger = CharCnnTagger().fit(train_docs)     # epochs chosen on held-out training patients
    tagger.predict(test_docs)                    # confidences: softmax probabilities

Early stopping: a ``validation_fraction`` of the training documents (whole
patients, as the neural members') is held out, and the weights of the epoch
with the best strict F1 on it are kept (at most ``epochs``; ``patience``
epochs without a better one end the run, once some epoch has found anything
on it: a small corpus's first epochs are a few steps each and find nothing).
The model is not trained again on the held-out notes (that would double a CPU
fit).
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ensemble_deid.corpus.bio import OUTSIDE
from ensemble_deid.corpus.document import Document
from ensemble_deid.taggers.base import Tagger
from ensemble_deid.taggers.constraints import DEVICE, MAX_COUNT, MAX_RATE, MAX_SIZE, THREADS, Interval
from ensemble_deid.taggers.neural.base import held_out_fingerprint, split_held_out, torch_threads
from ensemble_deid.taggers.prediction import DocumentPrediction


class CharCnnTagger(Tagger):
    """Character CNN + token BiLSTM + softmax.

    Parameters:
        epochs: ceiling on the epochs; patience: epochs without a better held-out F1 before stopping (0: never),
            counted once the held-out F1 is above 0.
        validation_fraction: share of the training patients held out for early stopping (0: none, keep the last epoch).
        batch_size, lr: chunks per Adam step and its learning rate.
        char_dim, channels, layers, width: character embedding size, convolution channels, dilated
            layers (dilations 1, 2, 4, ...) and kernel width.
        token_dim: the token BiLSTM's size per direction; dropout: on embeddings, convolutions and tokens.
        max_chars: longest chunk of a note (whole tokens) read at once.
        num_threads: torch CPU threads (None: leave torch's setting); not part of the cache key.
        device: "auto" (the GPU when torch sees one, else the CPU), "cpu", "cuda", "cuda:N"; where the model
            runs, not which model: not part of the cache key (the parts made on the CPU before it existed
            keep theirs). The weights are kept on the CPU, so a model fitted on a GPU predicts on a CPU-only
            machine with "auto" or "cpu".
    """

    name = "char-cnn"
    _fitted_caches = ("_model", "_model_device")
    version = "2"  # 2: the softmax also reads the token's character features (version 1 predicted only O)
    requires = ("torch",)
    description = "character-level tagger: dilated character CNN, token BiLSTM, softmax (no word features)"

    _parameter_constraints = {
        "epochs": [Interval(int, 1, MAX_COUNT)], "patience": [Interval(int, 0, MAX_COUNT)],
        "validation_fraction": [Interval(float, 0, 1, closed="left")],
        "batch_size": [Interval(int, 1, MAX_COUNT)], "lr": [Interval(float, 0, MAX_RATE, closed="right")],
        "char_dim": [Interval(int, 1, MAX_SIZE)], "channels": [Interval(int, 1, MAX_SIZE)],
        "layers": [Interval(int, 1, 12)], "width": [Interval(int, 1, 31)], "token_dim": [Interval(int, 1, MAX_SIZE)],
        "dropout": [Interval(float, 0, 1, closed="left")], "max_chars": [Interval(int, 16, MAX_COUNT)],
        "num_threads": [None, THREADS], "device": [DEVICE],
    }
    machine_params = ("num_threads", "device")

    def __init__(self, epochs: int = 20, patience: int = 3, validation_fraction: float = 0.1, batch_size: int = 16,
                 lr: float = 0.003, char_dim: int = 24, channels: int = 64, layers: int = 3, width: int = 5,
                 token_dim: int = 48, dropout: float = 0.2, max_chars: int = 1500, num_threads: int | None = 1,
                 random_state: int = 0, device: str = "auto"):
        self._store_params(locals())

    def _check_params(self) -> None:
        if self.width % 2 == 0:
            raise ValueError(f"{self.name}: width must be odd (a centred kernel), got {self.width}")
        if self.random_state is None:
            raise ValueError(f"{self.name}: random_state must be an integer seed")

    def hashed_params(self) -> dict[str, Any]:
        return {k: v for k, v in super().hashed_params().items() if k not in ("num_threads", "device")}

    def _network(self, n_chars: int, n_tags: int):
        from ensemble_deid.taggers.neural.chars import CharNet

        return CharNet(n_chars, n_tags, self.char_dim, self.channels, self.layers, self.width, self.token_dim,
                       self.dropout)

    def fit(self, documents: Sequence[Document]) -> "CharCnnTagger":
        self.check_available()
        self.validate_params()
        documents = list(documents)
        if not any(len(d.tokens) for d in documents):
            raise ValueError(f"{self.name}: no training tokens (got {len(documents)} documents)")
        from ensemble_deid.taggers.neural.chars import chunk_documents, train_char_model
        from ensemble_deid.taggers.neural.training import forked_rng, seed_everything, select_device

        self._clear_fitted()
        train_docs, held_docs = split_held_out(documents, self.validation_fraction, self.random_state)
        labels = sorted({a.label for d in documents for a in d.annotations})
        tags = [OUTSIDE] + [f"{p}-{label}" for label in labels for p in ("B", "I")]
        chars = sorted({c for d in train_docs for c in d.text})  # held-out notes' characters stay unknown
        char_index = {c: i + 2 for i, c in enumerate(chars)}
        tag_index = {t: i for i, t in enumerate(tags)}
        train = chunk_documents(train_docs, char_index, self.max_chars, tag_index)
        held = chunk_documents(held_docs, char_index, self.max_chars)
        device = select_device(self.device)
        with torch_threads(self.num_threads), forked_rng(device):
            seed_everything(self.random_state)
            model = self._network(len(chars) + 2, len(tags))  # made on the CPU: the same weights on any device
            info = train_char_model(model, train, held, held_docs, tags, self.epochs, self.patience,
                                    self.batch_size, self.lr, self.random_state, device)
        self.history_ = info.pop("history")
        self.train_info_ = {**info, "train_documents": len(train_docs), "held_out_documents": len(held_docs),
                            "held_out_fingerprint": held_out_fingerprint(held_docs), "device": str(device)}
        self.chars_ = tuple(chars)
        self.tags_ = tuple(tags)
        self.state_ = {k: v.detach().cpu().numpy().copy() for k, v in model.state_dict().items()}
        self._model, self._model_device = model.eval(), device
        return self

    def training_choices(self) -> dict[str, Any]:
        info = dict(getattr(self, "train_info_", None) or {})
        info.pop("seconds", None)
        info.pop("device", None)  # where it ran, not what it chose (as the BiLSTM members')
        return info

    def _get_model(self):
        """The network on ``device``, built from the saved CPU weights on first use."""
        import torch

        from ensemble_deid.taggers.neural.training import select_device

        device = select_device(self.device)
        model = self.__dict__.get("_model")
        if model is None:
            model = self._network(len(self.chars_) + 2, len(self.tags_))
            model.load_state_dict({k: torch.from_numpy(np.asarray(v)) for k, v in self.state_.items()})
            self.__dict__["_model"] = model.eval()
            self.__dict__["_model_device"] = torch.device("cpu")
        if self.__dict__.get("_model_device") != device:
            model.to(device)
            self.__dict__["_model_device"] = device
        return model, device

    def __getstate__(self):
        state = dict(self.__dict__)
        state.pop("_model", None)
        state.pop("_model_device", None)
        return state

    def predict(self, documents: Sequence[Document]) -> list[DocumentPrediction]:
        self.check_fitted()
        self.validate_params()
        documents = list(documents)
        from ensemble_deid.taggers.neural.chars import chunk_documents, predict_chunks

        char_index = {c: i + 2 for i, c in enumerate(self.chars_)}
        chunks = chunk_documents(documents, char_index, self.max_chars)
        with torch_threads(self.num_threads):
            model, device = self._get_model()
            results = predict_chunks(model, chunks, documents, self.batch_size, device)
        return [DocumentPrediction(doc.id, tuple(self.tags_[i] for i in ids), np.clip(conf, 0.0, 1.0))
                for doc, (ids, conf) in zip(documents, results)]
