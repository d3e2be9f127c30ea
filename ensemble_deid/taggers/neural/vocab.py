"""Word and character vocabularies, token shapes, and a loader for pre-trained
word vectors in GloVe / word2vec text format.

Pure Python + numpy (no torch): vocabularies are part of a fitted tagger's
pickled state, and loading them must not need the network code.

Words are looked up normalised (lower-cased, every digit replaced by ``0``,
[LAMPLE16]); characters keep their case, since the character BiLSTM is where
capitalisation is seen. Index 0 is padding and 1 is the unknown word/character
in both vocabularies.
"""
from __future__ import annotations

import gzip
import re
from collections import Counter
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

PAD = "<pad>"
UNK = "<unk>"
PAD_ID = 0
UNK_ID = 1

_DIGIT_RE = re.compile(r"\d")
_NEWLINE_RE = re.compile("\n")


def normalize_word(word: str) -> str:
    """Lower case, digits to ``0``: "Enero" -> "enero", "28043" -> "00000"."""
    return _DIGIT_RE.sub("0", word.lower())


class Vocab:
    """A string <-> id table with padding (0) and unknown (1) entries.

    ``counts`` keeps the training frequency of each entry (0 for entries that
    only come from pre-trained vectors), used to find singletons.
    """

    def __init__(self, items: Sequence[str] = (), counts: Sequence[int] | None = None):
        self.itos: list[str] = [PAD, UNK]
        self.counts: list[int] = [0, 0]
        self.stoi: dict[str, int] = {PAD: PAD_ID, UNK: UNK_ID}
        counts = list(counts) if counts is not None else [0] * len(items)
        for item, count in zip(items, counts):
            self.add(item, count)

    def add(self, item: str, count: int = 0) -> int:
        idx = self.stoi.get(item)
        if idx is None:
            idx = len(self.itos)
            self.stoi[item] = idx
            self.itos.append(item)
            self.counts.append(count)
        else:
            self.counts[idx] += count
        return idx

    def __len__(self) -> int:
        return len(self.itos)

    def __contains__(self, item: str) -> bool:
        return item in self.stoi

    def __repr__(self) -> str:  # never the entries: they can be PHI
        return f"Vocab(size={len(self)})"

    def index(self, item: str) -> int:
        return self.stoi.get(item, UNK_ID)

    def indices(self, items: Iterable[str]) -> np.ndarray:
        get = self.stoi.get
        return np.fromiter((get(i, UNK_ID) for i in items), dtype=np.int64)

    def singletons(self) -> np.ndarray:
        """Boolean mask over ids: entries seen exactly once in training."""
        return np.asarray(self.counts) == 1

    # Plain lists only, so a checkpoint loads with torch.load(weights_only=True).
    def to_state(self) -> dict:
        return {"itos": self.itos[2:], "counts": self.counts[2:]}

    @classmethod
    def from_state(cls, state: dict) -> "Vocab":
        return cls(state["itos"], state["counts"])

    def __getstate__(self):
        return self.to_state()

    def __setstate__(self, state):
        self.__init__(state["itos"], state["counts"])


def build_word_vocab(words: Iterable[str], extra: Iterable[str] = ()) -> Vocab:
    """Normalised training words (most frequent first), then ``extra`` words
    (e.g. those of pre-trained vectors) not seen in training."""
    counts = Counter(normalize_word(w) for w in words)
    ordered = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    vocab = Vocab([w for w, _ in ordered], [c for _, c in ordered])
    for w in extra:
        vocab.add(w, 0)
    return vocab


def build_char_vocab(words: Iterable[str], min_count: int = 1) -> Vocab:
    counts = Counter(c for w in words for c in w)
    ordered = sorted(((c, n) for c, n in counts.items() if n >= min_count), key=lambda kv: (-kv[1], kv[0]))
    return Vocab([c for c, _ in ordered], [n for _, n in ordered])


# --- token shapes --------------------------------------------------------------
# Casing class of the token, times what separates it from the previous token:
# nothing ("juan.perez@", "28-X"), spaces, or a line break (or the start of
# the text). The common tokenization drops white space, so this is the only
# place it survives; line breaks matter most with whole notes as sequences,
# where the sentence splits are not sequence boundaries.
N_CASINGS = 6
N_GAPS = 3
LINE_BREAK = 2  # the gap of a token that starts a line (or the text)
N_SHAPES = 1 + N_GAPS * N_CASINGS  # 0 is padding


