"""Text and PHI spans assembled together, so every offset is exact by
construction (nothing is searched for afterwards).

A ``Composer`` renders small templates into a ``TextBuilder``:

- ``[[a|b|c]]`` picks one alternative (an empty one makes the text optional;
  alternatives may nest);
- ``{SLOT}`` calls the slot function registered under that name, which
  returns plain text or a list of pieces ``(text, subtype-or-None)``;
- literal text (outside slots) gets the document's noise: typos and
  irregular white space, never touching PHI.
"""
from __future__ import annotations

import random
import re
from typing import Callable, Iterable, Mapping, Sequence, Union

from ..document import I2B2_PARENT_OF, Annotation, Document

Piece = tuple[str, Union[str, None]]
SlotValue = Union[str, Sequence[Piece]]
Slot = Callable[[], SlotValue]

_ALTERNATIVE_RE = re.compile(r"\[\[((?:(?!\[\[|\]\]).)*)\]\]", re.S)
_SLOT_RE = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
_WORD_RE = re.compile(r"[A-Za-z]{5,}")


def phi(text: str, type_: str) -> list[Piece]:
    """One PHI piece of subtype ``type_``."""
    return [(text, type_)]


class TextBuilder:
    """Appends text; PHI pieces record their spans as they are appended."""

    def __init__(self) -> None:
        self._parts: list[str] = []
        self._length = 0
        self._spans: list[tuple[int, int, str]] = []

    def __len__(self) -> int:
        return self._length

    def add(self, text: str) -> None:
        if text:
            self._parts.append(text)
            self._length += len(text)

    def phi(self, text: str, type_: str) -> None:
        if type_ not in I2B2_PARENT_OF:
            raise ValueError(f"unknown PHI subtype {type_!r}")
        if not text or text != text.strip():
            raise ValueError(f"PHI piece of type {type_} is empty or has outer white space")
        start = self._length
        self.add(text)
        self._spans.append((start, self._length, type_))

    def pieces(self, pieces: Iterable[Piece]) -> None:
        for text, type_ in pieces:
            if type_ is None:
                self.add(text)
            else:
                self.phi(text, type_)

    def ends_with(self, suffix: str) -> bool:
        return "".join(self._parts[-3:]).endswith(suffix)

    @property
    def text(self) -> str:
        return "".join(self._parts)

    def document(self, doc_id: str, metadata: Mapping | None = None, upper: bool = False) -> Document:
        text = self.text
        if upper:  # length-preserving upper case keeps every offset valid
            text = "".join(c.upper() if len(c.upper()) == 1 else c for c in text)
        annotations = [
            Annotation(start, end, I2B2_PARENT_OF[type_], type_, text[start:end], f"P{i}")
            for i, (start, end, type_) in enumerate(sorted(self._spans))
        ]
        return Document(doc_id, text, annotations, dict(metadata or {}))


# PHI subtypes whose casing a hurried writer gets wrong ("boston", "dr smith").
CASEABLE_TYPES = frozenset({
    "PATIENT", "DOCTOR", "CITY", "STATE", "COUNTRY", "HOSPITAL", "ORGANIZATION",
    "LOCATION-OTHER", "STREET", "DEPARTMENT", "PROFESSION",
})


class Noise:
    """Typos and irregular white space in literal (non-PHI) text; optionally
    wrong casing and typos inside PHI pieces (``phi_case_rate``,
    ``phi_typo_rate``), never changing where a piece starts or ends."""

    def __init__(self, rng: random.Random, typo_rate: float = 0.0, space_rate: float = 0.0,
                 phi_case_rate: float = 0.0, phi_typo_rate: float = 0.0):
        self.rng = rng
        self.typo_rate = typo_rate
        self.space_rate = space_rate
        self.phi_case_rate = phi_case_rate
        self.phi_typo_rate = phi_typo_rate

    def phi(self, text: str, type_: str) -> str:
        """A PHI piece as a careless writer types it: all lower case (now and
        then all upper case), or with a typo in a longer word."""
        if type_ not in CASEABLE_TYPES:
            return text
        if self.phi_case_rate and self.rng.random() < self.phi_case_rate:
            text = text.upper() if self.rng.random() < 0.15 else text.lower()
        if self.phi_typo_rate and self.rng.random() < self.phi_typo_rate:
            saved, self.typo_rate = self.typo_rate, 1.0
            text = _WORD_RE.sub(self._typo, text, count=1)
            self.typo_rate = saved
        return text

    def __call__(self, text: str) -> str:
        if self.typo_rate:
            text = _WORD_RE.sub(self._typo, text)
        if self.space_rate and " " in text:
            out = []
            for ch in text:
                if ch == " " and self.rng.random() < self.space_rate:
                    ch = self.rng.choice(("  ", "   ", " \t", "\t"))
                out.append(ch)
            text = "".join(out)
        return text

    def _typo(self, match: re.Match) -> str:
        word = match.group()
        if self.rng.random() >= self.typo_rate:
            return word
        i = self.rng.randrange(1, len(word) - 1)
        kind = self.rng.randrange(3)
        if kind == 0:  # swap two letters
            return word[:i] + word[i + 1] + word[i] + word[i + 2:]
        if kind == 1:  # drop one
            return word[:i] + word[i + 1:]
        return word[:i] + word[i] + word[i:]  # double one


class Composer:
    """Renders templates into a builder with the document's slots and noise."""

    def __init__(
        self,
        builder: TextBuilder,
        rng: random.Random,
        slots: Mapping[str, Slot],
        noise: Noise | None = None,
    ):
        self.builder = builder
        self.rng = rng
        self.slots = dict(slots)
        self.noise = noise or Noise(rng)

    def choose(self, template: str) -> str:
        """Resolve every ``[[a|b]]`` alternative, innermost first."""
        while True:
            new = _ALTERNATIVE_RE.sub(lambda m: self.rng.choice(m.group(1).split("|")), template)
            if new == template:
                return new
            template = new

    def say(self, template: str) -> None:
        text = self.choose(template)
        pos = 0
        for match in _SLOT_RE.finditer(text):
            self.builder.add(self.noise(text[pos:match.start()]))
            self.emit(self.fill(match.group(1)))
            pos = match.end()
        self.builder.add(self.noise(text[pos:]))

    def fill(self, name: str) -> SlotValue:
        try:
            slot = self.slots[name]
        except KeyError:
            raise KeyError(f"template slot {{{name}}} has no filler") from None
        return slot()

    def emit(self, value: SlotValue) -> None:
        if isinstance(value, str):
            self.builder.add(value)
        elif self.noise.phi_case_rate or self.noise.phi_typo_rate:
            self.builder.pieces([(text if t is None else self.noise.phi(text, t), t) for text, t in value])
        else:
            self.builder.pieces(value)

    def line(self, template: str = "") -> None:
        """A template followed by a line break."""
        if template:
            self.say(template)
        self.builder.add("\n")
