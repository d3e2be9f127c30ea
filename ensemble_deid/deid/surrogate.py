"""Realistic surrogate PHI for de-identified text (the synthetic corpora's
Faker machinery, ``corpus.synth.surrogates``).

Every replacement is a function of (seed, patient, kind, original text, and
for names the note's other names) only, so the same name gets the same
surrogate everywhere in a patient's notes whatever order they are processed
in (an interrupted run resumes with the same mapping), and different
patients get independent ones.

A span's surrogate must be valid for what the span *is*, whatever type a
tagger predicted for it; the text and its surroundings decide first:

- a number that reads as an age ("age 101", "101 yo", "ninety-two", under
  any label) is an age: over 89 it becomes "90+" (HIPAA), always; other
  ages move by one small offset per patient (1 to 3 years, staying under
  90), decades ("60s") by ten years;
- a span labelled DATE that reads as a clinical value (a blood pressure
  such as 142/78; one or two numbers, no four-digit year, right after a lab
  or vital sign or right before a unit; a decimal that is no date; read
  with the rest of a value the tagger cut: "78" of "142/78") is
  counted (``clinical_values``, for a warning) and, when no reading makes
  it a date, left as written: a stray DATE label must not rewrite a
  measurement unseen. So is one labelled AGE without age words ("HR 72"). One that could be a date ("A1c 3/60", "K 3.4") is
  changed as a date: the tagger may be right, and a date left as written
  would leak. The marked review copy shows both;
- dates are shifted by one offset per patient (1 to 3 years and 30 to 330
  days either way, never a whole number of weeks) in their written format
  (a time written with a date is kept), so intervals between a patient's
  dates are kept; day/month order of numeric dates by ``date_order`` ("mdy"
  or "dmy", decided by any part > 12). A span labelled DATE that does not
  read as a valid date gets a shape-kept redraw (below);
- an e-mail address is rebuilt from surrogate names on a reserved domain
  (example.com/.org/.net, RFC 2606), and so is the part of one a span holds
  ("@gmail.com": a reserved domain);
- ID-like spans (more digits than letters: SSNs, record numbers, phone
  numbers), whatever their label, and IDs, phone and fax numbers, URLs and
  anything without a generator keep their shape: each digit and letter
  redrawn, punctuation kept; digits shaped like a date or a time of day
  become a valid one, never an impossible one;
- ZIP codes: a real ZIP code in the surrogate of its state (the state of a
  state span right before it, else the one its digits belong to), or in the
  state written before it when no span holds that state (it stays), so
  city, state and ZIP of an address stay coherent;
- names keep their parts (``surrogate_names``): first names become first
  names (of the same sex where the name lists know it), surnames surnames,
  initials initials consistent with the note's surrogate names, titles and
  degrees as written; each word maps to the same surrogate word in a
  patient's notes, so "John Smith", "Smith, John" and "J. Smith" stay
  consistent. A word alone that the lists do not know is a first name
  before a capitalised word the tagger left ("Kimon Longerbeam") or after
  "Surname, ". A capitalised span that is not a profession word, right after
  a title or a name, is a name whatever its label ("Dr. Peter Vukovic"). No
  surrogate name is an occupation word ("Farmer");
- places, hospitals, organisations and professions: drawn from the generators.

A replacement never contains the original, nor equals another PHI string of
the same note (both compared case-insensitively): a draw that does is redrawn
from the same seeded stream (so it stays a function of the inputs above and
of the note's PHI), a name word word by word, a date by a few more days.
The exceptions are ages over 89 ("90" -> "90+") and clinical values left as written.
Within a note, one string gets one surrogate, whatever types it was
predicted with (``replace_spans``); an age or a kept value is decided per
occurrence. Avoiding the note's other PHI is the one exception to
consistency: a note where a patient's surrogate is another PHI string
(word) gets a redraw.
"""
from __future__ import annotations

import datetime as dt
import random
import re
import string
from dataclasses import dataclass, field

from ..corpus.document import Annotation, Document
from ..corpus.synth import lists
from ..corpus.synth.surrogates import Surrogates, number_word, sub_seed
from ..errors import ParameterError, did_you_mean
from . import surrogate_dates as dates
from . import surrogate_names as names
from .surrogate_dates import DATE_ORDERS, SPANISH_MONTHS, case_like, num_like  # noqa: F401 (re-exported)

