"""Written dates and times for surrogates: shifting a date by a number of
days in its own written format, and drawing valid stand-ins for date- and
time-shaped digits that are not a readable date.

A date is read only when every part of it is a real calendar date ("02/30"
is not), and a time only when it is a real time of day (up to 23:59, 1 to 12
with am/pm); whatever is returned is one too. A date written with a time
("11/05/2023 22:40", "2023-11-05T22:40") has its date shifted and its time
kept (a shift by whole days leaves the time of day).
"""
from __future__ import annotations

import datetime as dt
import random
import re

from ..corpus.synth import lists

DATE_ORDERS = ("mdy", "dmy")
SPANISH_MONTHS = ("enero", "febrero", "marzo", "abril", "mayo", "junio", "julio", "agosto",
                  "septiembre", "octubre", "noviembre", "diciembre")
_MONTH_WORDS: dict[str, tuple[int, str]] = {}  # lower-case word -> (month, family)
for _i in range(12):
    _MONTH_WORDS[lists.MONTHS_ABBR[_i].lower()] = (_i + 1, "en_abbr")
    _MONTH_WORDS[lists.MONTHS[_i].lower()] = (_i + 1, "en")  # "May": read as the full name
    _MONTH_WORDS[SPANISH_MONTHS[_i]] = (_i + 1, "es")
for _i in range(12):  # "feb", "mar", "sep": English abbreviations first, so that they stay English
    _MONTH_WORDS.setdefault(SPANISH_MONTHS[_i][:3], (_i + 1, "es_abbr"))
_MONTH_WORDS["sept"] = (9, "en_sept")  # "Sept." (the corpora's dotted abbreviations)
_LETTER_EDGE = r"(?<![^\W\d_])", r"(?![^\W\d_])"  # not inside a word, digits may touch ("05NOV2023")
_MONTH_RE = re.compile(_LETTER_EDGE[0] + "(" + "|".join(sorted(map(re.escape, _MONTH_WORDS), key=len, reverse=True))
                       + ")" + _LETTER_EDGE[1], re.IGNORECASE)
SPANISH_WEEKDAYS = ("lunes", "martes", "miércoles", "jueves", "viernes", "sábado", "domingo")
_WEEKDAY_NAMES = {"en": lists.WEEKDAYS, "en_abbr": lists.WEEKDAYS_ABBR, "es": SPANISH_WEEKDAYS}
_WEEKDAYS = {w.lower(): (i, fam) for fam, names in _WEEKDAY_NAMES.items() for i, w in enumerate(names)}
_WEEKDAY_RE = re.compile(_LETTER_EDGE[0] + "(" + "|".join(sorted(map(re.escape, _WEEKDAYS), key=len, reverse=True))
                         + ")" + _LETTER_EDGE[1], re.IGNORECASE)
_NUMERIC3 = re.compile(r"^(\d{1,4})([/.\-])(\d{1,2})\2(\d{2,4})$")
_NUMERIC2 = re.compile(r"^(\d{1,2})([/.\-])(\d{1,4})$")
_COMPACT = re.compile(r"^(\d{4})(\d\d)(\d\d)$")  # 20120304
_TIME = r"\d{1,2}:\d\d(?::\d\d)?(?:\s*[AaPp]\.?[Mm]\.?)?|\d{1,2}\s*[AaPp]\.?[Mm]\.?"
TIME_RE = re.compile(rf"^(?:{_TIME})$")
_DATE_THEN_TIME = re.compile(rf"^(?P<date>.+?)(?P<sep>\s*(?:,|\bat\b|\ba las\b)?\s*|T)(?P<time>{_TIME})$", re.IGNORECASE)
_TIME_THEN_DATE = re.compile(rf"^(?P<time>{_TIME})(?P<sep>\s*(?:,|\bon\b|\bdel\b)?\s*)(?P<date>.+)$", re.IGNORECASE)
# Digits shaped like a numeric date or a time of day, anywhere in a text.
DATE_SHAPED = re.compile(r"(?<!\d)(?:\d{1,2}([/.\-])\d{1,2}\1(?:\d{4}|\d\d)|\d{4}([/.\-])\d{1,2}\2\d{1,2})(?!\d)")
TIME_SHAPED = re.compile(r"(?<!\d)(\d{1,2}):(\d\d)(?::(\d\d))?(?!\d)")


def has_month_word(text: str) -> bool:
    return bool(_MONTH_RE.search(text))


def shift(text: str, offset: dt.timedelta, date_order: str = "mdy") -> str | None:
    """``text`` (stripped) moved by ``offset`` in its own format, or None
    when it does not read as a valid date (with or without a time)."""
    out = _shift_date(text, offset, date_order)
    if out is not None:
        return out
    for pattern in (_DATE_THEN_TIME, _TIME_THEN_DATE):
        m = pattern.match(text)
        if m and valid_time(m.group("time")):
            date = _shift_date(m.group("date"), offset, date_order)
            if date is not None:
                return text[:m.start("date")] + date + text[m.end("date"):]
    return None


