"""Fine-tuning a local Hugging Face checkpoint for token classification.

Offline by construction: ``HF_HUB_OFFLINE``/``TRANSFORMERS_OFFLINE`` are set
before ``transformers`` is imported and every load passes
``local_files_only=True`` and ``trust_remote_code=False``; a checkpoint's
weights are read from safetensors only (never a pickle). A fitted model is
kept as three byte strings, the same three files a checkpoint folder holds:
``config.json``, ``tokenizer.json`` (the fast tokenizer) and
``model.safetensors``; rebuilding it from them runs no code from the files.

Word logits: the model scores every piece; a word's scores are those of its
first piece (``pooling="first"``) or the mean over its pieces
(``pooling="mean"``; the head is linear, so this is the head applied to the
mean of the pieces' hidden states). Decoding picks the best valid BIO path
through the words' log-probabilities (``I-X`` only after ``B-X``/``I-X``:
the repair of stray ``I-`` tags), and each word's confidence is the softmax
probability of its tag.
"""
from __future__ import annotations

import os

os.environ["HF_HUB_OFFLINE"] = "1"  # this module never downloads
os.environ["TRANSFORMERS_OFFLINE"] = "1"

import contextlib
import copy
import logging
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np
import torch

from ...corpus.document import Document
from .network import FORBIDDEN, bio_constraints, viterbi
from .training import bucket_batches, f1_score, strict_counts
from .windows import Specials, Window, document_windows, pad_windows, word_pieces

log = logging.getLogger("ensemble_deid.taggers.neural")

class CheckpointError(ValueError):
    """A ``model_path`` that is not a usable local checkpoint."""


@contextlib.contextmanager
def _quiet_transformers():
    """No load reports or progress bars from transformers (they go to the terminal)."""
    from transformers.utils import logging as hf_logging

    level = hf_logging.get_verbosity()
    bars = hf_logging.is_progress_bar_enabled()
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        hf_logging.set_verbosity(level)
        if bars:
            hf_logging.enable_progress_bar()


@dataclass
class Checkpoint:
    """A model's three files as bytes, plus what the windows need."""

    config: dict
    tokenizer_json: str
    weights: bytes | None  # safetensors; None: the folder's own (read at fit)
    specials: Specials


def read_checkpoint(folder: Path) -> Checkpoint:
    """Config and tokenizer of a local folder (checked by the adapter first;
    the weights are read by ``build_model``)."""
    model_path = folder
    from transformers import AutoConfig, AutoTokenizer

    try:
        with _quiet_transformers():
            config = AutoConfig.from_pretrained(folder, local_files_only=True, trust_remote_code=False)
            tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True, trust_remote_code=False)
    except (OSError, ValueError, KeyError) as exc:
        raise CheckpointError(f"model_path={model_path}: cannot load config or tokenizer ({type(exc).__name__}: "
                              f"{str(exc).splitlines()[0][:200]})") from None
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None:
        raise CheckpointError(f"model_path={model_path}: the tokenizer has no fast (tokenizers) version")
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    unk = tokenizer.unk_token_id if tokenizer.unk_token_id is not None else pad
    specials = _specials(backend, pad, unk)
    return Checkpoint(config.to_dict(), backend.to_str(), None, specials)


def _specials(backend, pad: int, unk: int) -> Specials:
    """The special pieces the tokenizer's post-processor puts before and after one word."""
    enc = backend.encode(["a"], is_pretokenized=True, add_special_tokens=True)
    words = [w is not None for w in enc.word_ids]
    first = words.index(True) if any(words) else len(words)
    last = len(words) - words[::-1].index(True) if any(words) else len(words)
    return Specials(tuple(enc.ids[:first]), tuple(enc.ids[last:]), int(pad), int(unk))


def load_tokenizer(tokenizer_json: str):
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_str(tokenizer_json)
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return tokenizer