# Other corpora's types that have an i2b2 counterpart (MEDDOCAN's Spanish ones).
TYPE_ALIASES = {"CALLE": "STREET", "PAIS": "COUNTRY", "TERRITORIO": "CITY", "INSTITUCION": "ORGANIZATION",
                "CENTRO_SALUD": "HOSPITAL", "PROFESION": "PROFESSION", "SEXO_SUJETO_ASISTENCIA": "SEX",
                "CORREO_ELECTRONICO": "EMAIL"}
SEX_WORDS = {"es": ("varón", "mujer", "hombre"), "en": ("female", "male", "woman", "man")}
RESERVED_DOMAINS = ("example.com", "example.org", "example.net")  # RFC 2606
_NAME_WORD = re.compile(r"[^\W\d_]+")
_EMAIL = re.compile(r"^([^@\s]+)@([^@\s]+\.[^@\s.]+)$")
_EMAIL_PART = re.compile(r"^(?=[^@\s]*@?[^@\s]*$)\S*[^\W\d_]\S*$")  # no space, at most one "@", a letter
_HOST = re.compile(r"(?i)^[\w-]+(?:\.[\w-]+)*\.[a-z]{2,6}$")
_ZIP = re.compile(r"^(\d{5})(-\d{4})?$")
_NUMBER = re.compile(r"\d+")
# What makes a number an age: the words before it ("age 101", "aged", "edad") or after it ("101 yo", "años").
_AGE_BEFORE = re.compile(r"(?i)(?<![^\W\d_])(?:age[ds]?|edad(?:\s+de)?|at\s+the\s+age\s+of)\s*[:=]?\s*$")
_AGE_AFTER = re.compile(r"(?i)^\s*-?\s*(?:y\.?\s?o\b\.?|y/o|yrs?\.?[\s-]+old|years?[\s-]+old|years?\s+of\s+age"
                        r"|year-old|años|año)(?![^\W\d_])")
_NUMBER_WORDS = {w: i for i, w in enumerate(lists.NUMBER_WORDS)} | {w: n for n, w in lists.TENS_WORDS.items()}
# What makes a DATE-labelled number a clinical value: a lab or vital sign before it, a unit after it
# (also after the rest of a number the span cut: "22" of "22.5 mg").
_VITALS = ("BP", "B/P", "SBP", "DBP", "blood pressure", "pressure", "TA", "tensión arterial", "presión arterial",
           "HR", "pulse", "FC", "RR", "FR", "SpO2", "sat", "O2 sat", "saturation", "temp", "temperature",
           "weight", "wt", "height", "ht", "BMI", "glucose", "dose", "EF", "LVEF", "GCS")
_MEASURED = sorted({re.escape(w) for w in _VITALS} | {re.escape(lab[0]) for lab in lists.LABS}, key=len, reverse=True)
_CLINICAL_BEFORE = re.compile(r"(?i)(?<![^\W\d_])(?:" + "|".join(_MEASURED) + r")\s*(?:[:=]|of|is|was|de|\()?\s*$")
_CLINICAL_AFTER = re.compile(r"(?i)^(?:[.,/]\d+)?\s*(?:mm\s?hg|mg|mcg|µg|g/dl|mg/dl|mmol|meq|kg|lbs?|ml|cc|units?|iu"
                             r"|bpm|%|°|/min|x\s?\d|puffs?|tabs?|l/min|cm|mm)(?![^\W\d_])")
_CLINICAL_SHAPE = re.compile(r"^\d+(?:[.,]\d+)?(?:/\d+(?:[.,]\d+)?)?$")
_BP_SHAPE = re.compile(r"^(\d{2,3})/(\d{2,3})$")
_FIRST_BEFORE = re.compile(r"^ (?:[A-Z]\. )?[A-Z][a-z]+(?:['’-][A-Za-z]+)*(?![^\W\d_])")  # " Longerbeam", " J. Smith"
_FIRST_AFTER = re.compile(r"(?<![^\W\d_])[A-Z][A-Za-z]+(?:['’-][A-Za-z]+)*, $")  # "Corriere, ", "CORRIERE, "
_TITLE_BEFORE = re.compile(r"(?<![^\W\d_])(?i:" + "|".join(sorted(names.TITLES, key=len, reverse=True))
                           + r")\.?\s+(?:[A-ZÁÉÍÓÚÑ][^\W\d_]*\.?\s+){0,2}$")


