"""The parts of a written name and the role of each word, so that a name's
surrogate keeps them: a first name stays a first name (of the same sex when
the name lists say), a surname a surname, an initial an initial, titles
("Dr.", "Sra.") and degrees ("MD", "PhD") as written, "Last, First" order
as written.

Roles come from the written form: in "Last, First M" the words before the
comma are surnames; otherwise the last word is the surname and the words
before it first names, unless the name lists (Faker's, for English and
Spanish) know a word only as a surname ("María García López": two
surnames). A word alone takes the role it has in the note's other names,
else the lists' (a word they know only as a first name is one), else it is
a surname ("Dr. Lee", "Vukovic").
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from ..corpus.synth import lists

FIRST, LAST, INITIAL = "first", "last", "initial"
TITLES = frozenset({"dr", "dra", "doctor", "doctora", "mr", "mrs", "ms", "miss", "mx", "prof", "professor", "sr",
                    "sra", "srta", "don", "doña", "dña", "rev", "sir", "nurse"})
_DEGREE = (r"M\.?D\.?|Ph\.?D\.?|D\.?O\.?|R\.?N\.?|N\.?P\.?|PA-?C|P\.?A\.?|Jr\.?|Sr\.?|II|III|IV|MPH|LICSW|LCSW|DDS|DMD"
           r"|FACS|FACP|CNM|CRNA")
_DEGREES_TAIL = re.compile(rf"(?:[,\s]+(?:{_DEGREE}))+\s*$")
# A name unit: letters, joined by apostrophes ("O'Brien"); hyphens join units of one role ("Smith-Jones").
UNIT = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)*(?:-[^\W\d_]+(?:['’][^\W\d_]+)*)*")
_WORD = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)*")
_VOWELS = set("aeiouyáéíóúü")

# Surnames that read as an occupation ("Farmer Wiley"): never drawn as a surrogate name.
OCCUPATION_WORDS = frozenset(
    {w.casefold() for p in lists.PROFESSIONS for w in p.split()}
    | {"farmer", "baker", "cook", "mason", "hunter", "carpenter", "butcher", "fisher", "potter", "painter", "gardener",
       "weaver", "shepherd", "porter", "bishop", "judge", "nurse", "doctor", "sailor", "soldier", "singer", "dancer",
       "banker", "barber", "tailor", "plumber", "teacher", "minister", "pastor", "chef", "driver", "miner", "glazier",
       "thatcher", "tanner", "fowler", "archer", "brewer", "cooper", "dyer", "sawyer", "slater", "tiler"})


@dataclass(frozen=True)
class NamePart:
    start: int  # offsets into the name as written
    end: int
    role: str  # FIRST, LAST or INITIAL (titles and degrees are not parts: they are kept)


@lru_cache(maxsize=None)
def _lexicon(locale: str) -> tuple[frozenset, frozenset, frozenset]:
    """(female first names, male first names, surnames), casefolded, of the
    English and Spanish Faker lists and ``locale``'s."""
    import importlib

    female, male, last = set(), set(), set()
    for loc in dict.fromkeys(("en_US", "es_ES", locale)):
        try:
            provider = importlib.import_module(f"faker.providers.person.{loc}").Provider
        except ImportError:
            continue
        female |= {n.casefold() for n in getattr(provider, "first_names_female", ())}
        male |= {n.casefold() for n in getattr(provider, "first_names_male", ())}
        last |= {n.casefold() for n in getattr(provider, "last_names", ())}
    return frozenset(female), frozenset(male), frozenset(last)


def sex_of(word: str, locale: str) -> str | None:
    """"F" or "M" when the lists know the first name for one sex only."""
    female, male, _ = _lexicon(locale)
    key = word.casefold()
    if (key in female) != (key in male):
        return "F" if key in female else "M"
    return None


def lexical_role(word: str, locale: str) -> str | None:
    """FIRST or LAST when the lists know the word in one role only."""
    female, male, last = _lexicon(locale)
    key = word.casefold()
    first = key in female or key in male
    if first != (key in last):
        return FIRST if first else LAST
    return None


