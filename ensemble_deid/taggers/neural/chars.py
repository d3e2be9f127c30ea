"""A character-level tagger's network and training loop (the ``char-cnn`` member).

The note is read as characters only: embeddings of its characters go through
dilated 1-d convolutions (receptive field ``1 + (width - 1) * (1 + 2 + 4 ...)``
characters), each common token is represented by the convolution outputs at its
first and last character, a small token BiLSTM reads those in order, and a
softmax over the BiLSTM's output and the token's own character features gives
each token's BIO tag. The second input is a short path for the gradient: through
an untrained BiLSTM alone the convolutions got about 1e-4 of the output layer's
gradient, never learned, and the model stayed at the tag prior (every token O).
No word, word embedding or hand-made feature enters, so its errors differ from
the word-level members'.

Notes are cut into chunks of whole tokens of at most ``max_chars`` characters.
Training holds out whole patients (``split_held_out``) and keeps the weights of
the epoch with the best strict F1 on them: the number of epochs is chosen
inside the run, never on a test split. Imports torch (the adapter imports this
module lazily).
"""
from __future__ import annotations

import copy
import time
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch
from torch import nn

from ...corpus.bio import OUTSIDE, gold_tags
from ...corpus.document import Document
from .training import f1_score, strict_counts

PAD, UNK = 0, 1


@dataclass
class Chunk:
    doc: int  # index of the document
    first: int  # its first token
    chars: np.ndarray  # character ids
    starts: np.ndarray  # each token's first character, relative to the chunk
    ends: np.ndarray  # each token's last character (inclusive)
    tags: np.ndarray | None  # gold tag ids, training only


def chunk_documents(documents: Sequence[Document], char_index: dict[str, int], max_chars: int,
                    tag_index: dict[str, int] | None = None) -> list[Chunk]:
    chunks = []
    for d, doc in enumerate(documents):
        toks = doc.tokens
        n = len(toks)
        if not n:
            continue
        starts, ends = np.asarray(toks.starts), np.asarray(toks.ends)
        gold = None if tag_index is None else np.array([tag_index.get(t, 0) for t in gold_tags(doc)], dtype=np.int64)
        a = 0
        while a < n:
            b = a + 1
            while b < n and ends[b] - starts[a] <= max_chars:
                b += 1
            base, stop = int(starts[a]), int(ends[b - 1])
            text = doc.text[base:stop]
            chars = np.fromiter((char_index.get(c, UNK) for c in text), dtype=np.int64, count=len(text))
            chunks.append(Chunk(d, a, chars, starts[a:b] - base, ends[a:b] - 1 - base,
                                None if gold is None else gold[a:b]))
            a = b
    return chunks