@dataclass
class Surrogator:
    """Replacement text for predicted PHI spans (see the module docstring).

    Whoever knows the seed can recompute the surrogate of a guessed original,
    so a seed is kept like a key (the default is a random one, never shown).
    ``record=True`` keeps the mapping (original -> surrogate per document) in
    ``mapping``; it contains PHI and is written only when asked for.
    ``clinical_values`` counts the DATE- or AGE-labelled spans that read as
    clinical values (a count, no text; left as written when they cannot be dates)."""

    seed: int | None = None  # None: a random one (surrogates derive from it like from a key)
    date_order: str = "mdy"
    locale: str = "en_US"
    record: bool = False
    mapping: dict[str, list[dict]] = field(default_factory=dict)
    seed_given: bool = field(init=False, default=True)  # False: drawn here (a resume may adopt the first run's)
    clinical_values: int = field(init=False, default=0)

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
        spans = list(spans)
        phi = {document.text[a.start:a.end].strip().casefold() for a in spans} - {""}
        note = _Note(document, spans, phi, {w for p in phi for w in _NAME_WORD.findall(p)})
        note.kinds = [self._kind(note, i) for i in range(len(spans))]
        note.names = self._note_names(note)
        given: dict[tuple[str, str], str] = {}
        out = []
        for i, span in enumerate(spans):
            original = document.text[span.start:span.end]
            kind = note.kinds[i]
            clinical = kind == "kept" or (kind == "date" and bool(_clinical_value(note, i)))
            key = (kind if kind in ("age", "kept") else "", original)  # exact: "Lee" and "LEE" keep their case style
            new = given.get(key)
            if new is None:
                new = given[key] = self._replace(note, i)
            if clinical:
                self.clinical_values += 1
            if self.record:
                entry = {"start": span.start, "end": span.end, "label": span.label, "original": original,
                         "surrogate": new}
                if clinical:
                    entry["clinical_value"] = "left as written" if kind == "kept" else "changed as a date"
                self.mapping.setdefault(document.id, []).append(entry)
            out.append(new)
        return out

    # -- one span -------------------------------------------------------------------
    def replace(self, document: Document, span: Annotation) -> str:
        """One span's replacement (alone: see ``replace_spans`` for a note)."""
        return self.replace_spans(document, [span])[0]

    def _kind(self, note: "_Note", i: int) -> str:
        """What the span is, from its text and surroundings first, its label second."""
        span, text = note.spans[i], note.text(i).strip()
        category, type_ = span.category.upper(), TYPE_ALIASES.get(span.type.upper(), span.type.upper())
        if not text:
            return "empty"
        if type_ == "SEX":
            return "sex"
        labelled_date = "DATE" in (category, type_) or type_ == "FECHAS"
        value = _clinical_value(note, i)  # with the rest of a number the span cut ("78" of "142/78")
        if labelled_date and value and not _date_like(value):
            return "kept"
        if _age_context(note, i):
            return "age"
        if "AGE" in (category, type_):  # a stray AGE label on a measurement ("HR 72") rewrites none either
            return "kept" if value else "age"
        if labelled_date:
            return "date"
        if _EMAIL.match(text) or (type_ == "EMAIL" and _EMAIL_PART.match(text)):
            return "email"  # whole, or the part a tagger cut ("@gmail.com", "kimon.longerbeam")
        digits, letters = sum(c.isdigit() for c in text), sum(c.isalpha() for c in text)
        if type_ == "ZIP" or (category == "LOCATION" and _ZIP.match(text)):
            return "zip"
        if digits >= 2 and digits >= letters:  # an SSN or record number labelled as a hospital or a name
            return "shape"
        if category == "NAME" and type_ != "USERNAME":
            return "name"
        if not digits and _name_context(note, i) and _looks_like_name(text):
            return "name"
        if type_ in ("CITY", "STATE", "COUNTRY", "STREET", "HOSPITAL", "ORGANIZATION"):
            return type_.lower()
        if type_ == "PROFESSION" or category == "PROFESSION":
            return "profession"
        return "shape"

    def _replace(self, note: "_Note", i: int) -> str:
        original = note.text(i)
        key = original.strip().casefold()
        kind = note.kinds[i]
        if kind in ("empty", "kept"):
            return original
        if kind == "age" and (_age_value(original) or 0) > 89:
            return self._age(original, note.patient)  # "90+" even for "90"

        def bad(new: str) -> bool:
            return key in new.casefold() or new.strip().casefold() in note.phi

        out = self._replacement(note, i)
        for attempt in range(1, 20):
            if not bad(out):
                return out
            out = self._replacement(note, i, salt=f"retry{attempt}")
        if not bad(out):
            return out
        return next(f for f in ("*" * len(original), "#" * len(original)) if not bad(f))  # a run of one character

    def _replacement(self, note: "_Note", i: int, salt: str = "") -> str:
        """A draw for span ``i`` of the note (``salt``: a redraw)."""
        original, patient, kind = note.text(i), note.patient, note.kinds[i]
        of_text = {"sex": self._sex, "age": self._age, "date": self._date, "state": self._state_text,
                   "shape": self._shape}  # (original, patient, salt)
        if kind in of_text:
            return of_text[kind](original, patient, salt)
        in_note = {"name": self._name, "email": self._email, "zip": self._zip}  # (note, i, salt): the note matters
        if kind in in_note:
            return in_note[kind](note, i, salt)
        s = Surrogates(self._rng(patient, kind.upper(), *((salt,) if salt else ()), original.casefold()),
                       locales=((self.locale, 1.0),))
        generators = {"city": lambda: s.fake(self.locale).city(), "country": lambda: s.country(faker_share=0.5),
                      "street": lambda: s.street(self.locale), "hospital": lambda: s.hospital(lists.HOSPITAL_KINDS_2014).name,
                      "organization": s.company}
        return generators.get(kind, s.profession)()

    def _sex(self, original: str, patient: str, salt: str = "") -> str:
        said = original.strip().casefold()
        pool = SEX_WORDS["en"] if said in SEX_WORDS["en"] or (said not in SEX_WORDS["es"]
                                                              and not self.locale.startswith("es")) else SEX_WORDS["es"]
        words = [w for w in pool if w != said]
        return case_like(self._rng(patient, "sex", salt, original.casefold()).choice(words), original)

    # -- shapes -----------------------------------------------------------------------
    def _shape(self, original: str, patient: str, salt: str = "") -> str:
        """Each digit, letter redrawn (case kept), everything else kept;
        digits shaped like a date or a time become a valid one."""
        rng = self._rng(patient, "shape", salt, original.casefold())
        fixed = {}
        for a, b, new in dates.redraw_shapes(original, rng, self.date_order):
            fixed.update({a + k: c for k, c in enumerate(new)})
        out = []
        for k, ch in enumerate(original):
            if k in fixed:
                out.append(fixed[k])
            elif ch.isdigit():
                out.append(str(rng.randrange(10)))
            elif ch.isalpha():
                c = rng.choice(string.ascii_lowercase)
                out.append(c.upper() if ch.isupper() else c)
            else:
                out.append(ch)
        return "".join(out)

    # -- ages and dates -----------------------------------------------------------------
    def _age(self, original: str, patient: str, salt: str = "") -> str:
        m = _NUMBER.search(original)
        if m:
            age, start, end, written = int(m.group(0)), m.start(), m.end(), None
        else:
            found = _number_in_words(original)
            if found is None:
                return self._shape(original, patient, salt)
            age, start, end = found
            written = original[start:end]
        decade = original[end:end + 1] == "s" and age % 10 == 0 and written is None  # "60s"
        if age > 89:  # HIPAA: ages over 89 are aggregated
            return original[:start] + "90+" + original[end + decade:]
        rng = self._rng(patient, "age-offset", *((salt,) if salt else ()))
        if decade:  # a decade moves by ten years, staying a decade under 90
            new = age + 10 if age + 10 <= 80 and (age < 20 or rng.random() < 0.5) else age - 10
        else:  # one small offset per patient: ages stay consistent and plausible
            step = rng.randint(1, 3)
            new = age + step if age + step <= 89 else age - step
            new = max(new, 0) if new != age else age + step
        text = case_like(number_word(new), written) if written else str(new)
        return original[:start] + text + original[end:]

    def _date(self, original: str, patient: str, salt: str = "") -> str:
        days = self.date_offset(patient)
        if salt:  # a redraw: a few more days, still a valid date in the same format
            days += self._rng(patient, "date-redraw", salt, original.casefold()).randint(1, 27)
        text = original.strip()
        lead, trail = original[:len(original) - len(original.lstrip())], original[len(original.rstrip()):]
        out = dates.shift(text, dt.timedelta(days=days), self.date_order)
        if out is None and dates.TIME_RE.match(text) and re.search(r"[AaPp]\.?[Mm]", text):  # "10pm": a valid hour
            rng = self._rng(patient, "time", salt, original.casefold())
            m = re.match(r"\d{1,2}", text)
            hour = rng.randint(1, 9) if m.end() == 1 else rng.randint(10, 12)
            out = str(hour) + text[m.end():]
        holidays = [h.replace("the ", "") for h in lists.HOLIDAYS + lists.HOLIDAYS_RARE]
        if out is None and text.casefold() in map(str.casefold, holidays):  # "Good Friday": another holiday
            rng = self._rng(patient, "holiday", salt, text.casefold())
            out = case_like(rng.choice([h for h in holidays if h.casefold() != text.casefold()]), text)
        if out is None:  # not a date: its shape, with date and time shapes valid
            return self._shape(original, patient, salt)
        return lead + out + trail

    # -- names and e-mails -------------------------------------------------------------
    def _note_names(self, note: "_Note") -> "_NoteNames":
        """The roles the note's names give their words, and the words of
        each role in order (an initial follows the note's first name of its
        letter). Name spans one space apart are read as one name ("Peter"
        and "Vukovic" tagged apart)."""
        runs: list[list[int]] = []
        for i in sorted((i for i, k in enumerate(note.kinds) if k == "name"), key=lambda i: note.spans[i].start):
            if runs and note.document.text[note.spans[runs[-1][-1]].end:note.spans[i].start] in (" ", ", "):
                runs[-1].append(i)
            else:
                runs.append([i])
        texts = [(note.document.text[note.spans[r[0]].start:note.spans[r[-1]].end], _titled(note, r[0])) for r in runs]
        known: dict[str, str] = {}
        for text, titled in texts:
            parts = names.parse(text, self.locale, titled=titled)
            if sum(p.role != names.INITIAL for p in parts) > 1:
                for p in parts:
                    if p.role != names.INITIAL:
                        known.setdefault(text[p.start:p.end].casefold(), p.role)
        for run, (text, titled) in zip(runs, texts):
            # a word alone that the lists do not know, before a capitalised word the tagger left
            # ("Kimon Longerbeam") or after "Surname, " ("Corriere, Louetta"), is a first name
            words = names.UNIT.findall(text)
            if len(words) == 1 and not titled and words[0] == text.strip() and len(text.strip()) > 1 \
                    and names.lexical_role(text.strip(), self.locale) is None:
                before = note.document.text[:note.spans[run[0]].start][-40:]
                after = note.document.text[note.spans[run[-1]].end:][:40]
                if _FIRST_BEFORE.match(after) or _FIRST_AFTER.search(before):
                    known.setdefault(text.strip().casefold(), names.FIRST)
        by_role: dict[str, list[str]] = {names.FIRST: [], names.LAST: []}
        for text, titled in texts:
            for p in names.parse(text, self.locale, known, titled):
                if p.role != names.INITIAL:
                    by_role[p.role] += names.UNIT.findall(text[p.start:p.end])
        return _NoteNames(known, by_role)

    def _name(self, note: "_Note", i: int, salt: str = "") -> str:
        original = note.text(i)
        parts = names.parse(original, self.locale, note.names.known, _titled(note, i))
        if not parts:
            return self._shape(original, note.patient, salt)
        out = original
        for part, role in reversed(list(zip(parts, names.initial_roles(parts)))):
            seg = original[part.start:part.end]
            if part.role == names.INITIAL:
                new = case_like(self._initial(note, seg, role, salt), seg)
            else:
                new = re.sub(r"[^\W\d_]+(?:['’][^\W\d_]+)*",
                             lambda m: case_like(self._name_word(m.group(0), part.role, note, salt), m.group(0)), seg)
            out = out[:part.start] + new + out[part.end:]
        return out

    def _name_word(self, word: str, role: str, note: "_Note", salt: str = "") -> str:
        """One word's surrogate in its role: one stream per (patient, role,
        word), redrawn while a draw contains the word, starts with its letter
        (initials must differ), is another PHI word of the note or an occupation."""
        key = word.casefold()
        s = Surrogates(self._rng(note.patient, "name", role, *((salt,) if salt else ()), key),
                       locales=((self.locale, 1.0),))
        sex = names.sex_of(word, self.locale) if role == names.FIRST else None
        for _ in range(60):
            fake = s.fake(self.locale)
            if role == names.LAST:
                new = fake.last_name()
            else:
                new = {"F": fake.first_name_female, "M": fake.first_name_male}.get(sex, fake.first_name)()
            low = new.casefold()
            if (" " in new or key in low or low[0] == key[0] or low in note.words
                    or low in names.OCCUPATION_WORDS):
                continue
            return new
        return self._shape(word, note.patient, f"name{salt}")  # 60 unlucky draws: letters redrawn instead

    def _initial(self, note: "_Note", letter: str, role: str, salt: str = "") -> str:
        """The initial of the surrogate of the note's first name (or surname)
        of that letter, else a letter drawn per patient; never the same letter."""
        for word in note.names.by_role.get(role, ()):
            if word[0].casefold() == letter.casefold():
                new = self._name_word(word, role, note, salt)
                if new[0].casefold() != letter.casefold():
                    return new[0].upper()
        rng = self._rng(note.patient, "initial", role, *((salt,) if salt else ()), letter.casefold())
        return rng.choice(string.ascii_uppercase.replace(letter.upper(), ""))

    def _email(self, note: "_Note", i: int, salt: str = "") -> str:
        """The local part's name words become surrogate names (first, then
        last), its digits other digits; the domain a reserved one. A span
        holding only part of an address is rebuilt the same way: the domain
        ("@gmail.com", "gmail.com" after an "@") or the local part."""
        original = note.text(i)
        text = original.strip()
        whole = _EMAIL.match(text)
        if whole:
            local, domain = whole.groups()
        elif "@" in text:
            local, domain = text.split("@", 1)
        elif note.before(i).endswith("@") or (not note.after(i).startswith("@") and _HOST.match(text)):
            local, domain = "", text
        else:
            local, domain = text, ""
        pieces = re.split(r"([._+-]|\d+)", local)
        words = [k for k, p in enumerate(pieces) if p and p[0].isalpha()]
        rng = self._rng(note.patient, "email", salt, text.casefold())
        for n, k in enumerate(words):
            p = pieces[k]
            if len(p) == 1:
                pieces[k] = case_like(rng.choice(string.ascii_lowercase.replace(p.lower(), "")), p)
                continue
            role = note.names.known.get(p.casefold()) or (
                names.FIRST if n == 0 and len(words) > 1 else names.LAST if len(words) > 1
                else names.lexical_role(p, self.locale) or names.LAST)
            new = case_like(self._name_word(p, role, note, salt), p)
            pieces[k] = _ascii(new) or new  # "Castejón" -> "castejon"
        pieces = ["".join(str(rng.randrange(10)) for _ in p) if p.isdigit() else p for p in pieces]
        new = "".join(pieces) + ("@" if "@" in text else "")
        if domain:
            tld = domain.rsplit(".", 1)[-1].lower()
            hosts = [d for d in RESERVED_DOMAINS if d != domain.lower()]  # "@example.com" tagged: another one
            new += next((d for d in hosts if d.endswith("." + tld)), hosts[0])
        return original.replace(text, new)

    # -- places ------------------------------------------------------------------------
    def _state(self, original: str, patient: str, salt: str = "") -> tuple[str, str]:
        """The surrogate state (name, abbreviation) of a state however written
        ("MA", "Mass.", "Massachusetts" give the same one)."""
        said = _STATE_KEYS.get(original.strip().rstrip(".").casefold(), original.strip().casefold())
        rng = self._rng(patient, "state", *((salt,) if salt else ()), said)
        return rng.choice([st for st in lists.STATES if st[1].casefold() != said])

    def _state_text(self, original: str, patient: str, salt: str = "") -> str:
        if self.locale.startswith("es"):
            s = Surrogates(self._rng(patient, "STATE", salt, original.casefold()), locales=((self.locale, 1.0),))
            return s.fake(self.locale).state()
        name, abbr = self._state(original, patient, salt)
        return case_like(abbr if len(original.strip()) <= 3 else name, original.strip())

    def _zip(self, note: "_Note", i: int, salt: str = "") -> str:
        """A ZIP code of the surrogate state: the state written before it, else
        the one its digits belong to, else one drawn for the code."""
        original = note.text(i)
        text = original.strip()
        m = _ZIP.match(text)
        if not m:
            return self._shape(original, note.patient, salt)
        fake = Surrogates(self._rng(note.patient, "zip", salt, text.casefold())).fake(
            "es_ES" if self.locale.startswith("es") else "en_US")
        if self.locale.startswith("es"):
            new = fake.postcode()
        elif note.state_before(i) is None and note.written_state_before(i):  # "IL 62704", IL not tagged: it stays
            new = fake.zipcode_in_state(note.written_state_before(i))
        else:
            state = note.state_before(i) or _zip_state(m.group(1)) or text
            new = fake.zipcode_in_state(self._state(state, note.patient)[1])
        if m.group(2):
            new += "-" + fake.numerify("####")
        return original.replace(text, new)


