"""Seeded surrogate PHI: people, dates, ages, contacts, IDs and places.

Everything random goes through one ``random.Random`` and Faker instances
reseeded from it, so output depends only on the seed (and the pinned Faker
version), never on today's date, hash randomisation or set ordering.
"""
from __future__ import annotations

import datetime as dt
import hashlib
import random
import string
from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence, TypeVar

from . import lists
from .builder import Piece

if TYPE_CHECKING:  # pragma: no cover
    from faker import Faker

T = TypeVar("T")

_FAKERS: dict[str, "Faker"] = {}


def sub_seed(*parts: object) -> int:
    """A stable 63-bit seed from any parts (independent of PYTHONHASHSEED)."""
    digest = hashlib.sha256("\x1f".join(map(str, parts)).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def faker_for(locale: str) -> "Faker":
    """One shared Faker per locale; callers reseed it before every use."""
    fake = _FAKERS.get(locale)
    if fake is None:
        from faker import Faker  # imported on first use: it is slow to load

        fake = _FAKERS[locale] = Faker(locale)
    return fake


def weighted(rng: random.Random, table: Sequence[tuple[T, float]]) -> T:
    """Pick from ``[(value, weight), ...]``."""
    total = sum(w for _, w in table)
    x = rng.random() * total
    for value, w in table:
        x -= w
        if x < 0:
            return value
    return table[-1][0]


@dataclass(frozen=True)
class Person:
    first: str
    last: str
    middle: str  # an initial
    sex: str  # "F" or "M"

    @property
    def initials(self) -> str:
        return self.first[0] + self.last[0]


@dataclass(frozen=True)
class Hospital:
    name: str
    short: str  # a shorter spoken form ("Bayview")
    abbr: str  # initials ("BMH")


class Surrogates:
    """PHI generators over one rng. ``locales`` weights the Faker locales of
    names; ``word_name_rate`` is the share of surnames that are words."""

    def __init__(
        self,
        rng: random.Random,
        locales: Sequence[tuple[str, float]] = (("en_US", 1.0),),
        word_name_rate: float = 0.08,
        lower_name_rate: float = 0.0,
    ):
        self.rng = rng
        self.locales = tuple(locales)
        self.word_name_rate = word_name_rate
        self.lower_name_rate = lower_name_rate

    # -- Faker access ---------------------------------------------------------
    def fake(self, locale: str = "en_US") -> "Faker":
        fake = faker_for(locale)
        fake.seed_instance(self.rng.getrandbits(48))
        return fake

    def pick(self, seq: Sequence[T]) -> T:
        return self.rng.choice(seq)

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    # -- people -----------------------------------------------------------------
    def person(self, sex: str | None = None, locale: str | None = None) -> Person:
        sex = sex or self.pick("FM")
        locale = locale or weighted(self.rng, self.locales)
        fake = self.fake(locale)
        first = fake.first_name_female() if sex == "F" else fake.first_name_male()
        last = fake.last_name()
        if self.chance(self.word_name_rate):
            last = self.pick(lists.WORD_SURNAMES + lists.EPONYM_SURNAMES)
        elif self.chance(self.word_name_rate / 3):
            first = self.pick(lists.WORD_FIRST_NAMES)
        first = first.split()[0]
        return Person(first, last, self.pick(string.ascii_uppercase), sex)

    def name(self, person: Person, form: str, type_: str) -> list[Piece]:
        """The person's name in one of many written forms, as PHI pieces
        (now and then all lower case, as typed in a hurry).

        Forms: full, full_mi, last_first, initial_last, first, last, initials,
        upper_full, upper_last_first, last_comma_first_mi, last_initial,
        first_initial, initials_dotted, upper_last.
        """
        pieces = self._name(person, form, type_)
        if self.lower_name_rate and form not in ("initials", "initials_dotted") and self.chance(self.lower_name_rate):
            pieces = [(text.lower(), t) for text, t in pieces]
        return pieces

    def _name(self, person: Person, form: str, type_: str) -> list[Piece]:
        p = person
        if form == "full":
            return [(f"{p.first} {p.last}", type_)]
        if form == "full_mi":
            return [(f"{p.first} {p.middle}. {p.last}", type_)]
        if form == "last_first":
            return [(f"{p.last}, {p.first}", type_)]
        if form == "last_comma_first_mi":
            return [(f"{p.last}, {p.first} {p.middle}", type_)]
        if form == "initial_last":
            return [(f"{p.first[0]}. {p.last}", type_)]
        if form == "first":
            return [(p.first, type_)]
        if form == "last":
            return [(p.last, type_)]
        if form == "initials":
            return [(p.initials, type_)]
        if form == "upper_full":
            return [(f"{p.first} {p.last}".upper(), type_)]
        if form == "upper_last_first":
            return [(f"{p.last}, {p.first}".upper(), type_)]
        if form == "last_initial":  # "Smith J", "Smith, J."
            return [(self.pick((f"{p.last} {p.first[0]}", f"{p.last}, {p.first[0]}.")), type_)]
        if form == "first_initial":  # "John S."
            return [(f"{p.first} {p.last[0]}.", type_)]
        if form == "initials_dotted":  # "J.S.", "J. S."
            return [(self.pick((f"{p.first[0]}.{p.last[0]}.", f"{p.first[0]}. {p.last[0]}.")), type_)]
        if form == "upper_last":
            return [(p.last.upper(), type_)]
        raise ValueError(f"unknown name form {form!r}")

    def username(self, person: Person) -> str:
        r = self.rng.randrange(6)
        if r == 0:
            return (person.first[0] + person.last).lower()[:8]
        if r == 1:
            return (person.first[0] + person.middle + person.last[0]).lower()
        if r == 2:
            return person.initials.lower()
        if r == 3:
            return (person.first[0] + person.last[:5] + str(self.rng.randrange(1, 9))).lower()
        if r == 4:
            return (person.first[0] + person.middle + person.last[0]).upper()
        return self.fake().user_name()

    # -- dates ------------------------------------------------------------------
    def date_between(self, start: dt.date, end: dt.date) -> dt.date:
        return dt.date.fromordinal(self.rng.randint(start.toordinal(), end.toordinal()))

    def format_date(self, d: dt.date, fmt: str) -> str:
        """One of many written date formats (see DATE_FORMATS)."""
        y, m, day = d.year, d.month, d.day
        month, mon = lists.MONTHS[m - 1], lists.MONTHS_ABBR[m - 1]
        mon_dot = lists.MONTHS_ABBR_DOT[m - 1]
        yy = f"{y % 100:02d}"
        ordinal = _ordinal(day)
        table = {
            "iso": f"{y:04d}-{m:02d}-{day:02d}",
            "mdy": f"{m:02d}/{day:02d}/{y}",
            "mdy_short": f"{m}/{day}/{yy}",
            "mdy_nopad": f"{m}/{day}/{y}",
            "mdy_dash": f"{m:02d}-{day:02d}-{yy}",
            "mdy_dot": f"{m:02d}.{day:02d}.{y}",
            "md": f"{m}/{day}",
            "my": f"{m:02d}/{y}",
            "my_short": f"{m}/{yy}",
            "month_day_year": f"{month} {day}, {y}",
            "mon_day_year": f"{mon} {day} {y}",
            "day_month_year": f"{day} {month} {y}",
            "dmon_y": f"{day:02d}-{mon}-{y}",
            "month_day": f"{month} {day}",
            "month_ordinal": f"{month} {ordinal}",
            "ordinal_of_month": f"{ordinal} of {month}",
            "month_year": f"{month} {y}",
            "mon_year": f"{mon} {y}",
            "month_of_year": f"{month} of {y}",
            "mon_apos_yy": f"{mon} '{yy}",
            "month": month,
            "year": f"{y}",
            "apos_yy": f"'{yy}",
            "weekday": lists.WEEKDAYS[d.weekday()],
            "weekday_abbr": lists.WEEKDAYS_ABBR[d.weekday()],
            "compact": f"{y:04d}{m:02d}{day:02d}",
            "upper_mon": f"{day:02d}{mon.upper()}{y}",
            # version 3: rarer shapes, most of them boosted in test splits
            "mdy_pad_short": f"{m:02d}/{day:02d}/{yy}",
            "ymd_slash": f"{y:04d}/{m:02d}/{day:02d}",
            "mdy_dash_long": f"{m}-{day}-{y}",
            "md_dash": f"{m}-{day}",
            "md_pad": f"{m:02d}/{day:02d}",
            "mon_dot_day": f"{mon_dot} {day}",
            "mon_day": f"{mon} {day}",
            "mon_day_comma_year": f"{mon_dot} {day}, {y}",
            "mon_dot_year": f"{mon_dot} {y}",
            "mon_dash_yy": f"{mon}-{yy}",
            "day_mon": f"{day} {mon}",
            "upper_month_day_year": f"{month.upper()} {day}, {y}",
            "lower_mon_day": f"{mon.lower()} {day}",
            "lower_month_year": f"{month.lower()} {y}",
            "yy": yy,
            "dmy_slash": f"{day}/{m}/{y}",
            "month_comma_year": f"{month}, {y}",
            # typed in a hurry: stray spaces and slashes, dots, no spaces
            "mdy_spaced": f"{m}/ {day}/{yy}" if day % 2 else f"{m} /{day}/{yy}",
            "mdy_double_slash": f"{m}//{day}/{yy}" if day % 2 else f"{m}/{day}//{yy}",
            "md_dot": f"{m}.{day}",
            "mdy_dot_short": f"{m}.{day}.{yy}",
            "month_nospace": f"{mon}{day}",
            "month_day_comma_tight": f"{month} {day},{y}",
            "lower_month": month.lower(),
        }
        try:
            return table[fmt]
        except KeyError:
            raise ValueError(f"unknown date format {fmt!r}") from None

    def holiday(self, rare_boost: float = 1.0) -> str:
        """A holiday (a DATE); the rarer ones are boosted in test splits."""
        table = [(h, 1.0) for h in lists.HOLIDAYS] + [(h, 0.25 * rare_boost) for h in lists.HOLIDAYS_RARE]
        return weighted(self.rng, table).replace("the ", "")

    # -- ages -------------------------------------------------------------------
    def age_pieces(self, age: int, form: str, sex: str = "F") -> list[Piece]:
        """An age written in one of many ways; only the age itself is PHI."""
        pron = "her" if sex == "F" else "his"
        decade = (age // 10) * 10
        a = str(age)
        forms: dict[str, list[Piece]] = {
            "yo": [(a, "AGE"), (" yo", None)],
            "yo_glued": [(a, "AGE"), ("yo", None)],
            "y/o": [(a, "AGE"), (" y/o", None)],
            "yF": [(a, "AGE"), (" y", None)],
            "year_old": [(a, "AGE"), ("-year-old", None)],
            "year_old_sp": [(a, "AGE"), (" year old", None)],
            "word_year_old": [(number_word(age), "AGE"), ("-year-old", None)],
            "age_n": [("age ", None), (a, "AGE")],
            "aged_n": [("aged ", None), (a, "AGE")],
            "at_n": [("at ", None), (a, "AGE")],
            "at_age_word": [("at the age of ", None), (number_word(age), "AGE")],
            "mid_decade": [(f"{self.pick(('early', 'mid', 'late'))}-{decade}s", "AGE")] if age >= 20 else [("at ", None), (a, "AGE")],
            "in_her_decade": [(f"in {pron} ", None), (f"{decade}s" if age >= 20 else "teens", "AGE")] if age >= 13
            else [("at ", None), (a, "AGE")],
            "in_her_late_decade": [(f"in {pron} ", None), (f"{self.pick(('early', 'mid', 'late'))} {decade}s" if age >= 20 else "teens", "AGE")]
            if age >= 13 else [("at ", None), (a, "AGE")],
            "when_n": [(f"when {'she' if sex == 'F' else 'he'} was ", None), (a, "AGE")],
            "bare": [(a, "AGE")],
            "parens": [("(", None), (a, "AGE"), (")", None)],
            "age_colon": [("Age: ", None), (a, "AGE")],
            # version 3: rarer shapes
            "yrs": [(a, "AGE"), (self.pick((" yrs", " yrs old", " yr old", "yr")), None)],
            "yo_dots": [(a, "AGE"), (self.pick((" y.o.", " y. o.", " YO", " Y/O", "-yo")), None)],
            "years_of_age": [(a, "AGE"), (" years of age", None)],
            "word_decade": self._decade_word(age, pron),
            "word_age": [(number_word(age), "AGE")] if number_word(age) != a else [(a, "AGE")],
        }
        try:
            return forms[form]
        except KeyError:
            raise ValueError(f"unknown age form {form!r}") from None

    def _decade_word(self, age: int, pron: str) -> list[Piece]:
        """"in her sixties", "in his early twenties", "in her teens"."""
        if age < 13:
            return [("at ", None), (str(age), "AGE")]
        if age < 20 or (age // 10) * 10 not in lists.TENS_WORDS:
            word = "teens" if age < 20 else f"{(age // 10) * 10}s"
        else:
            tens = lists.TENS_WORDS[(age // 10) * 10]
            word = tens[:-1] + "ies"
            if self.chance(0.4):
                word = f"{self.pick(('early', 'mid', 'late'))} {word}"
        return [(f"in {pron} ", None), (word, "AGE")]

    def age_sex_pieces(self, age: int, sex: str, form: str) -> list[Piece]:
        """An age with the sex after it: "67 yo M", "67M", "67 y/o woman"."""
        letter = sex
        word = self.pick(("woman", "female", "lady")) if sex == "F" else self.pick(("man", "male", "gentleman"))
        a = str(age)
        if form in ("yF", "yo_glued"):
            return [(a, "AGE"), (self.pick((f" y{letter}", f"y{letter}", letter, f"yo{letter}", f" yo{letter.lower()}")), None)]
        if form in ("yo", "y/o"):
            tail = self.pick((f" {letter}", f" {letter.lower()}", f" {word}"))
            return self.age_pieces(age, form, sex) + [(tail, None)]
        if form in ("age_n", "aged_n", "at_n", "age_colon", "at_age_word", "in_her_decade",
                    "in_her_late_decade", "when_n", "years_of_age", "word_decade", "word_age"):
            return [(word + ", ", None)] + self.age_pieces(age, form, sex)
        return self.age_pieces(age, form, sex) + [(" " + word, None)]

    # -- contacts and IDs -------------------------------------------------------------
    def pattern(self, shape: str) -> str:
        """``#`` a digit, ``?`` an upper-case letter, ``@`` a lower-case one."""
        out = []
        for ch in shape:
            if ch == "#":
                out.append(str(self.rng.randrange(10)))
            elif ch == "?":
                out.append(self.pick(string.ascii_uppercase))
            elif ch == "@":
                out.append(self.pick(string.ascii_lowercase))
            else:
                out.append(ch)
        return "".join(out)

    def phone(self, form: str | None = None, area: str | None = None) -> str:
        area = area or self.pick(("617", "508", "781", "978", "413", "401", "603", "857", "774", "339"))
        form = form or weighted(self.rng, PHONE_FORMS)
        ex, num = str(self.rng.randint(200, 989)), self.pattern("####")
        return {
            "paren": f"({area}) {ex}-{num}",
            "paren_tight": f"({area}){ex}-{num}",
            "dash": f"{area}-{ex}-{num}",
            "dot": f"{area}.{ex}.{num}",
            "local": f"{ex}-{num}",
            "ext": f"x{self.pattern('#####')}",
            "pager": f"{self.pattern('#####')}",
            "digits": f"{area}{ex}{num}",
            "intl": f"1-{area}-{ex}-{num}",
        }[form]

    def email(self, person: Person) -> str:
        fake = self.fake()
        user = self.pick((f"{person.first}.{person.last}", f"{person.first[0]}{person.last}",
                          fake.user_name()))
        user = "".join(c for c in user.lower() if c.isalnum() or c == ".")
        return f"{user}@{fake.free_email_domain() if self.chance(.6) else fake.domain_name()}"

    def url(self) -> str:
        fake = self.fake()
        return self.pick((f"www.{fake.domain_name()}", fake.url().rstrip("/"), f"{fake.domain_name()}/portal"))

    def ipaddr(self) -> str:
        return ".".join(str(self.rng.randint(1, 254)) for _ in range(4))

    # -- places -------------------------------------------------------------------------
    def street(self) -> str:
        fake = self.fake()
        if self.chance(0.75):
            return fake.street_address()
        return f"{self.rng.randint(1, 999)} {fake.street_name()}"

    def zipcode(self, plus4: bool | None = None) -> str:
        z = self.pattern("0####") if self.chance(0.7) else self.pattern("#####")
        if plus4 if plus4 is not None else self.chance(0.1):
            z += "-" + self.pattern("####")
        return z

    def fictional_town(self) -> str:
        return self.fake().city()

    def state(self) -> tuple[str, str]:
        return self.pick(lists.STATES)

    def hospital(self, kinds: Sequence[str]) -> Hospital:
        r = self.rng.random()
        if r < 0.32:
            stem = self.pick(lists.HOSPITAL_STEMS)
        elif r < 0.55:
            stem = self.fake().last_name()
        elif r < 0.8:
            stem = self.pick(lists.CITIES_NE)  # "Quincy Medical Center": also a city
        else:
            stem = self.fake().city()
        kind = self.pick(kinds)
        name = f"{stem} {kind}"
        words = [w for w in name.replace("'s", "").replace(".", "").split() if w[0].isalpha()]
        abbr = "".join(w[0].upper() for w in words)
        if len(abbr) < 2:
            abbr += "H"
        return Hospital(name, stem, abbr)

    def company(self) -> str:
        fake = self.fake()
        r = self.rng.random()
        if r < 0.45:
            return fake.company()
        if r < 0.8:
            return f"{fake.last_name()} {self.pick(lists.ORG_KINDS)}"
        return f"{self.pick(lists.HOSPITAL_STEMS + lists.CITIES_NE)} {self.pick(lists.ORG_KINDS)}"

    def country(self, faker_share: float = 0.0) -> str:
        if self.chance(faker_share):
            return self.fake().country()
        return self.pick(lists.COUNTRIES)

    def foreign_city(self) -> str:
        """A town from a non-US Faker locale. (Not it_IT: its ``city()``
        depends on hash randomisation in Faker 40.54.0.)"""
        return self.fake(self.pick(("en_GB", "es_MX", "fr_FR", "pt_BR", "de_DE", "en_IE", "pl_PL"))).city()

    def school(self) -> str:
        fake = self.fake()
        r = self.rng.random()
        place = fake.last_name() if self.chance(0.5) else self.pick(lists.CITIES_NE + lists.CITIES_WIDE[:40])
        if r < 0.12:
            return f"{self.pick(lists.SCHOOL_PREFIXED)} {self.pick(lists.STATES)[0]}"
        return f"{place} {self.pick(lists.SCHOOL_KINDS)}"

    def profession(self, faker_share: float = 0.2) -> str:
        if self.chance(faker_share):
            return self.fake().job().split(",")[0].strip()
        return self.pick(lists.PROFESSIONS)

    def room(self) -> str:
        return self.pattern(self.pick(lists.ROOM_PATTERNS))


PHONE_FORMS = (
    ("paren", 5), ("dash", 4), ("paren_tight", 1), ("dot", 1), ("local", 2),
    ("ext", 1.5), ("digits", 0.5), ("intl", 0.3),
)


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def number_word(n: int) -> str:
    if n < len(lists.NUMBER_WORDS):
        return lists.NUMBER_WORDS[n]
    tens, ones = divmod(n, 10)
    if tens * 10 in lists.TENS_WORDS:
        word = lists.TENS_WORDS[tens * 10]
        return word if ones == 0 else f"{word}-{lists.NUMBER_WORDS[ones]}"
    return str(n)
