"""The shared feature extractor of the linear taggers [LIU17 CRF feature set].

One extractor serves the CRF now and the MEMM, SEARN, MIRA, SVM, OGD and
structural-SVM taggers and the feature-augmented BiLSTM later, so they all see
the same evidence:

    fx = FeatureExtractor()                      # defaults = [LIU17]
    feats = fx.document_features(doc)            # one list of feature strings per token
    feats[i]  # ['bias', 'w[-2]=dr', 'w[-1]=.', 'w[0]=garcía', 'w[-1]|w[0]=.|garcía', 'p3=Gar', 'shape=Aaaaaa', ...]
    flags = fx.binary_flags(doc)                 # (n_tokens, len(fx.flag_names)) uint8
    fx.flag_names                                # what each column means

Feature strings are ``name=value`` (a bare ``name`` for a binary feature). They
go as they are into python-crfsuite (``Trainer.append(feats, tags)``), into
scikit-learn's ``FeatureHasher(input_type="string")``, and into Vowpal Wabbit
through ``vw_features`` (which escapes ``:``, ``|`` and white space).

Features of a token (with the default parameters):

- word n-grams in a ``[-window, window]`` window: unigrams ``w[k]``, bigrams
  ``w[k]|w[k+1]`` and trigrams; lowercased, digit runs replaced by ``0`` times
  their length (``"1946"`` -> ``"0000"``), ``<s>``/``</s>`` beyond the document;
- prefixes ``p1..p5`` and suffixes ``s1..s5`` of the token (raw case);
- orthography: ``allcap``, ``hascap``, ``title``, ``digit``, ``punct``, ``len1``;
- long shape (``Hospital`` -> ``Aaaaaaaa``, digits ``0``) and short shape
  (``Aa``), the short shape of the neighbours, the long shape of the next/previous
  token;
- sentence facts (common sentence splitter): length bucket, ends with . ? !,
  unmatched bracket, first/last token of the sentence and of the line;
- section: the heading the token falls under (``sec=history_of_present_illness``),
  inside a heading, and the field label of ``Key: value`` lines
  (``fld=fecha_de_nacimiento``) -- language-agnostic layout heuristics;
- gazetteer hits (``gz=city``, ``gz=city:B``): see ``ensemble_deid.taggers.gazetteers``;
- coarse regular-expression hits (``re=date``, ``re=email``, ...);
- conjunctions: the shape trigram ``sh[-1]|sh[0]|sh[1]``, previous word with
  shape ``w[-1]|sh[0]`` and shape with next word ``sh[0]|w[1]``, the field key
  with the shape (``fld|sh``) and with the position in the field value
  (``fld|pos``), gazetteer hits on capitalised words (``gz|cap=city``).

Per-word computations (shapes, affixes, orthography) are cached per extractor;
the extractor is cheap to build and picklable (caches are dropped).
"""
from __future__ import annotations

import gc
import re
from typing import Any, Iterable, Iterator, Sequence

import numpy as np

from ..corpus.document import Document
from .gazetteers import GAZETTEER_NAMES, Gazetteers, default_gazetteers, normalize

# Bump whenever the features of a token can change (extractor code or the
# shipped gazetteer lists): taggers fold it into their ``version``, so cached
# predictions made with older features are not reused.
FEATURES_VERSION = "2"
_WORD_CACHE_LIMIT = 400_000  # word types; the cache is emptied beyond this

class _RunStartPattern:
    """``finditer`` of a pattern that starts with a run of ``run`` characters,
    with the same matches in linear time.

    ``re`` retries a failed match from every position: in a long run with no
    "@" after it (a base64 blob in a note) each retry rescans the rest of the
    run, quadratic time (80k characters: a minute). A match can only start
    where such a run starts or where the previous match ended; from any other
    position it would reach the same end of the run, and fail the same way.
    """

    def __init__(self, pattern: str, run: str):
        self.pattern = pattern
        self._anywhere = re.compile(pattern)
        self._run_start = re.compile(rf"(?<!{run}){pattern}")

    def finditer(self, text: str) -> Iterator[re.Match]:
        match = self._run_start.search(text)
        while match is not None:
            yield match
            end = match.end()  # a match never is empty
            match = self._anywhere.match(text, end) or self._run_start.search(text, end)