@dataclass
class _NoteNames:
    known: dict[str, str]  # word (casefolded) -> role, from the note's names of several words
    by_role: dict[str, list[str]]  # the note's name words of each role, in order


class _Note:
    """One note's spans and what replacing them needs to know of the note."""

    def __init__(self, document: Document, spans: list, phi: set[str], words: set[str]):
        self.document, self.spans, self.phi, self.words = document, spans, phi, words
        self.patient = document.group
        self.kinds: list[str] = []
        self.names = _NoteNames({}, {})

    def text(self, i: int) -> str:
        return self.document.text[self.spans[i].start:self.spans[i].end]

    def before(self, i: int, width: int = 40) -> str:
        """The text before span ``i`` on its line."""
        return self.document.text[max(0, self.spans[i].start - width):self.spans[i].start].rsplit("\n", 1)[-1]

    def after(self, i: int, width: int = 30) -> str:
        return self.document.text[self.spans[i].end:self.spans[i].end + width].split("\n", 1)[0]

    def written_state_before(self, i: int) -> str | None:
        """The abbreviation of a US state written right before span ``i`` and
        not tagged ("Springfield, IL 62704"): it is left as written."""
        before = self.before(i)
        if before[-1:] not in (" ", ","):
            return None  # "IL62704": no state word of its own
        words = before.rstrip(" ,").split()
        for n in (3, 2, 1):
            said = " ".join(words[-n:]).rstrip(".") if len(words) >= n else ""
            if said and (len(said) > 2 or said.isupper()) and said.casefold() in _STATE_KEYS:
                start = self.spans[i].start - len(before) + before.rfind(said)
                if not any(a.start < start + len(said) and start < a.end for a in self.spans):
                    return _STATE_KEYS[said.casefold()].upper()
        return None

    def state_before(self, i: int) -> str | None:
        """The text of a state span a few characters before span ``i`` ("MA 02114")."""
        for j, kind in enumerate(self.kinds):
            gap = self.document.text[self.spans[j].end:self.spans[i].start]
            if kind == "state" and 0 <= len(gap) <= 3 and not gap.strip(" ,"):
                return self.text(j)
        return None