def build_model(checkpoint: Checkpoint, tags: Sequence[str], folder: Path | None = None):
    """A token-classification model with ``len(tags)`` outputs: from the
    folder's weights at fit (a new head), else from ``checkpoint.weights``."""
    from transformers import AutoConfig, AutoModelForTokenClassification

    labels = {"id2label": dict(enumerate(tags)), "label2id": {t: i for i, t in enumerate(tags)}}
    with _quiet_transformers():
        if folder is not None:
            config = AutoConfig.from_pretrained(folder, local_files_only=True, trust_remote_code=False,
                                                num_labels=len(tags), **labels)
            try:
                return AutoModelForTokenClassification.from_pretrained(
                    folder, config=config, local_files_only=True, trust_remote_code=False,
                    use_safetensors=True, ignore_mismatched_sizes=True,
                )
            except (OSError, ValueError) as exc:
                raise CheckpointError(f"model_path={folder}: cannot load the weights (model.safetensors is "
                                      f"required; {type(exc).__name__})") from None
        # Saved state: the config's model type picks a built-in class; no remote code.
        settings = {k: v for k, v in checkpoint.config.items() if k not in ("auto_map", "model_type")}
        config = AutoConfig.for_model(checkpoint.config["model_type"], **settings)
        model = AutoModelForTokenClassification.from_config(config, trust_remote_code=False)
    from safetensors.torch import load as load_safetensors

    model.load_state_dict(load_safetensors(checkpoint.weights), strict=True)
    return model


def weights_bytes(model) -> bytes:
    from safetensors.torch import save as save_safetensors

    # Cloned: safetensors refuses tensors that share memory (tied embeddings).
    return save_safetensors({k: v.detach().cpu().contiguous().clone() for k, v in model.state_dict().items()})


# --- encoding ------------------------------------------------------------------------
def encode(docs: Sequence[Document], tokenizer, specials: Specials, max_length: int, stride: int,
           tag_index: dict[str, int] | None = None, gold=None) -> tuple[list[Window], list[np.ndarray] | None]:
    """Windows of every document, and with ``gold`` each document's tag ids."""
    windows: list[Window] = []
    labels = [] if gold is not None else None
    for d, doc in enumerate(docs):
        pieces = word_pieces(tokenizer, list(doc.tokens.words), specials.unk)
        windows.extend(document_windows(d, pieces, specials, max_length, stride))
        if labels is not None:
            labels.append(np.fromiter((tag_index.get(t, 0) for t in gold(doc)), dtype=np.int64, count=len(doc.tokens)))
    return windows, labels


# --- the model's word scores ---------------------------------------------------------------
def _autocast(device: torch.device, mixed_precision: bool):
    if device.type == "cuda" and mixed_precision:
        dtype = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
        return torch.autocast("cuda", dtype=dtype)
    return contextlib.nullcontext()


def word_logits(model, windows: Sequence[Window], specials: Specials, pooling: str, device, mixed_precision: bool):
    """(B * W, K) float32 scores of the batch's word slots, and W."""
    ids, attention, slots, W = pad_windows(windows, specials.pad, first_piece_only=pooling == "first")
    ids_t = torch.from_numpy(ids).to(device)
    att_t = torch.from_numpy(attention).to(device)
    with _autocast(device, mixed_precision):
        logits = model(input_ids=ids_t, attention_mask=att_t).logits
    logits = logits.float().reshape(-1, logits.shape[-1])
    flat = torch.from_numpy(slots.reshape(-1)).to(device)
    keep = flat >= 0
    n_slots = len(windows) * W
    sums = torch.zeros(n_slots, logits.shape[-1], device=device).index_add_(0, flat[keep], logits[keep])
    counts = torch.zeros(n_slots, device=device).index_add_(0, flat[keep], torch.ones_like(flat[keep], dtype=torch.float))
    return sums / counts.clamp_min(1.0).unsqueeze(1), W