# Coarse shape regexes for the ``re=`` features and the dense flags. They mark
# tokens whose characters lie inside a match; the rule tagger has its own,
# label-aware patterns.
REGEX_FEATURES: dict[str, "re.Pattern | _RunStartPattern"] = {
    "date": re.compile(
        r"\b\d{1,4}[/\-.]\d{1,2}[/\-.]\d{2,4}\b"
        r"|\b\d{4}-\d{2}-\d{2}\b"
        r"|\b\d{1,2}/\d{4}\b"
    ),
    "time": re.compile(r"\b\d{1,2}:\d{2}(?::\d{2})?\s*(?:[ap]\.?m\.?|h)?\b", re.I),
    "phone": re.compile(
        r"(?:\+\d{1,3}[\s.-]?)?(?:\(\d{2,4}\)\s*|\b\d{2,4}[\s.-])\d{2,4}[\s.-]\d{2,4}(?:[\s.-]\d{2,4})?\b"
        r"|\b[6-9]\d{8}\b"
    ),
    "email": _RunStartPattern(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+", r"[\w.+-]"),
    "url": re.compile(r"\b(?:https?://|www\.)[^\s<>\"']+", re.I),
    "ipaddr": re.compile(r"\b(?:\d{1,3}\.){3}\d{1,3}\b"),
    "longnum": re.compile(r"\b\d{5,}\b"),
    "alnum_id": re.compile(r"\b(?=[A-Za-z]*\d)(?=\d*[A-Za-z])[A-Za-z0-9]{5,}\b"),
}

_ORTHO_FLAGS = ("allcap", "hascap", "title", "digit", "punct", "len1")
_SENT_FLAGS = ("bos", "eos", "bol", "eol", "send", "sbrk")
_SLEN_BUCKETS = (1, 2, 5, 10, 20, 40)  # upper bounds; longer sentences go in the last bucket
_SECTION_FLAGS = ("in_heading", "under_heading", "in_key", "in_value")

_OPEN = "([{"
_CLOSE = ")]}"

# A heading/field key: starts a line (or follows ". ") with a letter, at most
# six words, then a colon that is not part of a URL or time.
_KEY_RE = re.compile(
    r"(?:(?<=\n)|^|(?<=[.;]\s)|(?<=[.;]\s\s))[ \t]*"
    r"([^\W\d_][^\n:]{0,48}?)[ \t]*:(?!//)(?!\d)",
    re.M,
)
_LINE_RE = re.compile(r"^[ \t]*([^\W\d_][^\n]{0,79}?)[ \t.]*$", re.M)


def _shape(word: str) -> str:
    out = []
    for c in word:
        if c.isupper():
            out.append("A")
        elif c.isalpha():
            out.append("a")
        elif c.isdigit():
            out.append("0")
        else:
            out.append(c)
    return "".join(out)


def _short_shape(long: str) -> str:
    out = []
    prev = ""
    for c in long:
        if c != prev:
            out.append(c)
            prev = c
    return "".join(out)


def _slug(text: str, limit: int = 40) -> str:
    """Normalized key text: ``"Fecha de nacimiento"`` -> ``"fecha_de_nacimiento"``."""
    text = normalize(text)
    text = re.sub(r"[^a-z0-9]+", "_", text).strip("_")
    return text[:limit] or "_"


def vw_escape(feature: str) -> str:
    """A feature string made safe for Vowpal Wabbit's text format."""
    return feature.replace("\\", "\\\\").replace(":", "\\c").replace("|", "\\p").replace(" ", "\\s") \
        .replace("\t", "\\s").replace("\n", "\\s").replace("\r", "\\s")


def vw_features(features: Iterable[str]) -> str:
    """One token's feature strings as a VW feature list (``"f1 f2 ..."``)."""
    return " ".join(vw_escape(f) for f in features)


class FeatureExtractor:
    """The [LIU17] feature set over the common tokenization.

    Parameters (all stored as given; see the module docstring for the features):
        window: half width of the word n-gram window (0 = current word only).
        ngrams: longest n-gram inside the window (1 = unigrams only, 3 = up to trigrams).
        affixes: prefix/suffix lengths.
        shapes: long/short word shapes (of the token and its neighbours).
        orthography: the orthographic flags.
        sentence: sentence and line facts.
        sections: section heading and field-label features.
        gazetteers: gazetteer hits (the shipped lists, or a ``Gazetteers`` object).
        regexes: coarse regular-expression hits.
        conjunctions: pairs and triples of the above (shape trigram, previous
            word with shape, next word with shape, field key with shape and with
            position in the field value, gazetteer hit with capitalisation).
    """

    def __init__(
        self,
        window: int = 2,
        ngrams: int = 3,
        affixes: Sequence[int] = (1, 2, 3, 4, 5),
        shapes: bool = True,
        orthography: bool = True,
        sentence: bool = True,
        sections: bool = True,
        gazetteers: bool | Gazetteers = True,
        regexes: bool = True,
        conjunctions: bool = True,
    ):
        if window < 0:
            raise ValueError(f"window must be >= 0, got {window}")
        if ngrams < 1:
            raise ValueError(f"ngrams must be >= 1, got {ngrams}")
        if any(int(k) < 1 for k in affixes):
            raise ValueError(f"affix lengths must be >= 1, got {tuple(affixes)}")
        self.window = int(window)
        self.ngrams = int(ngrams)
        self.affixes = tuple(int(k) for k in affixes)
        self.shapes = bool(shapes)
        self.orthography = bool(orthography)
        self.sentence = bool(sentence)
        self.sections = bool(sections)
        self.gazetteers = gazetteers
        self.regexes = bool(regexes)
        self.conjunctions = bool(conjunctions)
        self._reset_caches()

    # --- configuration -----------------------------------------------------
    def get_config(self) -> dict[str, Any]:
        """Parameters as plain values (hashable via json; part of a tagger's params)."""
        gz = self.gazetteers
        return {
            "window": self.window,
            "ngrams": self.ngrams,
            "affixes": list(self.affixes),
            "shapes": self.shapes,
            "orthography": self.orthography,
            "sentence": self.sentence,
            "sections": self.sections,
            "gazetteers": gz if isinstance(gz, bool) else repr(gz),
            "regexes": self.regexes,
            "conjunctions": self.conjunctions,
            "version": FEATURES_VERSION,
        }

    def __repr__(self) -> str:
        cfg = self.get_config()
        cfg.pop("version")
        return "FeatureExtractor(" + ", ".join(f"{k}={v!r}" for k, v in cfg.items()) + ")"

    def __getstate__(self):
        state = dict(self.__dict__)
        for key in ("_words", "_gaz"):
            state.pop(key, None)
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._reset_caches()

    def _reset_caches(self) -> None:
        self._words: dict[str, tuple] = {}
        self._gaz: Gazetteers | None = None

    def _gazetteers(self) -> Gazetteers | None:
        if self.gazetteers is False:
            return None
        if self._gaz is None:
            self._gaz = self.gazetteers if isinstance(self.gazetteers, Gazetteers) else default_gazetteers()
        return self._gaz

    # --- dense flags ---------------------------------------------------------
    @property
    def flag_names(self) -> tuple[str, ...]:
        """Column names of ``binary_flags`` (independent of the parameters,
        except that disabled groups are left out)."""
        names: list[str] = []
        if self.orthography:
            names += [f"ortho:{f}" for f in _ORTHO_FLAGS]
        if self.gazetteers is not False:
            names += [f"gz:{g}" for g in self._gazetteer_names()]
        if self.regexes:
            names += [f"re:{r}" for r in REGEX_FEATURES]
        if self.sentence:
            names += [f"sent:{f}" for f in _SENT_FLAGS]
            names += [f"sent:len<={b}" for b in _SLEN_BUCKETS] + [f"sent:len>{_SLEN_BUCKETS[-1]}"]
        if self.sections:
            names += [f"sec:{f}" for f in _SECTION_FLAGS]
        return tuple(names)

    def _gazetteer_names(self) -> tuple[str, ...]:
        gz = self.gazetteers
        return gz.names if isinstance(gz, Gazetteers) else GAZETTEER_NAMES

    # --- per-word cache --------------------------------------------------------
    def _word(self, word: str) -> tuple:
        """Cached per word type: (window strings by offset, own features,
        neighbour-shape strings by offset, ortho bits, gazetteer form)."""
        entry = self._words.get(word)
        if entry is not None:
            return entry
        n = len(word)
        isdigit = word.isdigit()
        form = "0" * n if isdigit else word.lower()
        long = _shape(word)
        short = _short_shape(long)
        if len(long) > 12:
            long = long[:12] + "+"
        own: list[str] = []
        for k in self.affixes:
            if k <= n:
                own.append(f"p{k}={word[:k]}")
                own.append(f"s{k}={word[-k:]}")
        if self.shapes:
            own.append("shape=" + long)
            own.append("sshape=" + short)
        isalpha = word.isalpha()
        bits = (
            isalpha and word.isupper() and n > 1,                               # allcap
            not word.islower() and any(c.isupper() for c in word),             # hascap
            isalpha and word[0].isupper() and (n == 1 or word[1:].islower()),  # title
            isdigit,                                                            # digit
            not word.isalnum(),                                                 # punct
            n == 1,                                                             # len1
        )
        if self.orthography:
            own += [name for name, bit in zip(_ORTHO_FLAGS, bits) if bit]
        if len(self._words) >= _WORD_CACHE_LIMIT:
            self._words.clear()
        entry = self._make_entry(form, tuple(own), short, long, bits, normalize(word))
        self._words[word] = entry
        return entry

    def _make_entry(self, form, own, short, long, bits, gform) -> tuple:
        W = self.window
        ctx = tuple(f"w[{k}]={form}" for k in range(-W, W + 1))
        nb = {k: f"sh[{k}]={short}" for k in (-2, -1, 1, 2)}
        nb.update({10 * k: f"shape[{k}]={long}" for k in (-1, 1)})
        return (ctx, own, nb, bits, gform, form, short)

    def _pad(self, symbol: str) -> tuple:
        """Entry of the padding beyond a document's ends."""
        key = "\x00" + symbol
        entry = self._words.get(key)
        if entry is None:
            entry = self._words[key] = self._make_entry(symbol, (), symbol, symbol, (False,) * 6, symbol)
        return entry

    # --- document-level facts ----------------------------------------------------
    @staticmethod
    def _line_bounds(doc: Document) -> tuple[np.ndarray, np.ndarray]:
        """(first token of its line, last token of its line) as bool arrays."""
        toks = doc.tokens
        n = len(toks)
        bol = np.zeros(n, dtype=bool)
        if not n:
            return bol, bol.copy()
        codes = np.frombuffer(doc.text.encode("utf-32-le"), dtype=np.uint32)
        newlines = np.flatnonzero(codes == 10)
        before_start = np.searchsorted(newlines, toks.starts)
        before_prev_end = np.searchsorted(newlines, toks.ends[:-1])
        bol[0] = True
        bol[1:] = before_start[1:] > before_prev_end
        eol = np.empty(n, dtype=bool)
        eol[:-1] = bol[1:]
        eol[-1] = True
        return bol, eol

    def _sentence_bits(self, doc: Document, words: Sequence[str]) -> np.ndarray:
        """(n_tokens, len(_SENT_FLAGS) + buckets) uint8; the bucket block is one-hot."""
        toks = doc.tokens
        n = len(words)
        nb = len(_SLEN_BUCKETS) + 1
        bits = np.zeros((n, len(_SENT_FLAGS) + nb), dtype=np.uint8)
        if not n:
            return bits
        sid = toks.sentence_ids
        first = np.ones(n, dtype=bool)
        first[1:] = sid[1:] != sid[:-1]
        last = np.ones(n, dtype=bool)
        last[:-1] = first[1:]
        n_sent = int(sid[-1]) + 1
        lengths = np.bincount(sid, minlength=n_sent)
        bucket = np.searchsorted(np.asarray(_SLEN_BUCKETS), lengths, side="left")
        last_idx = np.flatnonzero(last)
        ends = np.array([words[i] in (".", "?", "!") for i in last_idx], dtype=bool)
        depth_step = np.array([(w in _OPEN) - (w in _CLOSE) if len(w) == 1 else 0 for w in words], dtype=np.int32)
        unmatched = np.bincount(sid, weights=depth_step, minlength=n_sent) != 0
        bol, eol = self._line_bounds(doc)
        bits[:, 0] = first
        bits[:, 1] = last
        bits[:, 2] = bol
        bits[:, 3] = eol
        bits[:, 4] = ends[sid]
        bits[:, 5] = unmatched[sid]
        bits[np.arange(n), len(_SENT_FLAGS) + bucket[sid]] = 1
        return bits

    def _sections(self, doc: Document) -> tuple[list, list, np.ndarray]:
        """Per token: the heading slug it falls under (or None), the field-key
        slug of its ``Key: value`` line (or None), and its state
        (0 none, 1 in a heading, 2 in a key, 3 in a field value)."""
        text = doc.text
        toks = doc.tokens
        n = len(toks)
        section: list = [None] * n
        field: list = [None] * n
        state = np.zeros(n, dtype=np.int8)
        if not n:
            return section, field, state
        marks: list[tuple[int, int, str, str]] = []  # (char start, char end, slug, kind)
        for m in _KEY_RE.finditer(text):
            key = m.group(1)
            n_words = len(key.split())
            if n_words > 6:
                continue
            line_end = text.find("\n", m.end())
            rest = text[m.end(): len(text) if line_end < 0 else line_end].strip()
            letters = [c for c in key if c.isalpha()]
            upper = len(letters) >= 2 and all(c.isupper() for c in letters)
            heading = (not rest and n_words <= 5) or (upper and n_words >= 2)
            marks.append((m.start(1), m.end(), _slug(key), "heading" if heading else "key"))
            if heading and rest:  # "HISTORY OF PRESENT ILLNESS: text" is also a field
                marks.append((m.start(1), m.end(), _slug(key), "key"))
        for m in _LINE_RE.finditer(text):  # a whole line in capitals: a heading
            head = m.group(1)
            if head.isupper() and len(head.split()) <= 8 and not any(c.isdigit() for c in head) \
                    and sum(c.isalpha() for c in head) >= 3 and not head.rstrip().endswith(":"):
                marks.append((m.start(1), m.end(1), _slug(head), "heading"))
        if not marks:
            return section, field, state
        marks.sort()
        starts, ends = toks.starts, toks.ends
        headings = [(a, b, s) for a, b, s, kind in marks if kind == "heading"]
        for j, (a, b, slug) in enumerate(headings):
            ta = int(np.searchsorted(starts, a, side="left"))
            tb = int(np.searchsorted(starts, b, side="left"))
            stop = int(np.searchsorted(starts, headings[j + 1][0], side="left")) if j + 1 < len(headings) else n
            section[ta:stop] = [slug] * (stop - ta)
            state[ta:tb] = 1
        for a, b, slug, kind in marks:
            if kind != "key":
                continue
            line_end = text.find("\n", b)
            line_end = len(text) if line_end < 0 else line_end
            ta = int(np.searchsorted(starts, a, side="left"))
            tb = int(np.searchsorted(starts, b, side="left"))
            stop = int(np.searchsorted(ends, line_end, side="right"))
            state[ta:tb] = 2
            if stop > tb:
                field[tb:stop] = [slug] * (stop - tb)
                state[tb:stop] = 3
        return section, field, state

    def _regex_hits(self, doc: Document) -> dict[int, tuple[str, ...]]:
        """Token index -> names of the coarse regexes whose match covers it."""
        toks = doc.tokens
        text = doc.text
        hits: dict[int, list[str]] = {}
        for name, pattern in REGEX_FEATURES.items():
            spans = [m.span() for m in pattern.finditer(text)]
            if not spans:
                continue
            # every match's first and last token at once: a searchsorted call per match cost more than the regexes
            bounds = np.asarray(spans, dtype=np.int64)
            firsts = np.searchsorted(toks.ends, bounds[:, 0], side="right").tolist()
            stops = np.searchsorted(toks.starts, bounds[:, 1], side="left").tolist()
            for a, b in zip(firsts, stops):
                for i in range(a, b):
                    got = hits.setdefault(i, [])
                    if not got or got[-1] != name:
                        got.append(name)
        return {i: tuple(v) for i, v in hits.items()}

    # --- public API --------------------------------------------------------------
    def document_features(self, doc: Document) -> list[list[str]]:
        """One list of feature strings per common token of ``doc``."""
        with gc_paused():
            return self._document_features(doc)

    def documents_features(self, docs: Iterable[Document]) -> list[list[list[str]]]:
        """``document_features`` of each document."""
        with gc_paused():
            return [self._document_features(d) for d in docs]

    def ngram_strings(self, ngrams: int | None = None) -> int:
        """How many window n-gram strings (sizes 2 and up) each token's row
        holds with ``ngrams`` (None: this extractor's own)."""
        span = 2 * self.window + 1
        return sum(span - size + 1 for size in range(2, min(self.ngrams if ngrams is None else ngrams, span) + 1))

    def fewer_ngrams(self, rows: list[list[str]], ngrams: int) -> list[list[str]]:
        """``rows`` (this extractor's features of a document) as an extractor
        with the same settings but ``ngrams`` <= this one's makes them: the
        n-gram strings sit after "bias" and the window words, shortest n-grams
        first, so the longer ones are cut out of each row."""
        if ngrams > self.ngrams:
            raise ValueError(f"cannot make {ngrams}-gram features from {self.ngrams}-gram ones")
        keep, have = self.ngram_strings(ngrams), self.ngram_strings()
        if keep == have:
            return rows
        a = 2 + 2 * self.window + keep
        b = a + have - keep
        return [row[:a] + row[b:] for row in rows]

    def _document_features(self, doc: Document) -> list[list[str]]:
        words = doc.tokens.words
        n = len(words)
        if not n:
            return []
        get = self._words.get
        entries = [get(w) or self._word(w) for w in words]
        W = self.window
        P = max(W, 2)
        padded = [self._pad("<s>")] * P + entries + [self._pad("</s>")] * P

        cols: list[list[str]] = []
        for j, k in enumerate(range(-W, W + 1)):  # unigrams: entry of token i+k, its string for offset k
            cols.append([e[0][j] for e in padded[P + k: P + k + n]])
        forms = [e[5] for e in padded]
        for size in range(2, min(self.ngrams, 2 * W + 1) + 1):
            for first in range(-W, W - size + 2):
                ks = range(first, first + size)
                name = "|".join(f"w[{k}]" for k in ks) + "="
                parts = [forms[P + k: P + k + n] for k in ks]
                if size == 2:
                    cols.append([name + a + "|" + b for a, b in zip(*parts)])
                else:
                    cols.append([name + "|".join(t) for t in zip(*parts)])
        if self.shapes:
            for key, k in ((-2, -2), (-1, -1), (1, 1), (2, 2), (-10, -1), (10, 1)):
                cols.append([e[2][key] for e in padded[P + k: P + k + n]])
        conj = self.conjunctions
        if conj:
            sh = [e[6] for e in padded]
            cols.append(["sh[-1]|sh[0]|sh[1]=" + a + "|" + b + "|" + c
                         for a, b, c in zip(sh[P - 1: P - 1 + n], sh[P: P + n], sh[P + 1: P + 1 + n])])
            cols.append(["w[-1]|sh[0]=" + a + "|" + b for a, b in zip(forms[P - 1: P - 1 + n], sh[P: P + n])])
            cols.append(["sh[0]|w[1]=" + a + "|" + b for a, b in zip(sh[P: P + n], forms[P + 1: P + 1 + n])])
        rows = zip(*cols)
        owns = [e[1] for e in entries]

        empty: tuple = ()
        extras: list[Iterable] = []
        if self.sentence:
            bits = self._sentence_bits(doc, words)
            nf = len(_SENT_FLAGS)
            codes = (bits[:, :nf].astype(np.int64) << np.arange(nf)).sum(1) * 16 + bits[:, nf:].argmax(1)
            cache: dict[int, tuple[str, ...]] = {}
            sent = []
            for c in codes.tolist():
                t = cache.get(c)
                if t is None:
                    flags = tuple(f for b, f in enumerate(_SENT_FLAGS) if (c >> 4) >> b & 1)
                    t = cache[c] = (f"slen={c & 15}",) + flags
                sent.append(t)
            extras.append(sent)
        if self.sections:
            section, field, state = self._sections(doc)
            cache2: dict[tuple, tuple[str, ...]] = {}
            secs = []
            states = state.tolist()
            pos = 0
            for i, (s, fl, st) in enumerate(zip(section, field, states)):
                if conj and st == 3:
                    pos = pos + 1 if i and states[i - 1] == 3 and field[i - 1] == fl else 0
                    key = (s, fl, st, min(pos, 3), entries[i][6])
                else:
                    key = (s, fl, st)
                t = cache2.get(key)
                if t is None:
                    out = []
                    if s is not None:
                        out.append("sec=" + s)
                    if st == 1:
                        out.append("in_heading")
                    elif st == 2:
                        out.append("in_key")
                    elif st == 3:
                        out.append("fld=" + fl)
                        if conj:
                            out.append(f"fld|pos={fl}|{key[3]}")
                            out.append(f"fld|sh={fl}|{key[4]}")
                    t = cache2[key] = tuple(out)
                secs.append(t)
            extras.append(secs)
        if self.regexes:
            hits = self._regex_hits(doc)
            if hits:
                extras.append([tuple("re=" + h for h in hits[i]) if i in hits else empty for i in range(n)])
        gaz = self._gazetteers()
        if gaz is not None:
            cache3: dict[tuple, tuple[str, ...]] = {}
            gz = []
            for e, h in zip(entries, gaz.match([e[4] for e in entries])):
                if not h:
                    gz.append(empty)
                    continue
                cap = conj and e[3][1]  # hascap
                t = cache3.get((h, cap))
                if t is None:
                    feats = [f"gz={name}:{'B' if first else 'I'}" for name, first in h]
                    names = list(dict.fromkeys(name for name, _ in h))
                    feats += ["gz=" + name for name in names]
                    if cap:
                        feats += ["gz|cap=" + name for name in names]
                    t = cache3[(h, cap)] = tuple(feats)
                gz.append(t)
            extras.append(gz)

        # one list per token: bias, window n-grams and shapes, own features, extras
        if len(extras) == 4:
            a, b, c, d = extras
            return [["bias", *r, *o, *x1, *x2, *x3, *x4] for r, o, x1, x2, x3, x4 in zip(rows, owns, a, b, c, d)]
        if len(extras) == 3:
            a, b, c = extras
            return [["bias", *r, *o, *x1, *x2, *x3] for r, o, x1, x2, x3 in zip(rows, owns, a, b, c)]
        out_rows = [["bias", *r, *o] for r, o in zip(rows, owns)]
        for extra in extras:
            for row, x in zip(out_rows, extra):
                row.extend(x)
        return out_rows

    def binary_flags(self, doc: Document) -> np.ndarray:
        """Dense 0/1 flags, shape ``(n_tokens, len(flag_names))``, dtype uint8:
        orthography, gazetteer hits, regex hits, sentence facts, section facts
        (for the feature-augmented BiLSTM)."""
        words = doc.tokens.words
        n = len(words)
        blocks: list[np.ndarray] = []
        entries = [self._word(w) for w in words]
        if self.orthography:
            blocks.append(np.array([e[3] for e in entries], dtype=np.uint8).reshape(n, len(_ORTHO_FLAGS)))
        gaz = self._gazetteers()
        if gaz is not None:
            col = {g: j for j, g in enumerate(gaz.names)}
            block = np.zeros((n, len(gaz.names)), dtype=np.uint8)
            for i, hits in enumerate(gaz.match([e[4] for e in entries])):
                for name, _ in hits:
                    block[i, col[name]] = 1
            blocks.append(block)
        if self.regexes:
            block = np.zeros((n, len(REGEX_FEATURES)), dtype=np.uint8)
            col = {r: j for j, r in enumerate(REGEX_FEATURES)}
            for i, names in self._regex_hits(doc).items():
                for name in names:
                    block[i, col[name]] = 1
            blocks.append(block)
        if self.sentence:
            blocks.append(self._sentence_bits(doc, words))
        if self.sections:
            section, field, state = self._sections(doc)
            block = np.zeros((n, len(_SECTION_FLAGS)), dtype=np.uint8)
            block[:, 0] = state == 1
            block[:, 1] = np.fromiter((s is not None for s in section), dtype=bool, count=n)
            block[:, 2] = state == 2
            block[:, 3] = state == 3
            blocks.append(block)
        if not blocks:
            return np.zeros((n, 0), dtype=np.uint8)
        return np.concatenate(blocks, axis=1)


class gc_paused:
    """Pause the cyclic garbage collector while building many small lists
    (feature lists hold no cycles; collection passes would dominate). Also
    around a whole batch of notes tagged (``deid.model``): its feature
    lists, alive until the batch ends, are never walked by a collection."""

    def __enter__(self):
        self._was = gc.isenabled()
        gc.disable()

    def __exit__(self, *exc):
        if self._was:
            gc.enable()