def _clinical_value(note: _Note, i: int) -> str:
    """The value span ``i`` is part of when it reads as a clinical one, else
    "": a number (or two, no four-digit year) with a lab or vital sign
    before it or a unit after it, or shaped like a blood pressure, or a
    decimal that is no date. A span the tagger cut out of a value ("78" of
    "BP 142/78") is read with the rest of it."""
    text, before, after = note.text(i).strip(), note.before(i), note.after(i)
    head = re.search(r"(?<![\d./])\d+/$", before)
    tail = re.match(r"/\d+(?![\d./])", after)
    if head:
        before, text = before[:head.start()], head.group(0) + text
    if tail:
        after, text = after[tail.end():], text + tail.group(0)
    if not _CLINICAL_SHAPE.match(text) or re.search(r"\d{4}", text):
        return ""
    if _CLINICAL_BEFORE.search(before) or _CLINICAL_AFTER.match(after):
        return text
    bp = _BP_SHAPE.match(text)
    bp = bp and int(bp.group(1)) > int(bp.group(2)) and int(bp.group(1)) >= 50  # systolic over diastolic, not "10/86"
    return text if bp or re.search(r"\d[.,]\d", text) else ""


def _date_like(text: str) -> bool:
    """Reads as a valid date, month or day first (a bare "57" as a year)."""
    return any(dates.shift(text, dt.timedelta(0), order) is not None for order in DATE_ORDERS)