def predict_probabilities(model, windows: Sequence[Window], lengths: Sequence[int], specials: Specials, pooling: str,
                          device, mixed_precision: bool, batch_pieces: int = 8192) -> list[np.ndarray]:
    """Per document, (n_words, K) softmax probabilities, each word's from its owning window."""
    model.eval()
    K = model.config.num_labels
    out = [np.zeros((n, K), dtype=np.float32) for n in lengths]
    order = np.argsort([len(w.ids) for w in windows], kind="stable")
    batches, current, longest = [], [], 0
    for i in order:  # batches bounded by padded pieces
        n = len(windows[i].ids)
        if current and max(longest, n) * (len(current) + 1) > batch_pieces:
            batches.append(current)
            current, longest = [], 0
        current.append(int(i))
        longest = max(longest, n)
    if current:
        batches.append(current)
    with torch.inference_mode():
        for idx in batches:
            batch = [windows[i] for i in idx]
            scores, W = word_logits(model, batch, specials, pooling, device, mixed_precision)
            probs = torch.softmax(scores, dim=-1).cpu().numpy().reshape(len(batch), W, K)
            for j, w in enumerate(batch):
                n = w.last - w.first
                rows = np.flatnonzero(w.owned)
                out[w.doc][w.first + rows] = probs[j, :n][rows]
    return out