def valid_time(text: str) -> bool:
    m = re.match(r"(\d{1,2})(?::(\d\d)(?::(\d\d))?)?\s*([AaPp])?", text)
    if not m:
        return False
    hour, minute, second = int(m.group(1)), int(m.group(2) or 0), int(m.group(3) or 0)
    top = (1, 12) if m.group(4) else (0, 23)
    return top[0] <= hour <= top[1] and minute <= 59 and second <= 59


def valid_date(text: str) -> bool:
    """A date-shaped string (``DATE_SHAPED``) that is a real date read
    month first or day first (year first for a four-digit first part)."""
    parts = re.split(r"[/.\-]", text)
    if len(parts[0]) == 4:
        return _make(int(parts[0]), int(parts[1]), int(parts[2])) is not None
    a, b, y = int(parts[0]), int(parts[1]), _full_year(parts[2])
    return _make(y, a, b) is not None or _make(y, b, a) is not None


def redraw_shapes(text: str, rng: random.Random, date_order: str = "mdy") -> list[tuple[int, int, str]]:
    """(start, end, stand-in) for each date- or time-shaped run of digits of
    ``text``: a random valid date or time written with the same number of
    digits in each part, so a shape-kept redraw never shows an impossible one."""
    out = []
    for m in DATE_SHAPED.finditer(text):
        parts = re.split(r"([/.\-])", m.group(0))
        day = dt.date(2000, 1, 1) + dt.timedelta(days=rng.randrange(365 * 40))
        if len(parts[0]) == 4:
            values = [day.year, day.month, day.day]
        else:
            values = [day.month, day.day, day.year] if date_order == "mdy" else [day.day, day.month, day.year]
        digits = [p for p in parts[::2]]
        new = [f"{v % 10 ** len(d):0{len(d)}d}" if len(d) > 1 else str(v) if v < 10 else f"{v % 10}"
               for v, d in zip(values, digits)]
        if any(len(d) == 1 and v >= 10 for v, d in zip(values, digits)):  # "3/4/12": a one-digit part stays one
            new = [str(rng.randint(1, 9)) if len(d) == 1 else n for n, d in zip(new, digits)]
        out.append((m.start(), m.end(), "".join(n + s for n, s in zip(new, parts[1::2] + [""]))))
    for m in TIME_SHAPED.finditer(text):
        if any(a <= m.start() < b for a, b, _ in out):
            continue
        hour = rng.randrange(1, 10) if len(m.group(1)) == 1 else rng.randrange(24)
        new = f"{hour:0{len(m.group(1))}d}:{rng.randrange(60):02d}"
        if m.group(3) is not None:
            new += f":{rng.randrange(60):02d}"
        out.append((m.start(), m.end(), new))
    return out


def _month_word(month: int, family: str) -> str:
    words = {"en": lists.MONTHS, "en_abbr": lists.MONTHS_ABBR, "es": SPANISH_MONTHS,
             "es_abbr": tuple(m[:3] for m in SPANISH_MONTHS),
             "en_sept": tuple(m.rstrip(".") for m in lists.MONTHS_ABBR_DOT)}[family]
    return words[month - 1]


def case_like(new: str, old: str) -> str:
    if old.isupper() and len(old) > 1:
        return new.upper()
    if old.islower():
        return new.lower()
    if old[:1].isupper():
        return new[:1].upper() + new[1:]
    return new


def num_like(value: int, old: str) -> str:
    """``value`` written with as many digits as ``old`` (zero padding kept)."""
    if len(old) == 2:  # two digits stay two digits ("31" -> "03", "12" for a year -> "09")
        return f"{value % 100:02d}"
    return f"{value:0{len(old)}d}" if len(old) >= 3 else str(value)


def _day_like(value: int, old: str, other: str) -> str:
    """A day or month like ``old``: unpadded when its partner is written
    with one digit ("1/17/00" -> "6/1/01"), else with as many digits."""
    return str(value) if len(other) == 1 else num_like(value, old)


def _order(a: int, b: int, date_order: str) -> str:
    if a > 12 >= b:
        return "dmy"
    if b > 12 >= a:
        return "mdy"
    return date_order


def _shift_date(text: str, offset: dt.timedelta, date_order: str) -> str | None:
    out = _numeric_date(text, offset, date_order) or _worded_date(text, offset)
    if out is None and re.fullmatch(r"\d{4}", text) and 1800 < int(text) < 2200:
        out = str((dt.date(int(text), 7, 1) + offset).year)
    if out is None and re.fullmatch(r"'\d\d", text):
        out = "'" + num_like((dt.date(_full_year(text[1:]), 7, 1) + offset).year, text[1:])
    if out is None and text.lower() in _WEEKDAYS:
        day, family = _WEEKDAYS[text.lower()]
        out = case_like(_WEEKDAY_NAMES[family][(day + offset.days) % 7], text)
    return out


