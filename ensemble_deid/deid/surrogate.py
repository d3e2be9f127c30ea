"""Realistic surrogate PHI for de-identified text (the synthetic corpora's
Faker machinery, ``corpus.synth.surrogates``).

Every replacement is a function of (seed, patient, kind, original text) only,
so the same name gets the same surrogate everywhere in a patient's notes
whatever order they are processed in (an interrupted run resumes with the
same mapping), and different patients get independent ones:

- names: each word of a name maps to a surrogate word (so "John Smith",
  "Smith, John" and "J. Smith" stay consistent), case style kept;
- dates: shifted by one offset per patient (1 to 3 years and 30 to 330 days
  either way, never a whole number of weeks), keeping their written format,
  so intervals between a patient's dates are kept; day/month order of
  numeric dates by ``date_order`` ("mdy" or "dmy", decided by any part > 12);
- ages over 89 become "90+" (HIPAA); other ages move by one small offset
  per patient (1 to 3 years, staying under 90);
- IDs, phone and fax numbers, ZIP codes, e-mails, URLs and anything without a
  generator keep their shape: each digit and letter redrawn, punctuation kept;
- places, hospitals, organisations and professions: drawn from the generators.

A replacement never contains the original, nor equals another PHI string of
the same note (both compared case-insensitively): a draw that does is redrawn
from the same seeded stream (so it stays a function of the inputs above and
of the note's PHI), a name word word by word. Within a note, one string gets
one surrogate, whatever types it was predicted with (``replace_spans``).
Avoiding the note's other PHI is the one exception to consistency: a note
where a patient's surrogate is another PHI string (word) gets a redraw.
"""
from __future__ import annotations

import datetime as dt
import random
import re
import string
from dataclasses import dataclass, field

from ..corpus.document import Annotation, Document
from ..corpus.synth import lists
from ..errors import ParameterError, did_you_mean
from ..corpus.synth.surrogates import Surrogates, sub_seed

DATE_ORDERS = ("mdy", "dmy")
SPANISH_MONTHS = ("enero", "febrero", "marzo", "abril", "mayo", "junio", "julio", "agosto",
                  "septiembre", "octubre", "noviembre", "diciembre")
_MONTH_WORDS: dict[str, tuple[int, str]] = {}  # lower-case word -> (month, family)
for _i in range(12):
    _MONTH_WORDS[lists.MONTHS[_i].lower()] = (_i + 1, "en")
    _MONTH_WORDS[lists.MONTHS_ABBR[_i].lower()] = (_i + 1, "en_abbr")
    _MONTH_WORDS[SPANISH_MONTHS[_i]] = (_i + 1, "es")
    _MONTH_WORDS[SPANISH_MONTHS[_i][:3]] = (_i + 1, "es_abbr")
_MONTH_RE = re.compile(r"\b(" + "|".join(sorted(map(re.escape, _MONTH_WORDS), key=len, reverse=True)) + r")\b",
                       re.IGNORECASE)
SPANISH_WEEKDAYS = ("lunes", "martes", "miércoles", "jueves", "viernes", "sábado", "domingo")
_WEEKDAY_NAMES = {"en": lists.WEEKDAYS, "en_abbr": lists.WEEKDAYS_ABBR, "es": SPANISH_WEEKDAYS}
_WEEKDAYS = {w.lower(): (i, fam) for fam, names in _WEEKDAY_NAMES.items() for i, w in enumerate(names)}
# Other corpora's types that have an i2b2 counterpart (MEDDOCAN's Spanish ones).
TYPE_ALIASES = {"CALLE": "STREET", "PAIS": "COUNTRY", "TERRITORIO": "CITY", "INSTITUCION": "ORGANIZATION",
                "CENTRO_SALUD": "HOSPITAL", "PROFESION": "PROFESSION", "SEXO_SUJETO_ASISTENCIA": "SEX"}
SEX_WORDS = {"es": ("varón", "mujer", "hombre"), "en": ("female", "male", "woman", "man")}
_NAME_WORD = re.compile(r"[^\W\d_]+")
_NUMERIC3 = re.compile(r"^(\d{1,4})([/.\-])(\d{1,2})\2(\d{2,4})$")
_NUMERIC2 = re.compile(r"^(\d{1,2})([/.\-])(\d{1,4})$")