def _age_context(note: _Note, i: int) -> bool:
    """One number (or a number in words) with age words before or after it."""
    text = note.text(i)
    numbers = _NUMBER.findall(text)
    if len(numbers) > 1 or (not numbers and _number_in_words(text) is None):
        return False
    if numbers:
        m = _NUMBER.search(text)
        start, end = m.start(), m.end()
    else:
        _, start, end = _number_in_words(text)
    before, after = note.before(i) + text[:start], text[end:] + note.after(i)
    return bool(_AGE_BEFORE.search(before) or _AGE_AFTER.match(after))


def _age_value(text: str) -> int | None:
    m = _NUMBER.search(text)
    if m:
        return int(m.group(0))
    found = _number_in_words(text)
    return None if found is None else found[0]


def _number_in_words(text: str) -> tuple[int, int, int] | None:
    """(value, start, end) of an English number in words ("ninety-two",
    "one hundred and one") in ``text``, or None."""
    vocab = "|".join(sorted([*_NUMBER_WORDS, "hundred"], key=len, reverse=True))
    m = re.search(rf"(?i)(?<![^\W\d_])(?:{vocab})(?:(?:[\s-]+|\s+and\s+)(?:{vocab}))*(?![^\W\d_])", text)
    if not m:
        return None
    total = 0
    for w in re.findall(r"[a-z]+", m.group(0).lower()):
        if w == "hundred":
            total = max(total, 1) * 100
        elif w != "and":
            total += _NUMBER_WORDS[w]
    return total, m.start(), m.end()