def casing(word: str) -> int:
    if word.isdigit():
        return 4
    if word.isalpha():
        if word.islower():
            return 0
        if word.isupper():
            return 1 if len(word) > 1 else 2  # "ABC" vs "A"
        if word[0].isupper() and word[1:].islower():
            return 2
        return 3
    return 5


def shape_ids(words: Sequence[str], starts: np.ndarray, ends: np.ndarray, text: str,
              casings: np.ndarray | None = None) -> np.ndarray:
    """One shape id (1..N_SHAPES-1) per token: casing x gap (0 glued to the
    previous token, 1 spaces, 2 a line break or the start of the text).
    ``casings``: each token's ``casing`` when the caller has it (computed
    once per distinct word)."""
    n = len(words)
    if casings is None:
        casings = np.fromiter((casing(w) for w in words), dtype=np.int64, count=n)
    starts, ends = np.asarray(starts, dtype=np.int64), np.asarray(ends, dtype=np.int64)
    gaps = np.full(n, LINE_BREAK, dtype=np.int64)
    if n > 1:
        prev_end, start = ends[:-1], starts[1:]
        # a line break anywhere in text[prev_end:start]: the newlines before
        # ``start`` outnumber those before ``prev_end``
        newlines = np.fromiter((m.start() for m in _NEWLINE_RE.finditer(text)), dtype=np.int64)
        broken = np.searchsorted(newlines, start) > np.searchsorted(newlines, prev_end)
        gaps[1:] = np.where(broken, LINE_BREAK, np.where(start == prev_end, 0, 1))
    return 1 + np.asarray(casings, dtype=np.int64) + N_CASINGS * gaps


def starts_line(shapes: np.ndarray) -> np.ndarray:
    """Which tokens of ``shape_ids`` output start a line (the first always does)."""
    return (np.asarray(shapes) - 1) // N_CASINGS == LINE_BREAK


# --- pre-trained vectors -------------------------------------------------------------
class EmbeddingsFormatError(ValueError):
    pass


def load_embeddings(path: str | Path, dim: int | None = None) -> dict[str, np.ndarray]:
    """Word vectors from a GloVe or word2vec *text* file (``.gz`` allowed).

    One ``word v1 v2 ... vd`` per line; a word2vec header line ``count dim`` is
    recognised and skipped. Keys are normalised (see ``normalize_word``); where
    several words normalise alike, the first one in the file (the most
    frequent, in both formats) is kept. ``dim`` checks the vector size.
    Nothing is downloaded: the file must be local.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"embeddings file not found: {path}")
    opener = gzip.open if path.suffix == ".gz" else open
    vectors: dict[str, np.ndarray] = {}
    size = dim
    with opener(path, "rt", encoding="utf-8", errors="replace") as fh:
        for lineno, line in enumerate(fh, 1):
            parts = line.rstrip("\n\r ").split(" ")
            if lineno == 1 and len(parts) == 2 and all(p.isdigit() for p in parts):
                header_dim = int(parts[1])  # word2vec: "count dim"
                if size is not None and header_dim != size:
                    raise EmbeddingsFormatError(f"{path}: vectors have {header_dim} dimensions, expected {size}")
                size = header_dim
                continue
            if len(parts) < 2:
                continue  # blank line
            if size is None:
                size = len(parts) - 1
            if len(parts) - 1 != size:
                # Line numbers only: the word itself may be sensitive.
                raise EmbeddingsFormatError(
                    f"{path} line {lineno}: {len(parts) - 1} values where {size} were expected"
                )
            key = normalize_word(parts[0])
            if key in vectors:
                continue
            try:
                vectors[key] = np.asarray(parts[1:], dtype=np.float32)
            except ValueError:
                raise EmbeddingsFormatError(f"{path} line {lineno}: a value is not a number") from None
    if not vectors:
        raise EmbeddingsFormatError(f"{path}: no vectors found")
    return vectors
