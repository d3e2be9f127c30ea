"""Gazetteers: lists of names, places, occupations and cue words, matched over
the common tokens.

The lists live in ``ensemble_deid/data/gazetteers/*.txt`` (one entry a line,
``#`` comments); ``PROVENANCE.md`` beside them gives each one's public source,
version and licence. None comes from Faker or from the synthetic-corpus
generator, so gazetteer features do not leak the surrogate generator's lists.

Matching is case- and accent-insensitive (``normalize``) and works on the
common tokenization, so multi-word entries ("San Sebastián de los Reyes",
"medical center") match token sequences:

    gaz = default_gazetteers()
    hits = gaz.match(["vive", "en", "san", "sebastian"])   # normalized tokens
    # hits[2] == (("city", True),) ; hits[3] == (("city", False),)  (True = first token)
"""
from __future__ import annotations

import unicodedata
from functools import lru_cache
from importlib import resources
from typing import Iterable, Sequence

from ..corpus.tokenize import _TOKEN_RE

# name -> file under data/gazetteers/
GAZETTEER_FILES: dict[str, str] = {
    "first_name": "first_names.txt",
    "last_name": "last_names.txt",
    "city": "cities.txt",
    "state": "states.txt",
    "country": "countries.txt",
    "hospital": "hospital_cues.txt",
    "profession": "professions.txt",
    "title": "titles.txt",
    "month": "months.txt",
    "weekday": "weekdays.txt",
}
GAZETTEER_NAMES: tuple[str, ...] = tuple(GAZETTEER_FILES)

_END = None  # trie key (never a token) holding the names of the gazetteers whose entry ends here


def normalize(word: str) -> str:
    """Lowercase without accents: ``"Álava"`` -> ``"alava"``, ``"Ñ"`` -> ``"n"``."""
    if word.isascii():
        return word.lower()
    decomposed = unicodedata.normalize("NFKD", word)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).lower()


def entry_tokens(entry: str) -> tuple[str, ...]:
    """An entry as normalized common tokens."""
    return tuple(normalize(m.group()) for m in _TOKEN_RE.finditer(entry))


def read_list(filename: str) -> list[str]:
    """The entries of one shipped list (comments and blank lines skipped)."""
    text = resources.files("ensemble_deid").joinpath("data", "gazetteers", filename).read_text(encoding="utf-8")
    return [line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")]


class Gazetteers:
    """A token trie over several named lists."""

    def __init__(self, lists: dict[str, Iterable[str]]):
        self.names: tuple[str, ...] = tuple(lists)
        self.sizes: dict[str, int] = {}
        self._trie: dict = {}
        for name, entries in lists.items():
            n = 0
            for entry in entries:
                toks = entry_tokens(entry)
                if not toks:
                    continue
                node = self._trie
                for tok in toks:
                    node = node.setdefault(tok, {})
                ends = node.get(_END, ())
                if name not in ends:
                    node[_END] = ends + (name,)
                    n += 1
            self.sizes[name] = n

    def __repr__(self) -> str:
        return f"Gazetteers({', '.join(f'{k}={v}' for k, v in self.sizes.items())})"

    def __contains__(self, item: tuple[str, str]) -> bool:
        """``("city", "Madrid") in gaz``: is this entry (any case/accents) listed?"""
        name, entry = item
        node = self._trie
        for tok in entry_tokens(entry):
            node = node.get(tok)
            if node is None:
                return False
        return name in node.get(_END, ())

    def match(self, tokens: Sequence[str]) -> list[tuple[tuple[str, bool], ...]]:
        """For each (normalized) token, the (gazetteer, is_first_token) pairs of
        every entry occurrence covering it. All matches are kept, overlapping
        or nested; each pair appears at most once per token."""
        n = len(tokens)
        hits: list[set | None] = [None] * n
        trie = self._trie
        for i in range(n):
            node = trie.get(tokens[i])
            j = i
            while node is not None:
                ends = node.get(_END)
                if ends:
                    for name in ends:
                        for k in range(i, j + 1):
                            s = hits[k]
                            if s is None:
                                s = hits[k] = set()
                            s.add((name, k == i))
                j += 1
                if j >= n:
                    break
                node = node.get(tokens[j])
        return [tuple(sorted(s)) if s else () for s in hits]


@lru_cache(maxsize=1)
def default_gazetteers() -> Gazetteers:
    """The shipped lists, loaded once per process."""
    return Gazetteers({name: read_list(fname) for name, fname in GAZETTEER_FILES.items()})