def _titled(note: _Note, i: int) -> bool:
    return bool(re.search(r"(?<![^\W\d_])(?i:" + "|".join(names.TITLES) + r")\.?\s+$", note.before(i)))


def _name_context(note: _Note, i: int) -> bool:
    """Right after a title (and up to two capitalised words), or a name span
    right before or after it across one space."""
    if _TITLE_BEFORE.search(note.before(i)):
        return True
    start, end = note.spans[i].start, note.spans[i].end
    for j, other in enumerate(note.spans):
        if j != i and other.category.upper() == "NAME" and _NAME_WORD.search(note.text(j)) and (
                note.document.text[other.end:start] == " " or note.document.text[end:other.start] == " "):
            return True
    return False


def _looks_like_name(text: str) -> bool:
    units = names.UNIT.findall(text)
    return 0 < len(units) <= 3 and all(u[0].isupper() for u in units) and not any(
        w.casefold() in names.OCCUPATION_WORDS for u in units for w in re.split(r"[-'’]", u)) \
        and not dates.has_month_word(text)


def _ascii(word: str) -> str:
    import unicodedata

    return "".join(c for c in unicodedata.normalize("NFKD", word) if c.isascii())


_STATE_KEYS = {k.casefold(): abbr.casefold() for name, abbr in lists.STATES for k in (name, abbr)}


def _zip_state(code: str) -> str | None:
    """The US state whose ZIP code range holds ``code`` (Faker's table)."""
    from faker.providers.address.en_US import Provider

    value = int(code)
    for abbr, (low, high) in Provider.states_postcode.items():
        if low <= value <= high:
            return abbr
    return None