def is_title(word: str) -> bool:
    return word.casefold().rstrip(".") in TITLES


def _is_initials(unit: str, alone: bool) -> bool:
    """"J", "JS", "JDS" (upper case, no vowel), or a two-letter name alone in upper case."""
    if len(unit) == 1:
        return True
    return unit.isupper() and len(unit) <= 3 and (not (set(unit.casefold()) & _VOWELS) or (alone and len(unit) == 2))


def parse(name: str, locale: str = "en_US", known: dict[str, str] | None = None,
          titled: bool = False) -> list[NamePart]:
    """The parts of ``name`` with their roles, in order (see the module
    docstring). ``known``: roles the note's other names give words;
    ``titled``: a title precedes the name in the text."""
    end = len(name)
    tail = _DEGREES_TAIL.search(name)
    if tail and UNIT.search(name[:tail.start()]):
        end = tail.start()
    units = [m for m in UNIT.finditer(name, 0, end)]
    while units and is_title(units[0].group(0)) and len(units) > 1:
        titled = True
        units = units[1:]
    if units and is_title(units[0].group(0)) and len(units) == 1:
        return []  # a title alone ("Dr."): nothing of a name in it
    comma = name.find(",", 0, end)
    parts: list[tuple[int, int, str | None]] = []
    alone = len(units) == 1
    for m in units:
        if _is_initials(m.group(0), alone):
            parts += [(m.start() + i, m.start() + i + 1, INITIAL) for i in range(len(m.group(0)))]
        else:
            parts.append((m.start(), m.end(), None))
    words = [i for i, p in enumerate(parts) if p[2] is None]
    roles: dict[int, str] = {}
    if comma >= 0 and any(parts[i][0] < comma for i in words) and any(p[0] > comma for p in parts):
        for i in words:  # "Last, First M"
            roles[i] = LAST if parts[i][0] < comma else FIRST
    elif len(words) == 1:
        i = words[0]
        text = name[parts[i][0]:parts[i][1]]
        initials_before = any(p[2] == INITIAL and p[0] < parts[i][0] for p in parts)
        said = (known or {}).get(text.casefold())
        if said:
            roles[i] = said
        elif initials_before or titled:
            roles[i] = LAST  # "J. Smith", "Dr. Lee"
        else:
            roles[i] = lexical_role(_WORD.match(text).group(0), locale) or LAST
    else:
        surname = False
        for n, i in enumerate(words):
            text = _WORD.match(name, parts[i][0]).group(0)
            if n == len(words) - 1 or (n > 0 and lexical_role(text, locale) == LAST) or surname:
                surname = True
            elif n == 0 and lexical_role(text, locale) == LAST and lexical_role(
                    _WORD.match(name, parts[words[1]][0]).group(0), locale) != FIRST:
                surname = True  # "García López": two surnames
            roles[i] = LAST if surname else FIRST
    return [NamePart(a, b, roles.get(i, role or INITIAL)) for i, (a, b, role) in enumerate(parts)]


def initial_roles(parts: list[NamePart]) -> list[str]:
    """For each INITIAL part the role of the name it abbreviates: before
    the surname a first name ("J. Smith", "J. R. Smith": the second a middle
    one, FIRST too), after a first name without a surname a surname ("John
    S."), after a surname alone a first name ("Smith J")."""
    has_first = any(p.role == FIRST for p in parts)
    has_last = any(p.role == LAST for p in parts)
    out = []
    for n, p in enumerate(parts):
        if p.role != INITIAL:
            out.append(p.role)
            continue
        later_last = any(q.role == LAST for q in parts[n + 1:])
        if later_last or (has_last and not has_first):
            out.append(FIRST)
        elif has_first and not has_last:
            out.append(LAST)
        elif not has_first and not has_last:  # initials alone ("JS", "J.S."): the last one is the surname's
            out.append(LAST if n == len(parts) - 1 and n > 0 else FIRST)
        else:
            out.append(FIRST)
    return out
