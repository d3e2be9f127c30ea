"""``transformer``: fine-tune a local Hugging Face checkpoint as a base tagger.

    ensemble-deid cv --corpus meddocan --taggers 'transformer:model_path=/models/roberta-bio-es'

``model_path`` is a local folder (``config.json``, a fast tokenizer,
``model.safetensors``); nothing is downloaded (offline flags are set, every
load is ``local_files_only``, no remote code). A token-classification head
for this run's labels is put on the model and the whole model is fine-tuned:
sub-word pieces aligned to the common tokens (``pooling``: first piece or
mean), notes in overlapping windows of ``max_length`` pieces started every
``stride`` pieces, a valid BIO path decoded from the softmax, confidences
the softmax probability of each tag. The number of epochs is chosen by early
stopping on ``validation_fraction`` of the training notes (whole patients),
as the other neural members can; never on a dev set. GPU when torch sees
one (``device="auto"``), mixed precision there; the CPU otherwise.

Saved (bundles) with the project's no-pickle state format: the weights as
``model.safetensors``, the config as ``config.json``, the tokenizer as
``tokenizer.json``, beside ``state.json``. See docs/neural-taggers.md.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Sequence

from ensemble_deid.corpus.bio import OUTSIDE, gold_tags
from ensemble_deid.corpus.document import Document
from ensemble_deid.taggers.base import Tagger
from ensemble_deid.taggers.constraints import (
    DEVICE, MAX_COUNT, MAX_NORM, MAX_PENALTY, MAX_RATE, MAX_SIZE, THREADS, Interval, Options,
)
from ensemble_deid.taggers.external.base import requirements_available
from ensemble_deid.taggers.neural.base import split_held_out, torch_threads
from ensemble_deid.taggers.prediction import DocumentPrediction
from ensemble_deid.taggers.state import NamedBlob

POOLINGS = ("first", "mean")
CHECKPOINT_HINT = "a local folder with config.json, a fast tokenizer and model.safetensors; nothing is downloaded"
_NOT_HASHED = ("verbose", "num_threads")


def model_folder(model_path: str | None) -> Path:
    """The checkpoint folder, or a ValueError naming ``model_path`` (before anything loads)."""
    if not model_path:
        raise ValueError(f"model_path is required: {CHECKPOINT_HINT}")
    folder = Path(model_path).expanduser()
    if not folder.is_dir():
        raise ValueError(f"model_path={model_path}: not a folder ({CHECKPOINT_HINT})")
    if not (folder / "config.json").is_file():
        raise ValueError(f"model_path={model_path}: no config.json ({CHECKPOINT_HINT})")
    return folder


def folder_digest(folder: Path) -> str:
    """SHA-256 over the names and contents of a checkpoint folder's files,
    memoised by their sizes and modification times (a large model is read once)."""
    files = sorted(p for p in folder.rglob("*") if p.is_file() and not p.name.startswith("."))
    key = (str(folder.resolve()), tuple((str(p), p.stat().st_size, p.stat().st_mtime_ns) for p in files))
    if key not in _DIGESTS:
        h = hashlib.sha256()
        for p in files:
            h.update(str(p.relative_to(folder)).encode() + b"\0")
            with open(p, "rb") as fh:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    h.update(block)
        _DIGESTS[key] = h.hexdigest()[:16]
    return _DIGESTS[key]


_DIGESTS: dict[tuple, str] = {}


class TransformerTagger(Tagger):
    """Parameters:
      model_path: the local checkpoint folder (required to fit);
      epochs: ceiling of the epochs (early stopping usually ends sooner);
      patience: epochs without a better held-out F1 before stopping (0: never);
      validation_fraction: share of the training notes (whole patient groups)
        held out to choose the epoch (0: none, every epoch on every note);
      batch_size: windows per step; lr, weight_decay: AdamW's; warmup: share of
        the steps with a linearly rising rate (then linear decay to 0);
      clip: gradient norm clipping (0: none);
      max_length: pieces per window, special tokens included (at most the
        model's positions); stride: pieces from one window's start to the next;
      pooling: "first" (the word's first piece) or "mean" (over its pieces);
      mixed_precision: bf16 (or fp16 with loss scaling) autocast on a GPU;
      device: "auto" (a GPU when torch sees one), "cpu", "cuda", "cuda:N", "mps";
      random_state: seeds the new head, dropout, batch order and held-out split;
      num_threads: torch CPU threads (None: torch's setting); verbose: a tqdm bar.
    """

    name = "transformer"
    _fitted_caches = ("_live",)
    fit_only_params = ("model_path",)  # read when fitting only; never named by a saved tagger or bundle
    machine_params = ("device", "num_threads")
    version = "1"
    requires = ("torch", "transformers", "tokenizers", "safetensors")
    description = "fine-tuned local Hugging Face checkpoint (model_path=DIR; sub-word windows, BIO decoding)"
    _parameter_constraints = {
        "model_path": [None, str], "epochs": [Interval(int, 1, MAX_COUNT)], "patience": [Interval(int, 0, MAX_COUNT)],
        "validation_fraction": [Interval(float, 0, 1, closed="left")], "batch_size": [Interval(int, 1, MAX_COUNT)],
        "lr": [Interval(float, 0, MAX_RATE, closed="right")], "weight_decay": [Interval(float, 0, MAX_PENALTY)],
        "warmup": [Interval(float, 0, 1, closed="left")], "clip": [Interval(float, 0, MAX_NORM)],
        "max_length": [Interval(int, 24, MAX_SIZE)], "stride": [Interval(int, 1, MAX_COUNT)],
        "pooling": [Options(*POOLINGS)], "mixed_precision": [bool], "device": [DEVICE],
        "num_threads": [None, THREADS], "verbose": [bool],
    }

    def __init__(self, model_path=None, epochs=10, patience=2, validation_fraction=0.1, batch_size=8, lr=5e-5,
                 weight_decay=0.01, warmup=0.1, clip=1.0, max_length=256, stride=128, pooling="first",
                 mixed_precision=True, device="auto", random_state=0, num_threads=None, verbose=False):
        self._store_params(locals())

    @classmethod
    def availability(cls) -> tuple[bool, str]:
        return requirements_available(cls, extra="transformer")

    # --- parameters -------------------------------------------------------------------
    def _check_params(self) -> None:
        if self.stride >= self.max_length:
            raise ValueError(f"stride={self.stride} must be below max_length={self.max_length}")
        if self.model_path is not None:
            model_folder(self.model_path)

    def hashed_params(self) -> dict[str, Any]:
        """The checkpoint's content, not its path, enters the cache key: a
        model retrained in place is a new model; a moved one is the same."""
        params = {k: v for k, v in super().hashed_params().items() if k not in _NOT_HASHED}
        digest = self.__dict__.get("checkpoint_digest_")
        if digest is None and self.model_path is not None and Path(self.model_path).expanduser().is_dir():
            digest = folder_digest(Path(self.model_path).expanduser())
        if digest is not None:
            params["model_path"] = digest
        return params

    # --- learning ---------------------------------------------------------------------
    def fit(self, documents: Sequence[Document]) -> "TransformerTagger":
        self.check_available()
        self.validate_params()
        documents = list(documents)
        if not documents:
            raise ValueError(f"{self.name}: no training documents")
        from ensemble_deid.taggers.neural import transformer as tf

        folder = model_folder(self.model_path)
        checkpoint = tf.read_checkpoint(folder)
        positions = checkpoint.config.get("max_position_embeddings")
        if isinstance(positions, int) and self.max_length > positions:
            raise tf.CheckpointError(f"max_length={self.max_length} exceeds the model's {positions} positions "
                                     f"(model_path={self.model_path})")
        if self.stride > self.max_length - len(checkpoint.specials):
            raise ValueError(f"{self.name}: stride={self.stride} exceeds the window's room for pieces "
                             f"(max_length minus {len(checkpoint.specials)} special tokens)")
        self._clear_fitted()
        digest = folder_digest(folder)
        train_docs, held_docs = split_held_out(documents, float(self.validation_fraction), int(self.random_state or 0))
        labels = sorted({a.label for d in documents for a in d.annotations})
        tags = [OUTSIDE] + [f"{p}-{label}" for label in labels for p in ("B", "I")]
        device = self._device()
        import torch

        tokenizer = tf.load_tokenizer(checkpoint.tokenizer_json)
        from ensemble_deid.taggers.neural.training import forked_rng

        with torch_threads(self.num_threads), forked_rng(device):
            torch.manual_seed(int(self.random_state or 0))
            if device.type == "cuda":
                torch.cuda.manual_seed_all(int(self.random_state or 0))
            model = tf.build_model(checkpoint, tags, folder)
            index = {t: i for i, t in enumerate(tags)}
            windows, gold = tf.encode(train_docs, tokenizer, checkpoint.specials, self.max_length, self.stride,
                                      index, gold_tags)
            held, _ = tf.encode(held_docs, tokenizer, checkpoint.specials, self.max_length, self.stride)
            config = tf.FineTuneConfig(
                epochs=int(self.epochs), patience=int(self.patience), batch_size=int(self.batch_size),
                lr=float(self.lr), weight_decay=float(self.weight_decay), warmup=float(self.warmup),
                clip=float(self.clip), pooling=self.pooling, mixed_precision=bool(self.mixed_precision),
                seed=int(self.random_state or 0), verbose=bool(self.verbose),
            )
            result = tf.fine_tune(model, windows, gold, held, held_docs, tags, checkpoint.specials, config, device)
        model.eval()
        config_dict = model.config.to_dict()
        config_dict.pop("auto_map", None)
        self.tags_ = tags
        self.model_config_ = config_dict
        self.tokenizer_json_ = checkpoint.tokenizer_json
        self.specials_ = {"prefix": list(checkpoint.specials.prefix), "suffix": list(checkpoint.specials.suffix),
                          "pad": checkpoint.specials.pad, "unk": checkpoint.specials.unk}
        self.weights_ = tf.weights_bytes(model)
        self.checkpoint_digest_ = digest
        self.history_ = result.history
        self.train_info_ = {
            "epochs_run": len(result.history), "best_epoch": result.best_epoch,
            "best_held_out_f1": result.best_held_out_f1, "stopped_early": result.stopped_early,
            "seconds": result.seconds, "train_documents": len(train_docs), "held_out_documents": len(held_docs),
            "train_tokens": sum(len(d.tokens) for d in train_docs), "train_windows": len(windows),
            "device": str(device),
        }
        self._live = (model.to("cpu") if device.type != "cpu" else model, tokenizer)
        return self

    def _device(self):
        from ensemble_deid.taggers.neural.training import select_device

        return select_device(self.device)

    # --- inference ---------------------------------------------------------------------
    def _model(self):
        """The live model and tokenizer (rebuilt from the fitted state on first use)."""
        live = self.__dict__.get("_live")
        if live is None:
            from ensemble_deid.taggers.neural import transformer as tf

            model = tf.build_model(self._checkpoint(), self.tags_)
            live = self._live = (model.eval(), tf.load_tokenizer(self.tokenizer_json_))
        return live

    def _checkpoint(self):
        from ensemble_deid.taggers.neural.transformer import Checkpoint
        from ensemble_deid.taggers.neural.windows import Specials

        s = self.specials_
        specials = Specials(tuple(s["prefix"]), tuple(s["suffix"]), int(s["pad"]), int(s["unk"]))
        return Checkpoint(self.model_config_, self.tokenizer_json_, self.weights_, specials)

    def predict_marginals(self, documents: Sequence[Document]) -> list:
        """Per document, (n_tokens, len(tags_)) softmax probabilities (rows sum to 1)."""
        self.check_fitted()
        from ensemble_deid.taggers.neural import transformer as tf

        documents = list(documents)
        checkpoint = self._checkpoint()
        device = self._device()
        with torch_threads(self.num_threads):
            model, tokenizer = self._model()
            model.to(device)
            try:
                windows, _ = tf.encode(documents, tokenizer, checkpoint.specials, self.max_length, self.stride)
                return tf.predict_probabilities(model, windows, [len(d.tokens) for d in documents],
                                                checkpoint.specials, self.pooling, device, bool(self.mixed_precision))
            finally:
                model.to("cpu")

    def predict(self, documents: Sequence[Document]) -> list[DocumentPrediction]:
        """The best valid BIO path per note; confidence: each tag's softmax probability."""
        from ensemble_deid.taggers.neural.transformer import allowed_moves, decode_bio

        documents = list(documents)
        allowed = allowed_moves(self.tags_) if self.is_fitted() else None
        out = []
        marginals = self.predict_marginals(documents)
        with torch_threads(self.num_threads or 1):  # (notes x tags) steps: more threads only cost
            decoded = decode_bio(marginals, allowed)
        for doc, (ids, conf) in zip(documents, decoded):
            out.append(DocumentPrediction(doc.id, tuple(self.tags_[i] for i in ids), conf.clip(0.0, 1.0)))
        return out

    # --- persistence: no pickle, the weights as safetensors -----------------------------------
    def __getstate__(self):
        state = dict(self.__dict__)
        state.pop("_live", None)  # rebuilt from the weights on first use
        return state

    def _fitted_state(self) -> dict[str, Any]:
        state = super()._fitted_state()
        state["weights_"] = NamedBlob(self.weights_, "model.safetensors")
        state["model_config_"] = NamedBlob(json.dumps(self.model_config_, sort_keys=True).encode(), "config.json")
        state["tokenizer_json_"] = NamedBlob(self.tokenizer_json_.encode("utf-8"), "tokenizer.json")
        return state

    def _restore_state(self, state: dict[str, Any]) -> None:
        from ensemble_deid.taggers.state import StateError

        super()._restore_state(state)
        try:
            self.model_config_ = json.loads(self.model_config_)
            self.tokenizer_json_ = bytes(self.tokenizer_json_).decode("utf-8")
            self.weights_ = bytes(self.weights_)
        except (TypeError, ValueError, UnicodeDecodeError) as exc:
            raise StateError(f"transformer: saved config or tokenizer is not valid JSON ({type(exc).__name__})") from None
        if not isinstance(self.model_config_, dict) or not isinstance(self.model_config_.get("model_type"), str):
            raise StateError("transformer: saved config.json has no model_type")