def _month_word(month: int, family: str) -> str:
    words = {"en": lists.MONTHS, "en_abbr": lists.MONTHS_ABBR, "es": SPANISH_MONTHS,
             "es_abbr": tuple(m[:3] for m in SPANISH_MONTHS)}[family]
    return words[month - 1]


def _case_like(new: str, old: str) -> str:
    if old.isupper() and len(old) > 1:
        return new.upper()
    if old.islower():
        return new.lower()
    if old[:1].isupper():
        return new[:1].upper() + new[1:]
    return new


def _num_like(value: int, old: str) -> str:
    """``value`` written with as many digits as ``old`` (zero padding kept)."""
    if len(old) == 2:  # two digits stay two digits ("31" -> "03", "12" for a year -> "09")
        return f"{value % 100:02d}"
    return f"{value:0{len(old)}d}" if len(old) >= 3 else str(value)


@dataclass
class Surrogator:
    """Replacement text for predicted PHI spans (see the module docstring).

    Whoever knows the seed can recompute the surrogate of a guessed original,
    so a seed is kept like a key (the default is a random one, never shown).
    ``record=True`` keeps the mapping (original -> surrogate per document) in
    ``mapping``; it contains PHI and is written only when asked for."""

    seed: int | None = None  # None: a random one (surrogates derive from it like from a key)
    date_order: str = "mdy"
    locale: str = "en_US"
    record: bool = False
    mapping: dict[str, list[dict]] = field(default_factory=dict)
    seed_given: bool = field(init=False, default=True)  # False: drawn here (a resume may adopt the first run's)

    def __post_init__(self):
        if self.seed is None:
            import secrets

            self.seed = secrets.randbits(63)
            self.seed_given = False
        from faker.config import AVAILABLE_LOCALES

        if self.date_order not in DATE_ORDERS:
            raise ParameterError(f"date_order must be one of {', '.join(DATE_ORDERS)}, not {self.date_order!r}",
                                 "--date-order")
        if self.locale not in AVAILABLE_LOCALES:
            raise ParameterError(f"unknown locale {self.locale!r}{did_you_mean(self.locale, AVAILABLE_LOCALES)} "
                             "(Faker's locales, e.g. en_US, es_ES)", "--locale")

    # -- per patient ------------------------------------------------------------
    def _rng(self, *parts) -> random.Random:
        return random.Random(sub_seed("surrogate", self.seed, *parts))

    def date_offset(self, patient: str) -> int:
        """Days every date of this patient moves (never 0 mod 7: weekdays change too)."""
        rng = self._rng(patient, "date-offset")
        while True:
            days = rng.randint(1, 3) * 365 + rng.randint(30, 330)
            if days % 7:
                return days if rng.random() < 0.5 else -days

    # -- one note -------------------------------------------------------------------
    def replace_spans(self, document: Document, spans) -> list[str]:
        """The replacement of each span of one note: a string met again (under
        any type) gets the surrogate it got first, and no surrogate equals
        another PHI string of the note."""
        phi = {document.text[a.start:a.end].strip().casefold() for a in spans} - {""}
        words = {w for p in phi for w in _NAME_WORD.findall(p)}  # name words avoid the note's other PHI words
        given: dict[str, str] = {}
        out = []
        for span in spans:
            original = document.text[span.start:span.end]
            new = given.get(original)  # exact: "Lee" and "LEE" keep their own case style
            if new is None:
                new = given[original] = self._replace(document, span, phi, words)
            if self.record:
                self.mapping.setdefault(document.id, []).append(
                    {"start": span.start, "end": span.end, "label": span.label, "original": original, "surrogate": new})
            out.append(new)
        return out

    # -- one span -------------------------------------------------------------------
    def replace(self, document: Document, span: Annotation) -> str:
        """One span's replacement (alone: see ``replace_spans`` for a note)."""
        return self.replace_spans(document, [span])[0]

    def _replace(self, document: Document, span: Annotation, phi: set[str], words: set[str]) -> str:
        original = document.text[span.start:span.end]
        key = original.strip().casefold()
        if not key:
            return original

        def bad(new: str) -> bool:
            return key in new.casefold() or new.strip().casefold() in phi

        patient = document.group
        out = self._replacement(original, span, patient, avoid=words)
        for attempt in range(1, 20):
            if not bad(out):
                return out
            out = self._replacement(original, span, patient, salt=f"retry{attempt}", avoid=words)
        if not bad(out):
            return out
        return next(f for f in ("*" * len(original), "#" * len(original)) if not bad(f))  # a run of one character

    def _replacement(self, original: str, span: Annotation, patient: str, salt: str = "",
                     avoid: set[str] = frozenset()) -> str:
        """A draw for ``original`` (``salt``: a redraw; dates and ages,
        whose replacement is fixed, then keep only their shape)."""
        category, type_ = span.category.upper(), span.type.upper()
        type_ = TYPE_ALIASES.get(type_, type_)
        if type_ == "SEX":
            said = original.strip().casefold()
            pool = SEX_WORDS["en"] if said in SEX_WORDS["en"] or (said not in SEX_WORDS["es"]
                                                                  and not self.locale.startswith("es")) else SEX_WORDS["es"]
            words = [w for w in pool if w != said]
            return _case_like(self._rng(patient, "sex", salt, original.casefold()).choice(words), original)
        if category in ("DATE", "AGE") or type_ in ("DATE", "AGE"):
            if salt:
                return self._shape(original, patient, salt)
            return self._date(original, patient) if "DATE" in (category, type_) else self._age(original, patient)
        if category == "NAME" and type_ != "USERNAME":
            return self._name(original, patient, salt, avoid)
        s = Surrogates(self._rng(patient, type_, *((salt,) if salt else ()), original.casefold()),
                       locales=((self.locale, 1.0),))
        if type_ == "CITY":
            return s.fake(self.locale).city()
        if type_ == "STATE":  # an abbreviation stays one
            name, abbr = s.state()
            return abbr if len(original.strip()) <= 3 else name
        if type_ == "COUNTRY":
            return s.country(faker_share=0.5)
        if type_ == "STREET":
            return s.street()
        if type_ == "HOSPITAL":
            return s.hospital(lists.HOSPITAL_KINDS_2014).name
        if type_ == "ORGANIZATION":
            return s.company()
        if type_ == "PROFESSION" or category == "PROFESSION":
            return s.profession()
        return self._shape(original, patient)

    def _shape(self, original: str, patient: str, salt: str = "") -> str:
        """Each digit, letter redrawn (case kept), everything else kept."""
        rng = self._rng(patient, "shape", salt, original.casefold())
        out = []
        for ch in original:
            if ch.isdigit():
                out.append(str(rng.randrange(10)))
            elif ch.isalpha():
                c = rng.choice(string.ascii_lowercase)
                out.append(c.upper() if ch.isupper() else c)
            else:
                out.append(ch)
        return "".join(out)

    def _name(self, original: str, patient: str, salt: str = "", avoid: set[str] = frozenset()) -> str:
        """Word by word: each word's draws come from one stream keyed by the
        word (and patient), redrawn while a draw contains the word or is
        another PHI word of the note."""
        def word(m: re.Match) -> str:
            w = m.group(0)
            key = w.casefold()
            if len(w) == 1:  # an initial
                rng = self._rng(patient, "initial", *((salt,) if salt else ()), key)
                return _case_like(rng.choice(string.ascii_uppercase.replace(w.upper(), "")), w)
            s = Surrogates(self._rng(patient, "name", *((salt,) if salt else ()), key), locales=((self.locale, 1.0),))
            for _ in range(50):
                fake = s.fake(self.locale)
                new = (fake.last_name() if s.chance(0.5) else fake.first_name()).split()[0]
                if key not in new.casefold() and new.casefold() not in avoid:
                    return _case_like(new, w)
            return self._shape(w, patient, f"name{salt}")  # 50 unlucky draws: letters redrawn instead

        return _NAME_WORD.sub(word, original)

    def _age(self, original: str, patient: str) -> str:
        m = re.search(r"\d+", original)
        if not m:
            return self._shape(original, patient)
        age = int(m.group(0))
        if age > 89:  # HIPAA: ages over 89 are aggregated
            new = "90+"
        else:  # one small offset per patient: ages stay consistent and plausible
            step = self._rng(patient, "age-offset").randint(1, 3)
            new = str(age + step if age + step <= 89 else age - step)
        return original[:m.start()] + new + original[m.end():]

    def _date(self, original: str, patient: str) -> str:
        offset = dt.timedelta(days=self.date_offset(patient))
        text = original.strip()
        lead, trail = original[:len(original) - len(original.lstrip())], original[len(original.rstrip()):]
        out = self._numeric_date(text, offset) or self._worded_date(text, offset)
        if out is None and re.fullmatch(r"\d{4}", text) and 1800 < int(text) < 2200:
            out = str((dt.date(int(text), 7, 1) + offset).year)
        if out is None and re.fullmatch(r"'\d\d", text):
            out = "'" + _num_like((dt.date(_full_year(text[1:]), 7, 1) + offset).year, text[1:])
        if out is None and text.lower() in _WEEKDAYS:
            day, family = _WEEKDAYS[text.lower()]
            out = _case_like(_WEEKDAY_NAMES[family][(day + offset.days) % 7], text)
        if out is None:
            return self._shape(original, patient)
        return lead + out + trail

    def _order(self, a: int, b: int) -> str:
        if a > 12 >= b:
            return "dmy"
        if b > 12 >= a:
            return "mdy"
        return self.date_order

    def _numeric_date(self, text: str, offset: dt.timedelta) -> str | None:
        m = _NUMERIC3.match(text)
        if m:
            a, sep, b, c = m.group(1), m.group(2), m.group(3), m.group(4)
            if len(a) == 4:  # year first
                y, mo, d = int(a), int(b), int(c)
                new = _make(y, mo, d, offset)
                return None if new is None else sep.join([_num_like(new.year, a), _num_like(new.month, b), _num_like(new.day, c)])
            order = self._order(int(a), int(b))
            mo, d = (int(a), int(b)) if order == "mdy" else (int(b), int(a))
            y = _full_year(c)
            new = _make(y, mo, d, offset)
            if new is None:
                return None
            first, second = (new.month, new.day) if order == "mdy" else (new.day, new.month)
            return sep.join([_num_like(first, a), _num_like(second, b), _num_like(new.year, c)])
        m = _NUMERIC2.match(text)
        if m:
            a, sep, b = m.group(1), m.group(2), m.group(3)
            if len(b) == 4:  # month/year
                new = _make(int(b), int(a), 15, offset)
                return None if new is None else f"{_num_like(new.month, a)}{sep}{new.year}"
            order = self._order(int(a), int(b))
            mo, d = (int(a), int(b)) if order == "mdy" else (int(b), int(a))
            new = _make(2000, mo, d, offset)
            if new is None:
                return None
            first, second = (new.month, new.day) if order == "mdy" else (new.day, new.month)
            return f"{_num_like(first, a)}{sep}{_num_like(second, b)}"
        return None

    def _worded_date(self, text: str, offset: dt.timedelta) -> str | None:
        months = list(_MONTH_RE.finditer(text))
        if len(months) != 1:
            return None
        mword = months[0]
        month, family = _MONTH_WORDS[mword.group(0).lower()]
        numbers = [n for n in re.finditer(r"(')?(\d+)", text)]
        year_m = next((n for n in numbers if len(n.group(2)) == 4 or n.group(1)), None)
        day_m = next((n for n in numbers if n is not year_m and 1 <= int(n.group(2)) <= 31 and len(n.group(2)) <= 2), None)
        year = _full_year(year_m.group(2)) if year_m else 2001
        new = _make(year, month, int(day_m.group(2)) if day_m else 15, offset)
        if new is None:
            return None
        pieces = [(mword.start(), mword.end(), _case_like(_month_word(new.month, family), mword.group(0)))]
        if day_m:
            pieces.append((day_m.start(2), day_m.end(2), _num_like(new.day, day_m.group(2))))
        if year_m:
            pieces.append((year_m.start(2), year_m.end(2), _num_like(new.year, year_m.group(2))))
        out = text
        for a, b, rep in sorted(pieces, reverse=True):
            out = out[:a] + rep + out[b:]
        return out


def _full_year(text: str) -> int:
    y = int(text)
    if len(text) <= 2:
        return 2000 + y if y < 50 else 1900 + y
    return y


def _make(y: int, m: int, d: int, offset: dt.timedelta) -> dt.date | None:
    try:
        return dt.date(y, m, d) + offset
    except (ValueError, OverflowError):
        return None