class CharNet(nn.Module):
    def __init__(self, n_chars: int, n_tags: int, char_dim: int, channels: int, layers: int, width: int,
                 token_dim: int, dropout: float):
        super().__init__()
        self.embed = nn.Embedding(n_chars, char_dim, padding_idx=PAD)
        convs, size = [], char_dim
        for i in range(layers):
            dilation = 2 ** i
            convs.append(nn.Conv1d(size, channels, width, padding=dilation * (width - 1) // 2, dilation=dilation))
            size = channels
        self.convs = nn.ModuleList(convs)
        self.drop = nn.Dropout(dropout)
        self.tokens = nn.LSTM(2 * channels, token_dim, batch_first=True, bidirectional=True)
        self.out = nn.Linear(2 * token_dim + 2 * channels, n_tags)  # BiLSTM output + the token's own features

    def forward(self, chars: torch.Tensor, starts: torch.Tensor, ends: torch.Tensor) -> torch.Tensor:
        """chars (B, C), starts/ends (B, T) -> tag scores (B, T, n_tags)."""
        h = self.drop(self.embed(chars)).transpose(1, 2)
        for conv in self.convs:
            h = torch.relu(conv(h)) + (h if h.shape[1] == conv.out_channels else 0)
        h = h.transpose(1, 2)  # (B, C, channels)
        gather = lambda idx: torch.gather(h, 1, idx.unsqueeze(-1).expand(-1, -1, h.shape[2]))  # noqa: E731
        tokens = self.drop(torch.cat([gather(starts), gather(ends)], dim=-1))
        out, _ = self.tokens(tokens)
        return self.out(self.drop(torch.cat([out, tokens], dim=-1)))


def make_batch(chunks: Sequence[Chunk]) -> tuple[torch.Tensor, ...]:
    c_len = max(len(c.chars) for c in chunks)
    t_len = max(len(c.starts) for c in chunks)
    chars = np.zeros((len(chunks), c_len), dtype=np.int64)
    starts = np.zeros((len(chunks), t_len), dtype=np.int64)
    ends = np.zeros((len(chunks), t_len), dtype=np.int64)
    tags = np.full((len(chunks), t_len), -100, dtype=np.int64)  # -100: ignored by the loss
    for i, c in enumerate(chunks):
        chars[i, : len(c.chars)] = c.chars
        starts[i, : len(c.starts)] = c.starts
        ends[i, : len(c.ends)] = c.ends
        if c.tags is not None:
            tags[i, : len(c.tags)] = c.tags
    return tuple(torch.from_numpy(a) for a in (chars, starts, ends, tags))


def predict_chunks(model: CharNet, chunks: Sequence[Chunk], documents: Sequence[Document],
                   batch_size: int, device: torch.device) -> list[tuple[np.ndarray, np.ndarray]]:
    """(tag ids, probability of each) per document; ``model`` is on ``device``."""
    out = [(np.zeros(len(d.tokens), dtype=np.int64), np.ones(len(d.tokens), dtype=np.float32)) for d in documents]
    model.eval()
    order = sorted(range(len(chunks)), key=lambda i: len(chunks[i].chars))
    with torch.no_grad():
        for k in range(0, len(order), batch_size):
            batch = [chunks[i] for i in order[k: k + batch_size]]
            chars, starts, ends, _ = (t.to(device) for t in make_batch(batch))
            probs = torch.softmax(model(chars, starts, ends), dim=-1)
            best, ids = (t.cpu() for t in probs.max(dim=-1))
            for row, c in enumerate(batch):
                n = len(c.starts)
                out[c.doc][0][c.first: c.first + n] = ids[row, :n].numpy()
                out[c.doc][1][c.first: c.first + n] = best[row, :n].numpy()
    return out


def train_char_model(model: CharNet, train: list[Chunk], held: list[Chunk], held_docs: Sequence[Document],
                     tags: Sequence[str], epochs: int, patience: int, batch_size: int, lr: float, seed: int,
                     device: torch.device) -> dict:
    """Adam on the training chunks, on ``device`` (the model is moved there);
    the weights of the epoch with the best held-out strict F1 are kept (the
    last epoch's when nothing is held out). ``patience`` epochs without a
    better F1 end the run once some epoch has found anything on the held-out notes."""
    rng = np.random.default_rng(seed)
    model.to(device)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    loss_fn = nn.CrossEntropyLoss(ignore_index=-100)
    best_f1, best_state, best_epoch, bad, history = -1.0, None, 0, 0, []
    t_all = time.perf_counter()
    for epoch in range(1, epochs + 1):
        model.train()
        order = rng.permutation(len(train))
        total = 0.0
        for k in range(0, len(order), batch_size):
            batch = make_batch([train[i] for i in order[k: k + batch_size]])
            chars, starts, ends, gold = (t.to(device) for t in batch)
            scores = model(chars, starts, ends)
            loss = loss_fn(scores.reshape(-1, scores.shape[-1]), gold.reshape(-1))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 5.0)
            opt.step()
            total += float(loss.detach())
        f1 = None
        if held:
            ids = [p[0] for p in predict_chunks(model, held, held_docs, batch_size, device)]
            f1 = f1_score(*strict_counts(held_docs, ids, tags))
        history.append({"epoch": epoch, "loss": total / max(1, -(-len(order) // batch_size)), "held_out_f1": f1})
        if f1 is None or f1 > best_f1:
            best_f1, best_epoch, bad = (f1 if f1 is not None else best_f1), epoch, 0
            best_state = copy.deepcopy(model.state_dict())
        else:
            bad += 1
            # an early run that finds nothing yet (F1 0, ties) is not a plateau: stopping there kept a model
            # that tags every token O on small corpora, where an epoch is a few steps
            if patience and bad >= patience and best_f1 > 0:
                break
    model.load_state_dict(best_state)
    return {"chosen_epoch": best_epoch, "epochs_run": len(history), "stopped_early": len(history) < epochs,
            "best_held_out_f1": best_f1 if held else None, "seconds": time.perf_counter() - t_all,
            "history": history}


__all__ = ["CharNet", "Chunk", "OUTSIDE", "chunk_documents", "predict_chunks", "train_char_model"]