def decode_bio(probs: Sequence[np.ndarray], allowed: tuple[torch.Tensor, torch.Tensor]) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per document, the most probable valid BIO path through its word
    probabilities (all documents in one batched Viterbi), and the
    probability of each chosen tag."""
    lengths = [len(p) for p in probs]
    if not probs or max(lengths) == 0:
        return [(np.zeros(0, dtype=np.int64), np.zeros(0)) for _ in probs]
    start, trans = allowed
    K = start.shape[0]
    scores = np.zeros((len(probs), max(lengths), K), dtype=np.float32)
    mask = np.zeros(scores.shape[:2], dtype=bool)
    for i, p in enumerate(probs):
        scores[i, : len(p)] = np.log(np.clip(p, 1e-12, 1.0))
        mask[i, : len(p)] = True
    mask[:, 0] = True  # viterbi wants a first column; an empty note's row is ignored below
    ids = viterbi(torch.from_numpy(scores), torch.from_numpy(mask), start, trans, torch.zeros_like(start))
    out = []
    for i, (p, n) in enumerate(zip(probs, lengths)):
        chosen = ids[i, :n]
        out.append((chosen, p[np.arange(n), chosen].astype(np.float64)))
    return out


def allowed_moves(tags: Sequence[str]) -> tuple[torch.Tensor, torch.Tensor]:
    start, trans = bio_constraints(list(tags))
    return (torch.from_numpy(np.where(start, 0.0, FORBIDDEN)).float(),
            torch.from_numpy(np.where(trans, 0.0, FORBIDDEN)).float())


# --- training --------------------------------------------------------------------------------
@dataclass
class FineTuneConfig:
    epochs: int
    patience: int
    batch_size: int
    lr: float
    weight_decay: float
    warmup: float
    clip: float
    pooling: str
    mixed_precision: bool
    seed: int
    verbose: bool = False


@dataclass
class FineTuneResult:
    history: list[dict] = field(default_factory=list)
    best_epoch: int = 0
    best_held_out_f1: float | None = None
    stopped_early: bool = False
    seconds: float = 0.0


def fine_tune(model, windows: list[Window], labels: list[np.ndarray], held_out: list[Window],
              held_out_docs: Sequence[Document], tags: Sequence[str], specials: Specials,
              config: FineTuneConfig, device: torch.device) -> FineTuneResult:
    """AdamW with linear warm-up and decay; after every epoch the strict F1 on
    the held-out documents, keeping the best epoch's weights (early stopping
    after ``patience`` epochs without a better one). Without held-out
    documents every epoch runs and the last weights are kept."""
    from ...progress import progress_bar

    rng = np.random.default_rng(config.seed)
    model.to(device)
    decay = [p for n, p in model.named_parameters() if p.ndim > 1]
    no_decay = [p for n, p in model.named_parameters() if p.ndim <= 1]  # biases and norms
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": config.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}], lr=config.lr)
    steps_per_epoch = math.ceil(len(windows) / config.batch_size)
    total_steps = max(1, steps_per_epoch * config.epochs)
    warm = int(config.warmup * total_steps)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: (s + 1) / (warm + 1) if s < warm else max(0.0, (total_steps - s) / max(1, total_steps - warm)))
    scaler = torch.amp.GradScaler("cuda", enabled=device.type == "cuda" and config.mixed_precision
                                  and not torch.cuda.is_bf16_supported())
    allowed = allowed_moves(tags)
    held_lengths = [len(d.tokens) for d in held_out_docs]
    result = FineTuneResult()
    best_state, best_f1, bad = None, -1.0, 0
    started = time.perf_counter()
    bar = progress_bar(range(1, config.epochs + 1), desc="transformer", unit="epoch", disable=not config.verbose,
                       leave=False)
    for epoch in bar:
        model.train()
        t0, c0 = time.perf_counter(), time.process_time()
        total, n_words, n_pieces = 0.0, 0, 0
        for idx in bucket_batches([len(w.ids) for w in windows], config.batch_size, rng):
            batch = [windows[i] for i in idx]
            scores, W = word_logits(model, batch, specials, config.pooling, device, config.mixed_precision)
            target = np.full(len(batch) * W, -100, dtype=np.int64)  # -100: not this window's word
            for j, w in enumerate(batch):
                rows = np.flatnonzero(w.owned)
                target[j * W + rows] = labels[w.doc][w.first + rows]
            target_t = torch.from_numpy(target).to(device)
            loss = torch.nn.functional.cross_entropy(scores, target_t, ignore_index=-100, reduction="sum")
            counted = int((target >= 0).sum())
            opt.zero_grad(set_to_none=True)
            scaler.scale(loss / max(counted, 1)).backward()
            if config.clip > 0:
                scaler.unscale_(opt)
                torch.nn.utils.clip_grad_norm_(model.parameters(), config.clip)
            scaler.step(opt)
            scaler.update()
            schedule.step()
            total += float(loss.detach())
            n_words += counted
            n_pieces += sum(len(w.ids) for w in batch)
        seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
        if not math.isfinite(total):
            raise FloatingPointError(f"transformer: the loss diverged at epoch {epoch}; lower lr")
        held_f1 = None
        if held_out:
            probs = predict_probabilities(model, held_out, held_lengths, specials, config.pooling, device,
                                          config.mixed_precision)
            ids = [chosen for chosen, _ in decode_bio(probs, allowed)]
            held_f1 = f1_score(*strict_counts(held_out_docs, ids, tags))
        record = {"epoch": epoch, "loss": total / max(n_words, 1), "held_out_f1": held_f1,
                  "lr": opt.param_groups[0]["lr"], "seconds": seconds, "cpu_seconds": cpu,
                  "tokens_per_s": n_words / seconds if seconds else 0.0,
                  "pieces_per_s": n_pieces / seconds if seconds else 0.0}
        result.history.append(record)
        bar.set_postfix(loss=f"{record['loss']:.4f}", held_out_f1="-" if held_f1 is None else f"{held_f1:.4f}")
        log.info("transformer epoch %d: loss %.4f, held-out F1 %s, %.0f tokens/s", epoch, record["loss"],
                 "-" if held_f1 is None else f"{held_f1:.4f}", record["tokens_per_s"])
        if held_f1 is None:
            result.best_epoch = epoch
        elif held_f1 > best_f1:
            best_f1, bad, result.best_epoch = held_f1, 0, epoch
            best_state = copy.deepcopy({k: v.detach().cpu() for k, v in model.state_dict().items()})
        else:
            bad += 1
            if config.patience and bad >= config.patience:
                result.stopped_early = True
                break
    bar.close()
    if best_state is not None:
        model.load_state_dict(best_state)
        result.best_held_out_f1 = best_f1
    result.seconds = time.perf_counter() - started
    return result