def _numeric_date(text: str, offset: dt.timedelta, date_order: str) -> str | None:
    m = _COMPACT.match(text)
    if m and 1800 < int(m.group(1)) < 2200:
        new = _make(int(m.group(1)), int(m.group(2)), int(m.group(3)), offset)
        return None if new is None else f"{new.year:04d}{new.month:02d}{new.day:02d}"
    m = _NUMERIC3.match(text)
    if m:
        a, sep, b, c = m.group(1), m.group(2), m.group(3), m.group(4)
        if len(a) == 4:  # year first
            new = _make(int(a), int(b), int(c), offset)
            return None if new is None else sep.join([num_like(new.year, a), num_like(new.month, b), num_like(new.day, c)])
        if len(a) == 3 or len(c) == 3:
            return None
        order = _order(int(a), int(b), date_order)
        mo, d = (int(a), int(b)) if order == "mdy" else (int(b), int(a))
        new = _make(_full_year(c), mo, d, offset)
        if new is None:
            return None
        first, second = (new.month, new.day) if order == "mdy" else (new.day, new.month)
        return sep.join([_day_like(first, a, b), _day_like(second, b, a), num_like(new.year, c)])
    m = _NUMERIC2.match(text)
    if m:
        a, sep, b = m.group(1), m.group(2), m.group(3)
        if len(b) == 4:  # month/year
            new = _make(int(b), int(a), 15, offset)
            return None if new is None else f"{num_like(new.month, a)}{sep}{new.year}"
        if len(b) == 3:
            return None
        order = _order(int(a), int(b), date_order)
        mo, d = (int(a), int(b)) if order == "mdy" else (int(b), int(a))
        new = _make(2000, mo, d, offset)
        if new is None and int(a) <= 12 and len(b) == 2:  # "10/86": month and year
            new = _make(_full_year(b), int(a), 15, offset)
            return None if new is None else f"{num_like(new.month, a)}{sep}{num_like(new.year, b)}"
        if new is None:
            return None
        first, second = (new.month, new.day) if order == "mdy" else (new.day, new.month)
        return f"{_day_like(first, a, b)}{sep}{_day_like(second, b, a)}"
    return None


def _worded_date(text: str, offset: dt.timedelta) -> str | None:
    months = list(_MONTH_RE.finditer(text))
    if len(months) != 1:
        return None
    mword = months[0]
    month, family = _MONTH_WORDS[mword.group(0).lower()]
    numbers = list(re.finditer(r"(')?(\d+)(st|nd|rd|th)?(?!\d)", text))
    year_m = next((n for n in numbers if len(n.group(2)) == 4 or n.group(1)), None)
    day_m = next((n for n in numbers if n is not year_m and 1 <= int(n.group(2)) <= 31 and len(n.group(2)) <= 2), None)
    if any(n is not year_m and n is not day_m for n in numbers):
        return None  # a number that is neither ("March 45"): not a date
    year = _full_year(year_m.group(2)) if year_m else 2001
    new = _make(year, month, int(day_m.group(2)) if day_m else 15, offset)
    if new is None:
        return None
    pieces = [(mword.start(), mword.end(), case_like(_month_word(new.month, family), mword.group(0)))]
    if family in ("en_abbr", "en_sept") and text[mword.end():mword.end() + 1] == ".":  # "Jan." -> "May", "Sept."
        pieces = [(mword.start(), mword.end() + 1, case_like(lists.MONTHS_ABBR_DOT[new.month - 1], mword.group(0)))]
    if day_m:
        old_day = day_m.group(2)
        between = text[day_m.end():mword.start()] if day_m.end() <= mword.start() else text[mword.end():day_m.start()]
        # "March 17" -> "June 1"; "03" -> "01"; glued to the month ("17-Mar", "17MAR2012"): two digits
        padded = old_day.startswith("0") or (len(old_day) == 2 and between in ("", "-"))
        day = f"{new.day:02d}" if padded else str(new.day)
        if day_m.group(3):
            day += case_like(_ordinal_suffix(new.day), day_m.group(3))
        pieces.append((day_m.start(2), day_m.end(), day))
    if year_m:
        pieces.append((year_m.start(2), year_m.end(2), num_like(new.year, year_m.group(2))))
    for w in _WEEKDAY_RE.finditer(text):  # "Monday, March 4": the weekday moves too
        day, fam = _WEEKDAYS[w.group(0).lower()]
        pieces.append((w.start(), w.end(), case_like(_WEEKDAY_NAMES[fam][(day + offset.days) % 7], w.group(0))))
    out = text
    for a, b, rep in sorted(pieces, reverse=True):
        out = out[:a] + rep + out[b:]
    return out


def _ordinal_suffix(n: int) -> str:
    return "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")


def _full_year(text: str) -> int:
    y = int(text)
    if len(text) <= 2:
        return 2000 + y if y < 50 else 1900 + y
    return y


def _make(y: int, m: int, d: int, offset: dt.timedelta = dt.timedelta(0)) -> dt.date | None:
    try:
        return dt.date(y, m, d) + offset
    except (ValueError, OverflowError):
        return None
