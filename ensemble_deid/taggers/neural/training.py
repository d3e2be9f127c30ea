"""Encoding documents into sequences, length-bucketed batches, the training
loop (clipping, early stopping on held-out documents, seeds, device choice,
progress) and batched inference.
"""
from __future__ import annotations

import copy
import logging
import math
import time
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np
import torch

from ...corpus.bio import decode
from ...corpus.document import Document
from .network import Batch, BiLSTMTagger
from .vocab import PAD_ID, UNK_ID, Vocab, casing, normalize_word, shape_ids, starts_line

log = logging.getLogger("ensemble_deid.taggers.neural")

MAX_WORD_CHARS = 40  # longer tokens keep their first 20 and last 20 characters


# --- devices and seeds ---------------------------------------------------------------------
def select_device(device: str = "auto") -> torch.device:
    """``auto``: the GPU when torch sees one, else the CPU."""
    if device in (None, "auto"):
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dev = torch.device(device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device {device!r} requested but torch sees no CUDA device")
    return dev


def forked_rng(device: torch.device):
    """``torch.random.fork_rng`` over the CPU's generator and, when training
    on a GPU, that GPU's: seeding inside leaves the caller's generators as they were."""
    cuda = [device.index if device.index is not None else torch.cuda.current_device()] if device.type == "cuda" else []
    return torch.random.fork_rng(devices=cuda)


def seed_everything(seed: int) -> None:
    """Seed torch's global generators (the caller forks them first)."""
    torch.manual_seed(seed)
    if torch.cuda.is_available():
        torch.cuda.manual_seed_all(seed)


# --- encoding ------------------------------------------------------------------------------
@dataclass
class Segment:
    """One unit of training/inference: a sentence or a whole document."""

    doc: int  # index of the document in its list
    start: int  # index of its first token in the document
    words: np.ndarray  # word ids
    types: np.ndarray  # ids into EncodedData.type_chars
    shapes: np.ndarray
    tags: np.ndarray | None = None
    features: np.ndarray | None = None  # (n, F) float32
    feature_ids: np.ndarray | None = None  # (n, M) int32 buckets of hashed feature strings, 0-padded

    def __len__(self) -> int:
        return len(self.words)


@dataclass
class EncodedData:
    sequences: list[Segment]
    type_chars: list[np.ndarray]  # character ids of each distinct raw word
    n_tokens: int = 0


def char_ids(word: str, chars: Vocab) -> np.ndarray:
    if len(word) > MAX_WORD_CHARS:
        half = MAX_WORD_CHARS // 2
        word = word[:half] + word[-half:]
    return chars.indices(word)


def encode_documents(
    docs: Sequence[Document],
    words: Vocab,
    chars: Vocab,
    context: str,
    tag_index: dict[str, int] | None = None,
    gold: Callable[[Document], list[str]] | None = None,
    features: Callable[[Document], np.ndarray] | None = None,
    max_length: int = 0,
    start_with_begin: bool = False,
    feature_ids: Callable[[Document], np.ndarray] | None = None,
) -> EncodedData:
    """Sequences per sentence (``context="sentence"``) or per document; with
    ``max_length``, a longer document is cut at line breaks (see ``line_chunks``)."""
    if context not in ("sentence", "document"):
        raise ValueError(f"context must be 'sentence' or 'document', not {context!r}")
    # Every distinct raw word of the call gets a type id (first occurrence
    # order); its word id, characters and casing are worked out once.
    type_of: dict[str, int] = {}
    doc_types = [
        np.fromiter((type_of.setdefault(w, len(type_of)) for w in doc.tokens.words), dtype=np.int64,
                    count=len(doc.tokens))
        for doc in docs
    ]
    type_chars = [char_ids(w, chars) for w in type_of]
    type_words = words.indices(normalize_word(w) for w in type_of)
    type_casings = np.fromiter((casing(w) for w in type_of), dtype=np.int64, count=len(type_of))
    sequences: list[Segment] = []
    n_tokens = 0
    # A sentence split inside a span would start its segment with I-X: a path
    # the BIO-constrained CRF scores -10000, so the gold path could never be
    # decoded (and its loss swamps the rest). With ``start_with_begin`` such a
    # segment starts with B-X. A softmax tagger keeps I-X: predicted there, it
    # rejoins the span across the split when the note's tags are decoded.
    begin_of = {}
    if tag_index is not None and start_with_begin:
        begin_of = {i: tag_index["B-" + t[2:]] for t, i in tag_index.items()
                    if t.startswith("I-") and "B-" + t[2:] in tag_index}
    for d, (doc, types) in enumerate(zip(docs, doc_types)):
        toks = doc.tokens
        n = len(toks)
        if n == 0:
            continue
        n_tokens += n
        word_ids = type_words[types]
        shapes = shape_ids(toks.words, toks.starts, toks.ends, doc.text, type_casings[types])
        tags = None
        if gold is not None and tag_index is not None:
            tags = np.fromiter((tag_index.get(t, 0) for t in gold(doc)), dtype=np.int64, count=n)
        feats = None
        if features is not None:
            feats = np.asarray(features(doc), dtype=np.float32)
            if feats.shape[0] != n:
                raise ValueError(f"document {doc.id!r}: {feats.shape[0]} feature rows for {n} tokens")
        ids = None
        if feature_ids is not None:
            ids = feature_ids(doc)
            if ids.shape[0] != n:
                raise ValueError(f"document {doc.id!r}: {ids.shape[0]} hashed feature rows for {n} tokens")
        if context == "sentence":
            ranges = toks.sentences()
        elif max_length and n > max_length:
            ranges = line_chunks(shapes, max_length)
        else:
            ranges = [(0, n)]
        for a, b in ranges:
            seg_tags = None
            if tags is not None:
                seg_tags = tags[a:b]
                if int(seg_tags[0]) in begin_of:
                    seg_tags = seg_tags.copy()
                    seg_tags[0] = begin_of[int(seg_tags[0])]
            sequences.append(Segment(
                d, a, word_ids[a:b], types[a:b], shapes[a:b], seg_tags,
                None if feats is None else feats[a:b], None if ids is None else ids[a:b],
            ))
    return EncodedData(sequences, type_chars, n_tokens)


def line_chunks(shapes: np.ndarray, max_length: int) -> list[tuple[int, int]]:
    """Consecutive lines of a note grouped into pieces of at most
    ``max_length`` tokens (a longer line stays whole). No annotation spans a
    line break in the corpora at hand (MEDDOCAN train: 0 of 11,333), while
    the sentence splitter cuts 1.5% of them."""
    line_starts = np.flatnonzero(starts_line(shapes)).tolist() + [len(shapes)]
    if line_starts[0] != 0:
        line_starts.insert(0, 0)
    chunks, start = [], 0
    for prev, cut in zip(line_starts, line_starts[1:]):
        if cut - start > max_length and prev > start:
            chunks.append((start, prev))
            start = prev
    chunks.append((start, len(shapes)))
    return chunks


def make_batch(
    data: EncodedData,
    indices: Sequence[int],
    with_tags: bool,
    unk_rng: np.random.Generator | None = None,
    singletons: np.ndarray | None = None,
    unk_prob: float = 0.0,
) -> Batch:
    """Tensors for the sequences ``indices``; during training, words seen once
    are replaced by the unknown word with probability ``unk_prob`` [LAMPLE16]."""
    seqs = [data.sequences[i] for i in indices]
    B = len(seqs)
    lengths = np.fromiter((len(s) for s in seqs), dtype=np.int64, count=B)
    T = int(lengths.max())
    words = np.full((B, T), PAD_ID, dtype=np.int64)
    shapes = np.zeros((B, T), dtype=np.int64)
    types = np.zeros((B, T), dtype=np.int64)
    mask = np.zeros((B, T), dtype=bool)
    tags = np.zeros((B, T), dtype=np.int64) if with_tags else None
    feats = None
    if seqs[0].features is not None:
        feats = np.zeros((B, T, seqs[0].features.shape[1]), dtype=np.float32)
    ids = None
    if seqs[0].feature_ids is not None:
        ids = np.zeros((B, T, max(s.feature_ids.shape[1] for s in seqs)), dtype=np.int64)
    for i, s in enumerate(seqs):
        n = len(s)
        words[i, :n] = s.words
        shapes[i, :n] = s.shapes
        types[i, :n] = s.types
        mask[i, :n] = True
        if with_tags:
            tags[i, :n] = s.tags
        if feats is not None:
            feats[i, :n] = s.features
        if ids is not None:
            ids[i, :n, : s.feature_ids.shape[1]] = s.feature_ids
    if unk_prob > 0 and unk_rng is not None and singletons is not None:
        drop = singletons[words] & (unk_rng.random(words.shape) < unk_prob)
        words[drop] = UNK_ID
    # Characters once per distinct raw word of the batch.
    unique, inverse = np.unique(types[mask], return_inverse=True)
    type_index = np.zeros((B, T), dtype=np.int64)
    type_index[mask] = inverse
    char_seqs = [data.type_chars[t] for t in unique]
    char_lengths = np.fromiter((max(len(c), 1) for c in char_seqs), dtype=np.int64, count=len(char_seqs))
    chars = np.zeros((len(char_seqs), int(char_lengths.max())), dtype=np.int64)
    for j, c in enumerate(char_seqs):
        chars[j, : len(c)] = c
    return Batch(
        torch.from_numpy(words), torch.from_numpy(shapes), torch.from_numpy(type_index),
        torch.from_numpy(chars), torch.from_numpy(char_lengths), torch.from_numpy(lengths),
        torch.from_numpy(mask), None if tags is None else torch.from_numpy(tags),
        None if feats is None else torch.from_numpy(feats), None if ids is None else torch.from_numpy(ids),
    )


def bucket_batches(lengths: Sequence[int], batch_size: int, rng: np.random.Generator | None) -> list[np.ndarray]:
    """Sequences sorted by length (random order among equal lengths) and cut
    into batches of ``batch_size``: little padding. With ``rng`` the batch
    order is shuffled (training); without, it is by length (inference)."""
    lengths = np.asarray(lengths)
    if rng is not None:
        noise = rng.random(len(lengths))
        order = np.lexsort((noise, lengths))
    else:
        order = np.argsort(lengths, kind="stable")
    batches = [order[i : i + batch_size] for i in range(0, len(order), batch_size)]
    if rng is not None:
        rng.shuffle(batches)
    return batches


# --- inference -------------------------------------------------------------------------------
def predict_encoded(
    model: BiLSTMTagger,
    data: EncodedData,
    n_docs: int,
    doc_lengths: Sequence[int],
    device: torch.device,
    marginals: bool = True,
    max_batch_tokens: int = 8192,
) -> tuple[list[np.ndarray], list[np.ndarray] | None]:
    """Tag ids and marginals per document (in document order)."""
    model.eval()
    tag_out = [np.zeros(n, dtype=np.int64) for n in doc_lengths]
    prob_out = [np.zeros((n, model.n_tags), dtype=np.float32) for n in doc_lengths] if marginals else None
    order = np.argsort([len(s) for s in data.sequences], kind="stable")
    # Batches bounded by padded tokens: many short sentences, few long ones.
    batches, current, longest = [], [], 0
    for i in order:
        n = len(data.sequences[i])
        if current and max(longest, n) * (len(current) + 1) > max_batch_tokens:
            batches.append(current)
            current, longest = [], 0
        current.append(i)
        longest = max(longest, n)
    if current:
        batches.append(current)
    for idx in batches:
        batch = make_batch(data, idx, with_tags=False).to(device)
        tags, probs = model.predict(batch, marginals=marginals)
        for j, i in enumerate(idx):
            s = data.sequences[i]
            tag_out[s.doc][s.start : s.start + len(s)] = tags[j]
            if marginals:
                prob_out[s.doc][s.start : s.start + len(s)] = probs[j]
    return tag_out, prob_out


def strict_counts(docs: Sequence[Document], tag_ids: Sequence[np.ndarray], tags: Sequence[str]) -> tuple[int, int, int]:
    """(true positives, system spans, gold spans): exact (category, start,
    end, type) matches, pooled over documents."""
    tp = n_sys = n_gold = 0
    for doc, ids in zip(docs, tag_ids):
        gold = {a.key for a in doc.annotations}
        system = {a.key for a in decode(doc.tokens, [tags[i] for i in ids])}
        tp += len(gold & system)
        n_sys += len(system)
        n_gold += len(gold)
    return tp, n_sys, n_gold


def f1_score(tp: int, n_sys: int, n_gold: int) -> float:
    return 2 * tp / (n_sys + n_gold) if n_sys + n_gold else 0.0


# --- training ---------------------------------------------------------------------------------
@dataclass
class TrainConfig:
    epochs: int
    patience: int
    batch_size: int
    lr: float
    optimizer: str
    clip: float
    lr_decay: float
    unk_prob: float
    seed: int
    anneal: float = 1.0
    anneal_patience: int = 2
    ema_decay: float = 0.0  # decay of the weights' moving average (0: none)
    linear_decay: float = 0.0  # decoupled weight decay of the hashed linear weights, per unit of lr
    lr_schedule: Sequence[float] | None = None  # the rate of every epoch (replaces lr, decay, annealing)
    verbose: bool = False
    name: str = "neural"


@dataclass
class EpochRecord:
    epoch: int
    loss: float  # mean per token
    dev_f1: float | None
    lr: float
    seconds: float
    tokens_per_s: float
    cpu_seconds: float = 0.0  # this process's CPU time (all threads): steadier on a shared machine


@dataclass
class TrainResult:
    history: list[EpochRecord] = field(default_factory=list)
    best_epoch: int = 0
    best_dev_f1: float | None = None
    stopped_early: bool = False
    seconds: float = 0.0
    train_tokens: int = 0


OPTIMIZERS = ("sgd", "momentum", "adam", "amsgrad")


def _swap(params: Sequence[torch.Tensor], others: Sequence[torch.Tensor]) -> None:
    """Exchange the values of the model's parameters and another set (the averages)."""
    with torch.no_grad():
        for p, o in zip(params, others):
            tmp = p.detach().clone()
            p.copy_(o)
            o.copy_(tmp)


def make_optimizer(name: str, params, lr: float) -> torch.optim.Optimizer:
    if name == "sgd":
        return torch.optim.SGD(params, lr=lr)
    if name == "momentum":
        return torch.optim.SGD(params, lr=lr, momentum=0.9)
    if name == "adam":
        return torch.optim.Adam(params, lr=lr)
    if name == "amsgrad":
        # Adam whose step never grows as the gradients shrink (the running
        # maximum of the second moment): near convergence plain Adam keeps
        # taking lr-sized steps on noise and drifts away.
        return torch.optim.Adam(params, lr=lr, amsgrad=True)
    raise ValueError(f"optimizer must be one of {OPTIMIZERS}, not {name!r}")


def train_model(
    model: BiLSTMTagger,
    train: EncodedData,
    dev: EncodedData | None,
    dev_docs: Sequence[Document],
    tags: Sequence[str],
    singletons: np.ndarray,
    config: TrainConfig,
    device: torch.device,
) -> TrainResult:
    """Train in place; the model ends with the weights of its best epoch on
    ``dev`` (or of its last epoch without ``dev``).

    Loss: the negative log-likelihood summed over the sequences of a batch
    for SGD (so the learning rate means what it meant for the one-sentence
    updates of [LAMPLE16]/NeuroNER, NCRF++-style), averaged per sequence for
    Adam. Learning rate ``lr / (1 + lr_decay * (epoch - 1))``; gradient norm
    clipped at ``clip``. With ``anneal < 1``, every ``anneal_patience``
    epochs in a row without a better held-out F1 multiply the learning rate
    by ``anneal``, and training goes back to the weights and optimizer state
    of the best epoch so far: late epochs cannot drift away from the best
    model (Adam at an undamped rate did, its training loss rising again).
    """
    from ...progress import progress_bar

    rng = np.random.default_rng(config.seed)
    model.to(device)
    opt = make_optimizer(config.optimizer, model.parameters(), config.lr)
    average = isinstance(opt, torch.optim.Adam)  # "adam" and "amsgrad"
    result = TrainResult(train_tokens=train.n_tokens)
    best_state, best_opt, best_f1, bad = None, None, -1.0, 0
    # Exponential moving average of the weights [Polyak averaging]: the
    # averaged weights are the ones evaluated, kept and returned; Adam's
    # step-to-step jitter (training loss rising again at the paper rates)
    # mostly averages out.
    params = [p for p in model.parameters() if p.requires_grad]
    averaged = [p.detach().clone() for p in params] if config.ema_decay > 0 else None
    steps = 0
    lengths = [len(s) for s in train.sequences]
    start_all = time.perf_counter()
    bar = progress_bar(range(1, config.epochs + 1), desc=config.name, unit="epoch", disable=not config.verbose,
                       leave=False)  # a log gets a line per epoch (at most one each 30 s), not a redraw per second
    scale = 1.0
    for epoch in bar:
        if config.lr_schedule:
            lr = float(config.lr_schedule[epoch - 1])
        else:
            lr = scale * config.lr / (1.0 + config.lr_decay * (epoch - 1))
        for group in opt.param_groups:
            group["lr"] = lr
        model.train()
        t0, c0 = time.perf_counter(), time.process_time()
        total, n_tok = 0.0, 0
        for idx in bucket_batches(lengths, config.batch_size, rng):
            batch = make_batch(train, idx, True, rng, singletons, config.unk_prob).to(device)
            loss = model.loss(batch)
            total += float(loss.detach())
            n_tok += int(batch.lengths.sum())
            if average:
                loss = loss / len(idx)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            if config.clip and config.clip > 0:
                torch.nn.utils.clip_grad_norm_(model.parameters(), config.clip)
            opt.step()
            if config.linear_decay and model.linear is not None:
                # L2 on the CRF-style weights (decoupled from Adam's scaling, as AdamW):
                # a rare feature string's weight shrinks between the steps that use it.
                with torch.no_grad():
                    model.linear.weight.mul_(1.0 - lr * config.linear_decay)
            if averaged is not None:
                # Warm-up (as TensorFlow's ExponentialMovingAverage with num_updates):
                # the first steps average over fewer of them, so a short run on a
                # small corpus is not dragged back to its random start.
                steps += 1
                decay = min(config.ema_decay, (1.0 + steps) / (10.0 + steps))
                with torch.no_grad():
                    for a, p in zip(averaged, params):
                        a.lerp_(p, 1.0 - decay)
        seconds, cpu_seconds = time.perf_counter() - t0, time.process_time() - c0
        if averaged is not None:
            _swap(params, averaged)  # the model now holds the averaged weights
        if not math.isfinite(total):
            raise FloatingPointError(
                f"{config.name}: the loss diverged at epoch {epoch} (lr {lr:g}); lower the learning rate or clip"
            )
        dev_f1 = None
        if dev is not None and dev.sequences:
            ids, _ = predict_encoded(model, dev, len(dev_docs), [len(d.tokens) for d in dev_docs], device, marginals=False)
            dev_f1 = f1_score(*strict_counts(dev_docs, ids, tags))
        record = EpochRecord(
            epoch, total / max(n_tok, 1), dev_f1, lr, seconds, n_tok / seconds if seconds else 0.0, cpu_seconds
        )
        result.history.append(record)
        bar.set_postfix(loss=f"{record.loss:.4f}", dev_f1="-" if dev_f1 is None else f"{dev_f1:.4f}")
        log.info(
            "%s epoch %d: loss %.4f, dev F1 %s, %.0f tokens/s",
            config.name, epoch, record.loss, "-" if dev_f1 is None else f"{dev_f1:.4f}", record.tokens_per_s,
        )
        if dev_f1 is None:
            result.best_epoch = epoch
        elif dev_f1 > best_f1:
            best_f1, bad, result.best_epoch = dev_f1, 0, epoch
            best_state = copy.deepcopy({k: v.detach().cpu() for k, v in model.state_dict().items()})
            best_opt = copy.deepcopy(opt.state_dict())
        else:
            bad += 1
            if config.patience and bad >= config.patience:
                result.stopped_early = True
                break
            if config.anneal < 1.0 and best_state is not None and bad % max(1, config.anneal_patience) == 0:
                scale *= config.anneal
                model.load_state_dict(best_state)
                opt.load_state_dict(best_opt)  # its moments too: a fresh Adam's first steps jolt every weight
                if averaged is not None:  # training goes on from the best (averaged) weights
                    for a, p in zip(averaged, params):
                        a.copy_(p.detach())
                continue
        if averaged is not None:
            _swap(params, averaged)  # back to the raw weights for the next epoch
    bar.close()
    if best_state is not None:
        model.load_state_dict(best_state)
        result.best_dev_f1 = best_f1
    elif averaged is not None:
        _swap(params, averaged)  # no held-out part: the last averaged weights
    result.seconds = time.perf_counter() - start_all
    return result
