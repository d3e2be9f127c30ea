"""The 2014 style: longitudinal outpatient records of diabetic / cardiac patients.

Several records per patient (ids ``PPP-NN``); a patient's name, MRN, doctors,
address and history stay the same across records and the record dates move
forward. Records are clinic notes, consult letters, ED notes and short lab /
phone notes: record-date headers, HPI, history, medications, lab panels and
tables full of numbers, exam vitals, plans, signatures, cc lists, phone and
fax numbers, hospitals, addresses and IDs. Dates are shifted into 2060-2100,
as in the real corpus.
"""
from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass, field
from typing import Callable

from ..document import Document
from . import lists
from .builder import Composer, Noise, Piece, TextBuilder
from .surrogates import Hospital, Person, Surrogates, sub_seed, weighted

STYLE = "i2b2-2014"

# (format, weight, rare?) - rare formats are boosted in test splits.
DATE_FORMATS = (
    ("mdy", 10, False), ("mdy_short", 12, False), ("mdy_nopad", 6, False),
    ("md", 9, False), ("iso", 4, False), ("my", 3, False), ("my_short", 3, False),
    ("month_day_year", 3, False), ("year", 7, False), ("month_year", 2, False),
    ("mon_day_year", 0.6, True), ("day_month_year", 0.6, True), ("dmon_y", 0.8, True),
    ("month_day", 1.2, True), ("apos_yy", 1.0, True), ("mdy_dash", 0.8, True),
    ("mdy_dot", 0.4, True), ("weekday", 0.8, True), ("month", 0.6, True),
    ("compact", 0.3, True), ("upper_mon", 0.4, True), ("month_ordinal", 0.4, True),
    ("mon_apos_yy", 0.3, True), ("mon_year", 0.6, True),
    # version 3: shapes training sees a handful of times
    ("mdy_pad_short", 0.8, True), ("ymd_slash", 0.3, True), ("mdy_dash_long", 0.5, True),
    ("md_dash", 0.6, True), ("md_pad", 0.7, True), ("mon_dot_day", 0.5, True),
    ("mon_day", 0.5, True), ("mon_day_comma_year", 0.5, True), ("mon_dot_year", 0.3, True),
    ("mon_dash_yy", 0.3, True), ("day_mon", 0.3, True), ("upper_month_day_year", 0.3, True),
    ("lower_mon_day", 0.3, True), ("dmy_slash", 0.2, True), ("mdy_spaced", 0.3, True),
    ("mdy_double_slash", 0.2, True), ("md_dot", 0.4, True), ("mdy_dot_short", 0.3, True),
    ("month_nospace", 0.2, True), ("month_day_comma_tight", 0.2, True), ("lower_month", 0.2, True),
)
HISTORY_DATE_FORMATS = (
    ("year", 10, False), ("my", 3, False), ("my_short", 2, False),
    ("month_year", 3, False), ("mdy_short", 3, False), ("mdy", 2, False),
    ("apos_yy", 1.5, True), ("mon_year", 0.8, True), ("mon_apos_yy", 0.5, True),
    ("month_of_year", 0.4, True), ("yy", 1.5, True), ("mon_dot_year", 0.5, True),
    ("mon_dash_yy", 0.4, True), ("lower_month_year", 0.3, True), ("month_comma_year", 0.3, True),
)
AGE_FORMS = (
    ("yo", 8, False), ("y/o", 5, False), ("year_old", 7, False), ("yF", 2, False),
    ("year_old_sp", 2, False), ("yo_glued", 1.2, True), ("age_n", 1.5, False),
    ("aged_n", 0.6, True), ("word_year_old", 0.5, True), ("parens", 0.5, True),
    ("yrs", 0.8, True), ("yo_dots", 0.8, True), ("years_of_age", 0.4, True),
    ("word_age", 0.3, True), ("word_decade", 0.3, True),
)

# (form, weight, rare?) - as for dates, rare forms are boosted in test splits.
PATIENT_FORMS = (
    ("full", 4, False), ("last_first", 2, False), ("first", 1.5, False), ("upper_last_first", 1.2, False),
    ("upper_full", 0.8, False), ("full_mi", 0.8, False), ("initials", 0.6, True), ("last_comma_first_mi", 0.6, False),
    ("last_initial", 0.3, True), ("first_initial", 0.3, True), ("initials_dotted", 0.2, True), ("upper_last", 0.3, True),
)
DOCTOR_FORMS = (
    ("full", 5, False), ("full_mi", 1.5, False), ("initial_last", 1.5, False), ("last", 3, False),
    ("upper_full", 0.6, False), ("first", 0.6, True), ("last_first", 0.6, False), ("initials", 0.4, True),
    ("last_initial", 0.3, True), ("initials_dotted", 0.2, True), ("upper_last", 0.3, True),
)
# How a doctor or a relative is named where the words around do not tell
# which one is meant ("Spoke with ...", "... called today").
SHARED_FORMS = (("full", 3), ("first", 1.5), ("last", 1.5), ("initial_last", 0.6),
                ("first_initial", 0.3), ("upper_full", 0.3))
# Names mostly from en_US; some patients and doctors have names from other
# locales (not covered by US name gazetteers).
LOCALES = (("en_US", 0.82), ("es_MX", 0.04), ("en_IE", 0.03), ("it_IT", 0.03), ("pt_BR", 0.03),
           ("en_GB", 0.02), ("pl_PL", 0.015), ("fr_FR", 0.015))


def _table(formats, rare_boost: float):
    return tuple((f, w * (rare_boost if rare else 1.0)) for f, w, rare in formats)


@dataclass
class Patient2014:
    number: int
    person: Person
    age0: int
    mrn: str
    mrn_shape: str
    pcp: Person
    specialists: list[Person]
    hospital: Hospital
    other_hospital: Hospital
    street: str
    city: str
    state: tuple[str, str]
    zipcode: str
    phone: str
    relatives: list[tuple[str, Person]]
    profession: str
    employer: str
    conditions: list[str]
    drugs: list[tuple[str, str, str]]
    events: list[tuple[str, dt.date]]  # (procedure/condition, date)
    first_date: dt.date
    typist: Person
    clinic_phone: str
    clinic_fax: str
    clinic_street: str
    clinic_city: str
    clinic_zip: str
    extra: dict = field(default_factory=dict)


MRN_SHAPES = ("#######", "###-##-##", "##-###-##", "#########", "00######", "?#######",
              "###-####", "## ## ## #")


def make_patient(s: Surrogates, number: int) -> Patient2014:
    rng = s.rng
    person = s.person()
    age0 = rng.randint(38, 84)
    shape = s.pick(MRN_SHAPES)
    hospital = s.hospital(lists.HOSPITAL_KINDS_2014)
    first_date = s.date_between(dt.date(2060, 1, 1), dt.date(2094, 12, 31))
    conditions = rng.sample(lists.CONDITIONS_2014, rng.randint(3, 7))
    events = []
    for _ in range(rng.randint(1, 4)):
        what = s.pick(lists.PROCEDURES_2014 + ("MI", "CABG", "stent", "CVA", "TIA", "amputation of toe"))
        events.append((what, first_date - dt.timedelta(days=rng.randint(60, 365 * 15))))
    events.sort(key=lambda e: e[1])
    relatives = []
    for rel in rng.sample(("wife", "husband", "daughter", "son", "sister", "brother"), rng.randint(1, 3)):
        sex = "F" if rel in ("wife", "daughter", "sister") else "M"
        relative = s.person(sex)
        if rel in ("daughter", "son", "sister", "brother") and s.chance(0.6):
            relative = Person(relative.first, person.last, relative.middle, sex)
        relatives.append((rel, relative))
    state = ("Massachusetts", "MA") if s.chance(0.75) else s.state()
    city = s.pick(lists.CITIES_NE) if s.chance(0.55) else s.fictional_town()
    return Patient2014(
        number=number, person=person, age0=age0, mrn=s.pattern(shape), mrn_shape=shape,
        pcp=s.person(), specialists=[s.person() for _ in range(rng.randint(1, 3))],
        hospital=hospital, other_hospital=s.hospital(lists.HOSPITAL_KINDS_2014),
        street=s.street(), city=city, state=state, zipcode=s.zipcode(), phone=s.phone(form="paren"),
        relatives=relatives, profession=s.profession(0.3), employer=s.company(),
        conditions=conditions, drugs=rng.sample(lists.DRUGS_2014, rng.randint(5, 10)),
        events=events, first_date=first_date, typist=s.person(),
        clinic_phone=s.phone(form=s.pick(("paren", "dash"))), clinic_fax=s.phone(form=s.pick(("paren", "dash"))),
        clinic_street=s.street(), clinic_city=s.pick(lists.CITIES_NE), clinic_zip=s.zipcode(),
    )


class Record2014:
    """Writes one record of a patient."""

    def __init__(self, s: Surrogates, patient: Patient2014, index: int, date: dt.date, rare_boost: float,
                 rare_frames: float = 0.06):
        self.s = s
        self.rng = s.rng
        self.p = patient
        self.index = index
        self.date = date
        self.age = patient.age0 + (date - patient.first_date).days // 365
        self.rare_boost = rare_boost
        self.rare_frames = rare_frames
        self.date_table = _table(DATE_FORMATS, rare_boost)
        self.history_table = _table(HISTORY_DATE_FORMATS, rare_boost)
        self.age_table = _table(AGE_FORMS, rare_boost)
        self.patient_forms = _table(PATIENT_FORMS, rare_boost)
        self.doctor_forms = _table(DOCTOR_FORMS, rare_boost)
        self.b = TextBuilder()
        noise = Noise(self.rng, typo_rate=self.rng.choice((0.0, 0.006, 0.015, 0.03)),
                      space_rate=self.rng.choice((0.0, 0.005, 0.02)),
                      # some writers are careless with the casing and spelling of names and places
                      phi_case_rate=self.rng.choice((0.0, 0.0, 0.0, 0.05, 0.15, 0.35)),
                      phi_typo_rate=self.rng.choice((0.0, 0.0, 0.02, 0.06)))
        self.author = s.pick([patient.pcp] + patient.specialists)
        self.c = Composer(self.b, self.rng, self.slots(), noise)
        self.header_caps = s.chance(0.35)

    # -- slots ------------------------------------------------------------------------
    def slots(self) -> dict[str, Callable]:
        s, p = self.s, self.p
        pt = lambda form: s.name(p.person, form, "PATIENT")  # noqa: E731
        return {
            "PATIENT": lambda: pt(weighted(self.rng, self.patient_forms)),
            "PT_LAST": lambda: pt("last"),
            "PT_FIRST": lambda: pt("first"),
            "PT_FULL": lambda: pt("full"),
            "PT_INITIALS": lambda: pt("initials"),
            "MR_MRS": lambda: "Mrs." if p.person.sex == "F" else self.s.pick(("Mr.", "Mr")),
            "HE": lambda: "she" if p.person.sex == "F" else "he",
            "HIS": lambda: "her" if p.person.sex == "F" else "his",
            "SEX": lambda: s.pick(("woman", "female", "F")) if p.person.sex == "F" else s.pick(("man", "male", "M")),
            "DOCTOR": lambda: self.doctor(),
            "DR": lambda: [(s.pick(lists.NAME_TITLES) + " ", None)] + self.doctor(s.pick(("last", "last", "full", "initial_last"))),
            "AUTHOR": lambda: s.name(self.author, weighted(self.rng, self.doctor_forms), "DOCTOR"),
            "AUTHOR_FULL": lambda: s.name(self.author, s.pick(("full", "full_mi", "upper_full")), "DOCTOR"),
            "PCP": lambda: [(s.pick(lists.NAME_TITLES) + " ", None)] + s.name(p.pcp, s.pick(("last", "full")), "DOCTOR"),
            "NEWDOC": lambda: s.name(s.person(), weighted(self.rng, self.doctor_forms), "DOCTOR"),
            "RELATIVE": lambda: self.relative(),
            "DATE": lambda: self.date_near(),
            "RDATE": lambda: [(s.format_date(self.date, weighted(self.rng, self.date_table)), "DATE")],
            "PAST": lambda: self.past_date(),
            "FUTURE": lambda: self.future_date(),
            "AGE": lambda: s.age_pieces(self.age, weighted(self.rng, self.age_table), p.person.sex),
            "AGE_SEX": lambda: s.age_sex_pieces(self.age, p.person.sex, weighted(self.rng, self.age_table)),
            "REL": lambda: self.relative_phrase(),
            "HOSPITAL": lambda: [(self.hospital_name(), "HOSPITAL")],
            "OTHER_HOSPITAL": lambda: [(s.pick((p.other_hospital.name, p.other_hospital.abbr)), "HOSPITAL")],
            "HOSP_ABBR": lambda: [(p.hospital.abbr, "HOSPITAL")],
            "CITY": lambda: [(p.city, "CITY")],
            "ANYCITY": lambda: [(s.pick(lists.CITIES_NE) if s.chance(.45) else s.fictional_town(), "CITY")],
            "STATE": lambda: [(s.pick(p.state), "STATE")],
            "STREET": lambda: [(p.street, "STREET")],
            "ZIP": lambda: [(p.zipcode, "ZIP")],
            "PHONE": lambda: [(self.some_phone(), "PHONE")],
            "PT_PHONE": lambda: [(p.phone, "PHONE")],
            "CLINIC_PHONE": lambda: [(p.clinic_phone, "PHONE")],
            "FAX": lambda: [(p.clinic_fax, "FAX")],
            "PAGER": lambda: [(s.phone("pager"), "PHONE")],
            "EMAIL": lambda: [(s.email(self.author), "EMAIL")],
            "MRN": lambda: [(p.mrn, "MEDICALRECORD")],
            "IDNUM": lambda: [(s.pattern(s.pick(("?##-####", "########", "##?#####", "###-###-###", "?#####", "##-#####"))), "IDNUM")],
            "DEVICE": lambda: [(s.pattern(s.pick(("??#####", "???-####-##", "#####?"))), "DEVICE")],
            "HEALTHPLAN": lambda: [(s.pattern(s.pick(("###-##-####?", "?##########", "####-####-##"))), "HEALTHPLAN")],
            "ACCOUNT": lambda: [(s.pattern(s.pick(("##########", "?#########"))), "ACCOUNT")],
            "LICENSE": lambda: [(s.pattern(s.pick(("??#######", "MD#####"))), "LICENSE")],
            "SSN": lambda: [(s.pattern("###-##-####"), "SSN")],
            "USERNAME": lambda: [(s.username(self.author), "USERNAME")],
            "PROFESSION": lambda: [(p.profession, "PROFESSION")],
            "EMPLOYER": lambda: [(p.employer, "ORGANIZATION")],
            "ORG": lambda: [(s.pick(lists.ORGANIZATIONS_2014).replace("the ", ""), "ORGANIZATION")],
            "DEPARTMENT": lambda: [(s.pick(lists.DEPARTMENTS), "DEPARTMENT")],
            "ROOM": lambda: [(s.room(), "ROOM")],
            "COUNTRY": lambda: [(s.country(0.3), "COUNTRY")],
            "LOCOTHER": lambda: [(s.pick(lists.LOCATION_OTHER).replace("the ", ""), "LOCATION-OTHER")],
            "HOLIDAY": lambda: [(s.holiday(self.rare_boost), "DATE")],
            # non-PHI fillers
            "cond": lambda: s.pick(p.conditions),
            "drug": lambda: s.pick(p.drugs)[0],
            "proc": lambda: s.pick(lists.PROCEDURES_2014),
            "num": lambda: str(self.rng.randint(2, 12)),
            "bp": lambda: f"{self.rng.randint(104, 182)}/{self.rng.randint(58, 98)}",
            "pain": lambda: f"{self.rng.randint(0, 10)}/10",
            "lookalike": lambda: s.pick(lists.WORD_NAME_LOOKALIKES)[1],
            "d": lambda: str(self.rng.randrange(10)),
            "eponym": lambda: s.pick(lists.EPONYMS),
            "captest": lambda: s.pick(lists.CAPITALISED_TESTS_2014),
            "RELNAME": lambda: self.relative(),
            "n2": lambda: str(self.rng.randint(48, 99)),
            "n3": lambda: str(self.rng.randint(100, 380)),
            "time": lambda: f"{self.rng.randint(0, 23):02d}:{self.rng.randrange(60):02d}",
            "MD_DATE": lambda: self.md_date(),
            "SOMEONE": lambda: self.someone(),
            "SHORT_HOSPITAL": lambda: [(s.pick((p.hospital.short, p.other_hospital.short, p.hospital.abbr)), "HOSPITAL")],
            "SOMEDOC": lambda: self.someone("DOCTOR"),
            "SOMEREL": lambda: self.someone("PATIENT"),
            "ANY_PROFESSION": lambda: [(s.profession(0.6), "PROFESSION")],
            "COMPANY": lambda: [(s.company(), "ORGANIZATION")],
            "YY": lambda: [(s.format_date(self.date - dt.timedelta(days=self.rng.randint(365, 365 * 20)), "yy"), "DATE")],
        }

    def doctor(self, form: str | None = None) -> list[Piece]:
        p, s = self.p, self.s
        who = s.pick([p.pcp, p.pcp] + p.specialists + [self.author])
        if s.chance(0.15):
            who = s.person()
        if form is None:
            form = weighted(self.rng, SHARED_FORMS if s.chance(0.4) else self.doctor_forms)
        return s.name(who, form, "DOCTOR")

    def someone(self, type_: str | None = None) -> list[Piece]:
        """A doctor or a relative, named the same way either is: the type
        shows only from who the person is, not from the words around."""
        s = self.s
        form = weighted(self.rng, SHARED_FORMS)
        if type_ is None:
            type_ = "DOCTOR" if s.chance(0.5) else "PATIENT"
        if type_ == "DOCTOR":
            who = s.pick([self.p.pcp] + self.p.specialists) if s.chance(0.6) else s.person()
            return s.name(who, form, "DOCTOR")
        _, who = s.pick(self.p.relatives)
        return s.name(who, form, "PATIENT")

    def relative_phrase(self) -> list[Piece]:
        word, person = self.s.pick(self.p.relatives)
        return [(word + " ", None)] + self.s.name(person, self.s.pick(("first", "first", "full")), "PATIENT")

    def relative(self) -> list[Piece]:
        """A relative by first name, full name, or title and surname
        ("Mrs. Hill", as a doctor would be named)."""
        word, person = self.s.pick(self.p.relatives)
        if self.s.chance(0.5):
            return self.s.name(person, weighted(self.rng, SHARED_FORMS), "PATIENT")
        form = weighted(self.rng, (("first", 3), ("full", 2), ("title_last", 1), ("upper_full", 0.3)))
        if form == "title_last":
            title = "Mrs. " if word in ("wife", "daughter", "sister") else "Mr. "
            return [(title, None)] + self.s.name(person, "last", "PATIENT")
        return self.s.name(person, form, "PATIENT")

    def hospital_name(self) -> str:
        h = self.p.hospital
        return weighted(self.rng, ((h.name, 4), (h.abbr, 3), (h.short, 2), (h.name.upper(), 0.5)))

    def some_phone(self) -> str:
        return self.s.phone()

    def date_near(self) -> list[Piece]:
        d = self.date + dt.timedelta(days=self.rng.randint(-90, 20))
        return [(self.s.format_date(d, weighted(self.rng, self.date_table)), "DATE")]

    def md_date(self) -> list[Piece]:
        d = self.date + dt.timedelta(days=self.rng.randint(-120, 30))
        b = self.rare_boost
        fmt = weighted(self.rng, (("md", 5), ("md_pad", 2), ("md_dash", 1.2 * b), ("mdy_short", 1),
                                  ("md_dot", 0.6 * b), ("mdy_spaced", 0.3 * b)))
        return [(self.s.format_date(d, fmt), "DATE")]

    def past_date(self) -> list[Piece]:
        what_date = self.s.pick(self.p.events)[1] if self.p.events and self.s.chance(0.5) else \
            self.date - dt.timedelta(days=self.rng.randint(30, 365 * 12))
        return [(self.s.format_date(what_date, weighted(self.rng, self.history_table)), "DATE")]

    def future_date(self) -> list[Piece]:
        d = self.date + dt.timedelta(days=self.rng.randint(7, 200))
        fmt = weighted(self.rng, (("md", 5), ("mdy_short", 3), ("mdy", 2), ("month_day", 1),
                                  ("month", 1), ("weekday", 0.6), ("month_ordinal", 0.4)))
        return [(self.s.format_date(d, fmt), "DATE")]

    # -- helpers ----------------------------------------------------------------------
    def heading(self, *names: str) -> None:
        name = self.s.pick(names)
        if self.header_caps:
            name = name.upper()
        style = self.rng.randrange(4)
        c = self.c
        c.line()
        if style == 0:
            c.line(f"{name}:")
        elif style == 1:
            c.say(f"{name}: ")
        elif style == 2:
            c.line(name.upper())
        else:
            c.say(f"{name} - ")

    # -- sections -----------------------------------------------------------------------
    def header(self) -> None:
        c, s = self.c, self.s
        r = self.rng.random()
        iso = [(s.format_date(self.date, "iso"), "DATE")]
        if r < 0.85:
            c.say("Record date: ")
            c.emit(iso)
            c.line()
        else:
            c.say(c.choose("[[RECORD DATE|Date of visit|Visit date]]: "))
            c.emit([(s.format_date(self.date, s.pick(("mdy", "month_day_year", "mdy_short"))), "DATE")])
            c.line()
        if s.chance(0.2):
            c.line()
            c.line("{HOSPITAL}")
            if s.chance(0.4):
                c.line("{DEPARTMENT}")
            if s.chance(0.5):
                c.emit([(self.p.clinic_street, "STREET")])
                c.line()
                c.emit([(self.p.clinic_city, "CITY"), (", ", None), (self.s.pick(("MA", "Massachusetts")), "STATE"),
                        (" ", None), (self.p.clinic_zip, "ZIP")])
                c.line()
            if s.chance(0.35):
                c.line("[[Tel|Phone|Telephone|Tel.]]: {CLINIC_PHONE}[[   |  |\t| ]][[Fax|FAX|fax]]: {FAX}")
        form = self.rng.randrange(7)
        c.line()
        if form == 0:
            c.line("[[Patient|PATIENT|Name|NAME]]: {PATIENT}[[   |\t|  ]][[MRN|MR#|Unit No|Unit #|Medical Record Number]]: {MRN}")
        elif form == 1:
            c.line("RE: {PATIENT}")
            c.line("[[MRN|MR #|Med Rec #]] {MRN}")
        elif form == 2:
            # glued ID and name, as in some real header lines ("3041023MARY")
            c.emit([(self.p.mrn.replace("-", "").replace(" ", ""), "MEDICALRECORD")])
            c.emit(self.s.name(self.p.person, self.s.pick(("upper_full", "upper_last_first")), "PATIENT"))
            c.line()
        elif form == 3:
            c.line("{PATIENT} ({MRN})")
        elif form == 4:
            c.line("[[Patient Name|Pt]]: {PATIENT}")
        # forms 5, 6: no identification block
        if s.chance(0.3):
            c.line("[[Visit|Encounter|Acct|Job|Order]] [[#|No.|number]][[:|]] {IDNUM}")
        if s.chance(0.1):
            c.line("[[Insurance|Plan ID|Medicare]] [[#|no.]] {HEALTHPLAN}")

    def opening(self) -> None:
        c = self.c
        r = self.rng.random()
        if r < 0.3:
            c.line("{AGE_SEX} with {cond}, {cond} and {cond} [[here for|presents for|seen for|in for]] [[f/u|follow-up|followup|routine visit]].")
        elif r < 0.55:
            c.line("{MR_MRS} {PT_LAST} is a {AGE_SEX} [[with a history of|w/ hx of|with]] {cond} and {cond} who [[returns for follow up|comes in today|is seen today]][[ with {HIS} {REL}|]].")
        elif r < 0.7:
            c.line("[[Pt|Patient]] is a {AGE} [[gentleman|lady|patient|pt]] followed [[here|in clinic]] for {cond}. Last seen by {DR} on {DATE}.")
        elif r < 0.85:
            c.line("{PT_FIRST} is [[doing well|feeling better|not feeling well|here today]]; [[{HE} reports|reports|states]] {symptom}.")
        else:
            c.line("[[CC|Chief complaint|Reason for visit]]: [[f/u {cond}|{symptom}|med check|DM and HTN f/u|post cath f/u]]")

    def hpi(self) -> None:
        c, s = self.c, self.s
        self.heading("HPI", "History of Present Illness", "Interval History", "Subjective", "S")
        templates = [
            "[[Since last visit|Since {PAST}|Over the past {num} weeks]] {HE} [[has had|reports|notes|denies]] {symptom}.",
            "Home [[BG|blood sugars|FSBS|fingersticks]] [[running|ranging|have been]] [[1|2]]{d}0s-[[2|3]]{d}0s, [[fasting|am|post prandial]] {n3}s.",
            "Had {proc} at {HOSPITAL} on {PAST} which showed [[EF {d}0%|no ischemia|moderate LAD disease|mild MR]].",
            "[[Was|Recently]] admitted to {OTHER_HOSPITAL} {DATE} for {symptom}; [[d/c'd|discharged]] on {DATE}.",
            "{HE} [[saw|was seen by|followed up with]] {DR} in [[cardiology|endocrine|renal|podiatry|ophthalmology]] on {DATE}[[, who increased the {drug}| and had {proc}|]].",
            "Chest pain [[with exertion|at rest|radiating to L arm]], {pain}, relieved by [[NTG|nitro|rest]] within {num} min.",
            "[[Walks|Able to walk]] {num} blocks before stopping; [[no|denies]] orthopnea or PND.",
            "{lookalike}.",
            "Called {DR} on {DATE} about [[low sugars|dizziness|foot ulcer|swelling]]; [[told to hold|advised to decrease]] {drug}.",
            "[[Spoke with|Discussed with]] {PCP} [[today|by phone|on {DATE}]].",
            "{HIS} {REL} [[checks|helps with|keeps a log of]] [[his|her]] sugars[[ at home|]].",
            "[[A1c|HbA1c]] [[was|has been]] {d}.{d} on {DATE}, [[up from|down from|compared to]] {d}.{d} in {PAST}.",
            "[[Last|Prior]] {proc} {PAST}[[ at {HOSPITAL}|| (nl)|, report from {DATE}]].",
            "[[Recent|Recently had]] visit to {ANYCITY} to see family[[ over {HOLIDAY}|]].",
            "Plans [[a trip to|travel to]] {LOCOTHER} [[next month|in the summer|this fall]].",
            "[[Seen|Evaluated]] in [[ED|the ER|urgent care]] at {OTHER_HOSPITAL} on {DATE} for {symptom}.",
            "Denies fevers, chills, [[n/v|nausea, vomiting]], [[dysuria|hematuria|melena|brbpr]].",
            "[[Weight|Wt]] [[up|down]] {num} lbs since {DATE}.",
            "Taking {drug} [[as directed|irregularly|but ran out {num} days ago]].",
            "{symptom} [[began|started]] on {DATE}.",
            "[[Diagnosed with|Dx'd with|Found to have]] {cond} [[at|at age|in]] [[{YOUNGER_AGE}|{PAST}]][[, initially on {drug}|]].",
            "[[MI|First MI|Cath]] [[at age|at]] {YOUNGER_AGE}, [[treated at|at]] {OTHER_HOSPITAL}.",
            "[[No|Denies]] [[CP|chest pain]], [[SOB|DOE]], [[palpitations|syncope]]. [[Sleeping well|Appetite good|Energy fair]].",
            "[[Reports|Notes]] [[good|poor|variable]] [[adherence|compliance]] with diet; [[eating out|snacking at night|skipping lunch]] [[often|a few times a week]].",
            "[[BP at home|Home BPs]] {bp}-{bp}.",
            "[[Eye exam|Last ophtho visit|Dilated eye exam]] {DATE} [[-|:|showed]] [[no retinopathy|mild NPDR|stable]].",
            "[[He|She|Pt]] [[has not been|has been]] exercising; [[walks|swims|bikes]] {num} [[days|times]] a week.",
        ]
        for t in self.rng.sample(templates, self.rng.randint(2, 6)):
            c.say(t + self.s.pick((" ", " ", "\n", "  ")))
        c.line()
        self.frames(2, 5)

    FRAMES = [
        "[[Spoke with|Discussed with|Called|Message left for|Message from]] [[{SOMEONE}|{SOMEONE}|{NEWDOC}|{PT_FIRST}|the covering MD]] [[re:|about|regarding]] [[sugars|{drug}|the {proc}|BP]].",
        "[[{SOMEONE}|{SOMEONE}|{NEWDOC}|VNA|{captest}]] [[called|phoned|faxed]] [[today|on {DATE}|this am]] [[with|re:]] [[BG log|concerns|results]].",
        "[[Seen at|Followed at|Lives near|Works near|Moved to]] [[{HOSPITAL}|{ANYCITY}|{CITY}|{ORG}|home|the area]] [[since|in]] [[{PAST}|{DATE}|the spring]].",
        "[[h/o|hx of|also has|FH of]] [[{eponym}|{cond}|{eponym}]].",
        "[[Uses|On|Started|Stopped]] [[{captest}|{drug}|{captest}]] [[on|since|as of|x]] [[{DATE}|{DATE}|{d} wks|{pain}]].",
        "[[Pain|Discomfort]] [[{pain}|{pain}|better]] [[on|since|after]] [[{DATE}|{proc}|{captest}]].",
        "[[Wt|Weight]] {n3}, [[age|Age]] {AGE_BARE}, BMI 3{d}.",
        "[[A|a|Has a|With a]] [[{AGE_HYPH}|{d}{d}-year history of {cond}|{d}-year h/o DM|{d}0-pack-year smoking history|{AGE_HYPH}]].",
        "[[Wife|Husband|Daughter|Son|BG|Score|Dose|K]] [[is|was|now]] [[{REL_AGE_NUM}|{n2}|{d}.{d}|{REL_AGE_NUM}]][[ today| at home|]].",
        "[[NPH|Lantus|Humalog]] [[{d}0 u|{n2} units]] [[qam|qhs|bid]], [[per|as per|by]] [[{DOCTOR}|{HOSP_ABBR}|{captest} protocol]].",
        "[[{RELNAME}|{DOCTOR}|{PT_FIRST}]] [[will|may]] [[bring|fax]] [[the log|records|{captest} readings]] [[to|from]] [[{HOSPITAL}|{OTHER_HOSPITAL}|clinic]].",
        # version 3: dates against fractions, ranges and scores of the same shape
        "[[Flu shot|Eye exam|Podiatry|Seen by renal|INR checked|Labs drawn|Called]] {MD_DATE}[[.|;|,]] [[Strength|Pulses|Monofilament|Recall|Sensation]] [[{d}/5|{d}/4|{d}/10|{d}/3]].",
        "[[Walks|Checks BG|Exercises|Takes {drug}]] {d}-{d} [[times a week|x/day|times daily]]; [[seen|called|labs]] {MD_DATE}.",
        "[[MI|CABG|Stent|CVA|Cath|First MI]] [[in {YY}|at {YOUNGER_AGE}|at age {YOUNGER_AGE}|in {PAST}]][[, EF {n2}%| at {OTHER_HOSPITAL}|]].",
        "[[HR {n2}|Age {AGE_BARE}|EF {n2}%|age {AGE_BARE}|Wt {n3}|{AGE_BARE} y|A1c {d}.{d}]], [[BP {bp}|T 98.{d}|{num} lbs up]].",
        "[[Admitted|Hospitalized|Away|Visiting {RELNAME}]] {MD_DATE}-{MD_DATE}[[ at {OTHER_HOSPITAL}| in {ANYCITY}|]].",
        "[[{DR}|{lookalike}|{eponym}|Dr. on call|{DR}]] [[noted|-]] [[{cond}|{eponym}|sugars {n3}s]].",
        "[[Per|Called by|Letter from]] [[{DOCTOR}|{NEWDOC}|{RELNAME}|{captest}]] [[on|dated]] [[{DATE}|{MD_DATE}|{DATE}]].",
    ]

    # Frames that training sees only a few times (weight ``rare_frames``, higher
    # in test splits): new phrasings around names, places, jobs and companies,
    # where a tagger has only the PHI token itself to go on.
    RARE_FRAMES = [
        "[[Pt's|Patient's]] [[neighbor|friend|home aide|daughter-in-law]] {SOMEREL} [[drove|brought]] [[{HIM_HER}|pt]] [[in|here]] [[today|from {ANYCITY}]].",
        "[[Records|Notes|Films|Outside records]] [[obtained|requested|received]] from {OTHER_HOSPITAL} [[dated|from|of]] {DATE}[[ and {MD_DATE}|]].",
        "[[Retired|Former|Semi-retired]] {ANY_PROFESSION} [[from|at|with]] {COMPANY}.",
        "[[Winters|Spends winters|Summers|Spends part of the year]] in [[{ANYCITY}|{STATE}|{LOCOTHER}|{COUNTRY}]] [[since {YY}|until {MD_DATE}|from {MD_DATE}|]].",
        "[[Son|Daughter|Grandson|Niece]] [[{RELNAME}|]] is a {ANY_PROFESSION}[[ at {COMPANY}| in {ANYCITY}|||]].",
        "[[Plans|Hoping|Wants]] to [[move|relocate]] to [[{ANYCITY}|{STATE}]] [[to be near|to live with]] {SOMEREL}.",
        "{SOMEONE} [[at|from]] [[{OTHER_HOSPITAL}|{COMPANY}|{HOSPITAL}]] [[called|faxed|wrote]] [[re:|about]] [[coverage|prior auth|the referral|pt's forms]].",
        "[[Dtr|Dau|Spouse|HCP]] {SOMEREL} ({REL_AGE_NUM}) [[helps with|manages]] [[meds|insulin|appts]].",
        "[[Followed by|Sees|Saw]] {SOMEONE} [[for|re]] [[{cond}|{eponym}]] [[yearly|since {PAST}|every {num} months]].",
        "[[Drives|Driving]] to [[{ANYCITY}|{LOCOTHER}]] [[weekly|on weekends]] [[for work|to see {SOMEONE}|for church]].",
        "[[Works|Worked]] [[{num} yrs|nights|part time]] [[as a {ANY_PROFESSION}|for {COMPANY}|at {COMPANY}]].",
        "[[Cardiologist|Endo|Nephrologist|Podiatrist|Eye doctor]] [[is|=|:]] {SOMEDOC}[[ at {OTHER_HOSPITAL}| since {YY}| since {MD_DATE}|]].",
        "[[Moved|Came]] [[here|to the US]] from {COUNTRY} [[in {PAST}|at {YOUNGER_AGE}|as a child]]; [[family in|brother in|sister in]] {ANYCITY}.",
        "[[Insurance|Coverage]] [[through|via|with]] {COMPANY}[[ (employer)| retiree plan|]].",
        "{SOMEONE} [[and|&|+]] {SOMEONE} [[aware|updated|agree with plan]].",
        "[[Last|Prior]] [[A1c|visit|echo|cath]] [[{MD_DATE}|{DATE}|{YY}]] [[by|w/|with]] {SOMEONE}.",
        "[[Seen|Labs|Visits|Called]] [[{DATE}|{MD_DATE}]][[ and|,| &]] [[{DATE}|{MD_DATE}|{FUTURE}]][[; K {d}.{d}|; A1c {d}.{d}|]].",
        "[[{captest}|{proc}|Echo|ECG]] [[{YY}|{MD_DATE}|{DATE}]] [[-|:|=]] [[nl|abnl|EF {n2}%|{d}.{d}]].",
        "[[Hosp|Admit|ED visit|Fall]] [[{MD_DATE}|in {YY}|{DATE}]][[, again {MD_DATE}|, again in {YY}|]] [[for|w/]] {symptom}.",
        "[[Call|Reach|Contact|Page]] {SOMEONE} [[at|@|#|on]] [[{PHONE}|{PAGER}|{PHONE}]][[ w/ questions| if needed|]].",
        "[[Ref|Auth|Claim|Case|Req]] [[#|no.|number|]] {IDNUM}[[ per {SOMEONE}| from {COMPANY}|]].",
        "[[From|Lives in|Back from]] {ANYCITY}[[ since {YY}| as of {MD_DATE}|]]; [[{SOMEONE}|{RELNAME}]] [[lives|stays]] [[nearby|there|with pt]].",
        "[[Transferred|Came over|Switched care]] from {OTHER_HOSPITAL} [[on {MD_DATE}|in {YY}|]] [[to|into]] [[{HOSPITAL}|{SHORT_HOSPITAL}|{DEPARTMENT}]].",
        "[[Going to|Will go to|Prefers]] [[{SHORT_HOSPITAL}|{ANYCITY}|{COMPANY}]] [[for labs|for rehab|for PT|pharmacy]] [[on {MD_DATE}|{MD_DATE}|]].",
        "{SOMEONE}, {SOMEONE}[[ and {SOMEONE}|]] [[present|at bedside|on the phone]].",
        "{SOMEONE} ([[{MD_DATE}|{ANYCITY}|{MD_DATE}]]) [[re:|about]] [[{cond}|{drug}|the plan]].",
        "[[Had|Has]] [[a|an]] [[{AGE_HYPH}|{d}-yr h/o {cond}|{n2}-lb weight gain]] [[per|according to]] {SOMEONE}.",
        "[[Brother|Sister|Wife|Husband|Mother]] [[died|passed]] [[at|age]] {FAMILY_AGE}[[ of {cond}| in {YY}|]]; [[{relative_word2}|{RELNAME}]] [[is|was]] {REL_AGE_NUM}.",
    ]

    def frames(self, lo: int, hi: int) -> None:
        c = self.c
        table = [(t, 1.0) for t in self.FRAMES] + [(t, self.rare_frames) for t in self.RARE_FRAMES]
        for t in _sample_weighted(self.rng, table, self.rng.randint(lo, hi)):
            c.say(t + self.s.pick((" ", "\n")))
        c.line()

    def history(self) -> None:
        c, s = self.c, self.s
        self.heading("PMH", "Past Medical History", "Problems", "Medical History", "Problem List")
        bullet = s.pick(("- ", "* ", "", "  ", "# "))
        for i, cond in enumerate(self.rng.sample(self.p.conditions, min(len(self.p.conditions), self.rng.randint(3, 6)))):
            b = f"{i + 1}. " if bullet == "# " else bullet
            c.say(b + cond)
            if s.chance(0.35):
                c.say(c.choose("[[ dx| diagnosed| since| -|,| x]] "))
                c.emit(self.past_date())
            c.line()
        if s.chance(0.25):
            y1 = self.date.year - self.rng.randint(3, 12)
            y2 = y1 + self.rng.randint(1, 3)
            c.say(bullet.replace("# ", "- ") + c.choose("[[on insulin|on {drug}|smoker|lived abroad|dialysis]] "))
            c.emit([(str(y1), "DATE"), (s.pick(("-", " - ", " to ")), None), (str(y2), "DATE")])
            c.line()
        for what, d in self.p.events:
            if s.chance(0.6):
                c.say(bullet.replace("# ", "- ") + c.choose(f"s/p {what} [[|at |in |@ ]]"))
                if s.chance(0.4):
                    c.emit([(self.s.pick((self.p.hospital.abbr, self.p.other_hospital.abbr, self.p.other_hospital.name)), "HOSPITAL")])
                    c.say(" ")
                c.emit([(self.s.format_date(d, weighted(self.rng, self.history_table)), "DATE")])
                c.line()

    def medications(self) -> None:
        c, s = self.c, self.s
        self.heading("Medications", "Meds", "Current Medications", "MEDS", "Outpatient medications")
        sep = s.pick(("\n", "; ", ", "))
        drugs = self.rng.sample(self.p.drugs, min(len(self.p.drugs), self.rng.randint(4, 9)))
        for i, (drug, dose, freq) in enumerate(drugs):
            c.say(f"{drug} {dose}" + (f" {freq}" if s.chance(0.7) else ""))
            if s.chance(0.12):
                opener, closer = s.pick(((" (started ", ")"), (" - since ", ""), (", changed ", ""), (" (restarted ", ")")))
                c.say(opener)
                c.emit(self.date_near())
                c.say(closer)
            c.say(sep if i < len(drugs) - 1 else "")
        c.line()
        if s.chance(0.6):
            c.line("[[Allergies|ALL|Allergy]]: [[NKDA|NKA|PCN - rash|sulfa|ACE-I (cough)|codeine]]")

    def social(self) -> None:
        c, s = self.c, self.s
        self.heading("Social History", "SH", "Social Hx", "Soc Hx")
        templates = [
            "Lives [[with {HIS} {REL}|alone|with family]] in {CITY}[[, {STATE}|]].",
            "[[Works as a|Retired|Formerly a|Employed as a]] {PROFESSION}[[ at {EMPLOYER}| for {EMPLOYER}|]].",
            "[[Retired {PROFESSION}.|Former {PROFESSION}, retired {PAST}.|Works at {EMPLOYER}.|Still works as a {PROFESSION}.]]",
            "[[Tob|Tobacco|Smoking]]: [[quit {PAST}|{d}0 pk-yr history|denies|1 ppd]]. EtOH: [[social|none|{num} drinks/wk|rare]].",
            "[[Goes to|Member of]] {ORG}[[ {num}x/week|]].",
            "Originally from {COUNTRY}[[, moved here in {PAST}|]].",
            "[[Health care proxy is|HCP:|Emergency contact:]] {HIS} {REL}[[, {PT_PHONE}|]].",
        ]
        for t in self.rng.sample(templates, self.rng.randint(2, 4)):
            c.say(t + s.pick((" ", "\n")))
        c.line()

    def family(self) -> None:
        c = self.c
        self.heading("Family History", "FH", "FHx")
        c.line("[[Father|Mother|Brother|Sister]] with [[MI|DM|CAD|stroke]] [[at|age]] {FAMILY_AGE}[[; {relative_word2} with {cond}|]].")

    def studies(self) -> None:
        """Test results in prose: capitalised test names, numbers, fractions."""
        c = self.c
        self.heading("Studies", "Cardiac studies", "Data", "Diagnostics", "Imaging")
        items = [
            "Echo: EF [[{d}0|5{d}|6{d}]]%, [[mild LVH|no WMA|mild MR|LAE|inferior HK]].",
            "[[ETT|Stress test]]: {d} METS, Bruce protocol, [[no ischemia|1 mm ST depression|stopped for fatigue]].",
            "[[Persantine MIBI|MIBI]]: [[small fixed defect|no reversible defects|moderate anterior ischemia]].",
            "Cath: [[{d}0% LAD|{d}0% RCA|{d}0% LCx]], [[{d}0% OM1|patent grafts|no disease]].",
            "Holter: [[rare PVCs|NSR with PACs|{d} beats of NSVT]].", "CXR: [[no infiltrate|mild CHF|cardiomegaly]].",
            "[[ABI|ABIs]] [[0.{d}{d}|1.0{d}]] R, [[0.{d}{d}|0.9{d}]] L.", "Carotid US: [[<50%|50-69%|{d}0%]] [[R|L]] ICA stenosis.",
            "Monofilament [[{d}/10|10/10]] sites.", "Foot exam {d}/{d} pulses.", "Renal US: [[normal|small kidneys|no hydro]].",
            "Doppler: [[no DVT|biphasic flow]].", "PFTs: FEV1 {d}{d}%, FEV1/FVC 0.{d}{d}.",
        ]
        for item in self.rng.sample(items, self.rng.randint(2, 5)):
            c.line(item)

    def exam(self) -> None:
        c, s = self.c, self.s
        self.heading("Physical Exam", "PE", "Exam", "Objective", "O")
        vitals = [
            "BP {bp}", "[[HR|P|Pulse]] {n2}", "[[Wt|Weight]] {n3} [[lb|lbs|#]]",
            "T [[97.{d}|98.{d}|99.1]]", "[[O2 sat|SaO2|sat]] 9{d}% [[on RA|RA|on room air|on 2L]]",
            "RR 1{d}", "BMI 3{d}.{d}",
        ]
        c.line(s.pick((", ", "  ", "; ")).join(self.rng.sample(vitals, self.rng.randint(3, 6))))
        exams = [
            "Gen: NAD", "HEENT: [[PERRL|anicteric|OP clear]]", "Neck: [[no JVD|JVP {num} cm|no bruits]]",
            "Lungs: [[CTA b/l|clear|bibasilar crackles]]", "CV: [[RRR|irreg irreg]], [[no m/r/g|II/VI SEM at LUSB]]",
            "Abd: [[soft, NT/ND|obese, soft]]", "Ext: [[no edema|1+ edema|trace LE edema]], [[DP|PT]] pulses [[2+|1+|dopplerable]]",
            "Feet: [[no ulcers|callus at MTP|monofilament intact|decreased sensation]]",
        ]
        for e in self.rng.sample(exams, self.rng.randint(3, 6)):
            c.line(e)

    def labs(self) -> None:
        c, s = self.c, self.s
        self.heading("Labs", "Laboratory Data", "Data", "LABS", "Results")
        kind = self.rng.randrange(3)
        chosen = self.rng.sample(lists.LABS, self.rng.randint(5, 10))
        if kind == 0:
            c.say(c.choose("[[Labs|Chem|Chem 7|Lab results]] [[from |on |(|]]"))
            c.emit(self.date_near())
            c.say(c.choose("[[):|:| -| ]] "))
            c.line((", " if s.chance(.5) else " ").join(f"{name} {_lab_value(self.rng, lo, hi, d)}" for name, lo, hi, d in chosen))
        elif kind == 1:
            ncol = self.rng.randint(2, 5)
            fmt = weighted(self.rng, (("mdy", 3), ("mdy_short", 3), ("md", 2), ("iso", 1), ("mdy_nopad", 1)))
            dates = sorted(self.date - dt.timedelta(days=self.rng.randint(0, 400)) for _ in range(ncol))
            c.say(c.choose("[[Test|Lab|     |Component]]") + "\t")
            for i, d in enumerate(dates):
                c.emit([(s.format_date(d, fmt), "DATE")])
                c.say("\t" if i < ncol - 1 else "")
            c.line()
            for name, lo, hi, d in chosen:
                c.line(name + "\t" + "\t".join(_lab_value(self.rng, lo, hi, d) for _ in range(ncol)))
        else:
            for name, lo, hi, d in chosen[:5]:
                c.say(f"{name} {_lab_value(self.rng, lo, hi, d)} ")
                if s.chance(0.45):
                    c.say("(")
                    c.emit(self.date_near())
                    c.say(")")
                c.line(s.pick(("", " ", ";")))
        if s.chance(0.3):
            c.line("[[EKG|ECG]] [[{DATE}|today]]: [[NSR|sinus rhythm]] at {n2}, [[old IMI|LVH|no acute ST changes|Q waves in III, aVF]].")
        if s.chance(0.35):
            c.line("[[Accession|Specimen|Order|Req]] [[#|No.|number]] {IDNUM}")

    def maintenance(self) -> None:
        c, s = self.c, self.s
        self.heading("Health Maintenance", "HCM", "Health Care Maintenance", "Preventive")
        items = ["[[Flu shot|Influenza vaccine|Flu vaccine]]", "[[Pneumovax|PPV|Pneumococcal]]", "[[Colonoscopy|Colo|C-scope]]",
                 "[[Mammogram|Mammo]]", "[[Eye exam|Ophtho]]", "[[Podiatry|Foot exam]]", "[[Td|Tetanus]]", "[[PSA|Pap]]",
                 "[[Lipids|Lipid panel]]", "[[Microalbumin|Urine microalb]]", "[[Stress test|ETT]]", "[[Dexa|Bone density]]"]
        sep = s.pick(("\n", "; ", "\n", ", "))
        chosen = self.rng.sample(items, self.rng.randint(3, 7))
        for i, item in enumerate(chosen):
            c.say(item + s.pick((" ", ": ", " - ", " ")))
            if s.chance(0.85):
                d = self.date - dt.timedelta(days=self.rng.randint(10, 900))
                fmt = weighted(self.rng, (("my", 3), ("my_short", 3), ("mdy_short", 3), ("year", 3), ("mdy", 2),
                                          ("month_year", 1), ("apos_yy", 0.5), ("mon_year", 0.5), ("iso", 0.5)))
                c.emit([(s.format_date(d, fmt), "DATE")])
                if s.chance(0.25):
                    c.say(c.choose(" [[nl|normal|wnl|neg|- 2 polyps|due]]"))
            else:
                c.say(c.choose("[[due|never|declined|UTD]]"))
            c.say(sep if i < len(chosen) - 1 else "")
        c.line()

    def ros(self) -> None:
        c, s = self.c, self.s
        self.heading("ROS", "Review of Systems", "Review of systems")
        parts = ["[[Const|General]]: [[no fevers|no wt loss|+fatigue]]", "[[CV|Cardiac]]: [[no CP|+DOE|no palpitations]]",
                 "[[Resp|Pulm]]: [[no cough|no SOB|+wheeze]]", "GI: [[no n/v/d|no abd pain|+constipation]]",
                 "GU: [[no dysuria|+nocturia x{num}|polyuria]]", "Neuro: [[no HA|+numbness in feet|no weakness]]",
                 "Endo: [[+polydipsia|no hypoglycemic episodes|{num} lows last month]]", "Skin: [[no rashes|no ulcers]]",
                 "Psych: [[mood ok|+stress at home]]", "Ext: [[no edema|+swelling at night]]"]
        sep = s.pick(("\n", "; ", ". "))
        c.line(sep.join(self.rng.sample(parts, self.rng.randint(4, 8))) + ("" if sep == "\n" else "."))

    def plan(self) -> None:
        c, s = self.c, self.s
        self.heading("Assessment and Plan", "A/P", "Impression", "Plan", "Assessment")
        items = [
            "{cond}: [[continue|increase|decrease]] {drug}[[, recheck A1c in {num} months|, goal BP < 130/80|]].",
            "{cond} - [[stable|improved|worse]]. [[Check lipids|Repeat labs|Will check microalb]] [[today|next visit|on {FUTURE}]].",
            "[[Refer to|Will refer to|Referred to]] {DR} [[for|re:]] [[ETT|echo|podiatry eval|eye exam|renal eval]].",
            "[[RTC|Return to clinic|F/u|Follow up]] [[in {num} weeks|in {num} months|on {FUTURE}|{FUTURE}]][[ with {DOCTOR}|]].",
            "[[Appt|Appointment]] with {DR} [[on|scheduled for]] {FUTURE}[[ at {HOSPITAL}|||]].",
            "{lookalike}; [[will discuss|to discuss]] [[with|w/]] {PCP}.",
            "[[Discussed|Reviewed]] [[diet|exercise|foot care|sick day rules]] with {PT_FIRST} and {HIS} {REL}.",
            "[[Flu shot|Pneumovax]] [[given today|due|given {DATE}]].",
            "[[Call|Page]] {DR} [[at {PHONE}|@ {PHONE}|in clinic|through the operator|]] [[with|if]] [[questions|BG > 300|CP]].",
            "[[Nutrition|Diabetes education]] [[referral|f/u]] [[at {HOSPITAL}|on {FUTURE}|by {DATE}]][[ {DEPARTMENT}||]].",
            "Holding {drug} [[until|through]] {FUTURE} [[for|before]] {proc}.",
        ]
        numbered = s.chance(0.5)
        items += [
            "Continue [[ASA|statin|ACE-I|beta blocker]].", "Check [[BMP|lipids|A1c|CBC|TSH|LFTs]] [[today|in {num} weeks|before next visit]].",
            "Goal [[A1c < 7|LDL < 70|BP < 130/80]].", "Titrate {drug} to [[{n2} mg|{d}0 units|max dose]].",
            "Diet and exercise counseling, [[{d}0|{n2}]] min [[walking|exercise]] {d}x/week.", "[[Foot care|Eye exam|Dental]] reviewed.",
            "[[Cont|Continue]] {drug} {d}0 mg [[qd|bid]]; [[1/2 tab|{d}/2 tab|one tab]] [[qhs|prn]].",
            "{cond}: [[stable|at goal|not at goal]], [[no changes|no change in meds]].",
        ]
        for i, t in enumerate(self.rng.sample(items, self.rng.randint(3, 7))):
            c.line((f"{i + 1}. " if numbered else s.pick(("", "- ", "# "))) + t)
        self.frames(0, 2)

    def signature(self) -> None:
        c, s = self.c, self.s
        c.line()
        r = self.rng.random()
        if r < 0.3:
            c.line("_____________________________")
            c.line("{AUTHOR_FULL}, [[MD|M.D.|NP|PA-C]]")
        elif r < 0.55:
            c.line("[[Electronically signed by|Signed by|Dictated by]] {AUTHOR_FULL}[[, MD|]] [[on {RDATE}|{RDATE}|]]")
        elif r < 0.75:
            c.line("{AUTHOR_FULL}")
            if s.chance(0.3):
                c.line("[[Pager|Pgr|Beeper]] [[#|]]{PAGER}")
        else:
            c.line("[[Sincerely|Thank you|Best regards]],")
            c.line()
            c.line("{AUTHOR_FULL}, MD")
        if s.chance(0.45):
            initials = s.username(self.author).upper()[:3]
            c.say(f"{initials}/")
            c.emit([(s.username(self.p.typist).lower()[:3], "USERNAME")])
            c.line()
        if s.chance(0.35):
            c.say("DD: ")
            c.emit(self.date_near())
            c.say(s.pick(("  ", " ", "\n")) + "DT: ")
            c.emit([(s.format_date(self.date + dt.timedelta(days=self.rng.randint(0, 3)), s.pick(("mdy", "mdy_short", "md"))), "DATE")])
            c.line()
        if s.chance(0.45):
            c.say(s.pick(("cc: ", "CC: ", "cc:  ", "Copy to: ")))
            n = self.rng.randint(1, 2)
            for i in range(n):
                c.say(c.choose("[[Dr. |Dr |]]"))
                c.emit(self.doctor(s.pick(("full", "initial_last", "full_mi"))))
                if s.chance(0.12):
                    c.say(", ")
                    c.emit([(self.hospital_name(), "HOSPITAL")])
                c.say("; " if i < n - 1 else "")
            c.line()
        if s.chance(0.12):
            c.line("[[Email|e-mail]]: {EMAIL}")
        if s.chance(0.08):
            c.line("[[Tel|Phone|Office]]: {CLINIC_PHONE}   [[Fax|FAX]]: {FAX}")

    # -- record kinds -------------------------------------------------------------------
    def write(self, doc_id: str, metadata: dict) -> Document:
        kind = weighted(self.rng, (("clinic", 6), ("letter", 2), ("ed", 1), ("short", 1)))
        self.header()
        if kind == "letter":
            self.letter()
        elif kind == "ed":
            self.ed_note()
        elif kind == "short":
            self.short_note()
        else:
            self.opening()
            sections = [self.hpi, self.history, self.medications, self.social, self.family, self.ros,
                        self.exam, self.studies, self.labs, self.maintenance]
            odds = (0.95, 0.8, 0.85, 0.75, 0.55, 0.7, 0.85, 0.6, 0.9, 0.65)
            keep = [f for f, p in zip(sections, odds) if self.s.chance(p)] or [self.hpi]
            if self.s.chance(0.25):
                self.rng.shuffle(keep)
            for f in keep:
                f()
            self.plan()
            self.signature()
        upper = self.s.chance(0.03)
        return self.b.document(doc_id, metadata, upper=upper)

    def letter(self) -> None:
        c, s = self.c, self.s
        c.line()
        c.line("{DR}")
        if s.chance(0.7):
            c.line("{HOSPITAL}")
            c.emit([(s.street(), "STREET")])
            c.line()
            c.emit([(s.pick(lists.CITIES_NE), "CITY"), (", ", None), ("MA", "STATE"), ("  ", None), (s.zipcode(), "ZIP")])
            c.line()
        c.line()
        c.line("[[Dear|Dear Dr.]] {DOCTOR}:")
        c.line()
        c.line("[[I had the pleasure of seeing|Thank you for referring|I saw]] {PATIENT} [[in|at]] [[the {DEPARTMENT} clinic|{HOSPITAL}|clinic]] [[today|on {RDATE}]]. "
               "As you know, {HE} is a {AGE_SEX} with {cond}, {cond} and {cond}.")
        self.hpi()
        self.medications()
        if s.chance(0.6):
            self.exam()
        self.labs()
        c.line()
        c.line("[[In summary|Impression]]: {MR_MRS} {PT_LAST} [[is doing well|has suboptimal control of {cond}|needs further evaluation]]. "
               "[[I will see {HIM_HER} again|We will see {HIM_HER}|Follow up]] [[in {num} months|on {FUTURE}]].")
        self.signature()

    def ed_note(self) -> None:
        c, s = self.c, self.s
        c.line()
        c.line("[[ED|EMERGENCY DEPARTMENT|ER]] [[Note|VISIT|Admission Note]]")
        c.line("[[Arrival|Time seen]]: {RDATE} {time}")
        c.line("{AGE_SEX} [[BIBA|brought in by EMS|walked in]] from [[home|{ANYCITY}|{OTHER_HOSPITAL}]] with {symptom}.")
        self.hpi()
        self.medications()
        self.exam()
        self.labs()
        c.line("[[Dispo|Disposition]]: [[admit to|admitted to]] [[{DEPARTMENT}|Cardiology|medicine]], [[Room|Rm|bed]] {ROOM}[[ under {DR}|]].")
        self.signature()

    def short_note(self) -> None:
        c, s = self.c, self.s
        c.line()
        r = self.rng.random()
        if r < 0.5:
            c.line("[[Phone call|Telephone encounter|Tel note]] [[with|from]] [[patient|pt|{REL}]] re: [[sugars|refill of {drug}|lab results|BP readings]].")
            c.line("[[BG|Sugars]] {n3}, {n3}. [[Advised to|Told to]] [[increase|decrease]] {drug}. [[Call back|Will call]] [[on {FUTURE}|in {num} days]].")
            c.line("Callback [[number|#|phone]]: {PT_PHONE}")
        else:
            c.line("[[Lab|Labs]] [[reviewed|results]] for {PATIENT}[[ ({MRN})|]]:")
            self.labs()
            c.line("[[Letter sent to pt|Called pt with results|Will discuss at next visit]][[ on {DATE}|]].")
        if s.chance(0.3):
            c.line("[[Insurance|Health plan|Medicare]] [[#|ID|no.]]: {HEALTHPLAN}")
        if s.chance(0.2):
            c.line("[[Acct|Account]] [[#|No]] {ACCOUNT}")
        if s.chance(0.15):
            c.line("[[Pacemaker|Glucometer|Pump]] [[serial|SN|model/serial]] {DEVICE}")
        self.signature()


def _sample_weighted(rng: random.Random, table, k: int) -> list:
    """``k`` distinct items of ``[(item, weight), ...]``, drawn by weight."""
    table = list(table)
    out = []
    for _ in range(min(k, len(table))):
        item = weighted(rng, table)
        out.append(item)
        table = [(t, w) for t, w in table if t is not item]
    return out


def _lab_value(rng: random.Random, lo: float, hi: float, digits: int) -> str:
    value = lo + (hi - lo) * rng.random()
    text = f"{value:.{digits}f}" if digits else str(int(round(value)))
    if rng.random() < 0.06:
        text += rng.choice(("(H)", "(L)", "*", " H", " L"))
    return text


_EXTRA_SLOTS = {
    "relative_word": lambda r: r.s.pick(("wife", "husband", "daughter", "son", "sister")),
    "relative_word2": lambda r: r.s.pick(("brother", "sister", "mother", "father")),
    "symptom": lambda r: r.s.pick(("CP", "chest pressure", "SOB", "DOE", "palpitations", "leg swelling",
                                   "polyuria", "hypoglycemia", "blurry vision", "foot numbness",
                                   "fatigue", "dizziness", "claudication", "orthopnea")),
    "HIM_HER": lambda r: "her" if r.p.person.sex == "F" else "him",
    "FAMILY_AGE": lambda r: [(str(r.rng.randint(40, 80)), "AGE")],
    "AGE_BARE": lambda r: [(str(r.age), "AGE")],
    "AGE_HYPH": lambda r: [(str(r.age), "AGE"), ("-year-old " + r.s.pick(("man", "woman", "patient", "diabetic")), None)],
    "REL_AGE_NUM": lambda r: [(str(r.rng.randint(20, 90)), "AGE")],
    "YOUNGER_AGE": lambda r: [(str(r.rng.randint(25, max(26, r.age - 1))), "AGE")],
}


def _install_extra(record: Record2014) -> None:
    for name, fn in _EXTRA_SLOTS.items():
        record.c.slots[name] = (lambda fn=fn: fn(record))


def patient_record_counts(rng: random.Random, n_docs: int) -> list[int]:
    """Records per patient (2-5, mostly 3-4) summing to n_docs."""
    counts: list[int] = []
    left = n_docs
    while left > 0:
        k = min(left, weighted(rng, ((1, 0.5), (2, 2), (3, 3), (4, 3), (5, 1.5))))
        counts.append(k)
        left -= k
    return counts


def generate(n_docs: int, seed: int, first_id: int = 100, rare_boost: float = 1.0, rare_frames: float = 0.06,
             metadata: dict | None = None) -> list[Document]:
    """``n_docs`` records of the 2014 style, grouped by patient."""
    plan_rng = random.Random(sub_seed("2014-plan", seed))
    counts = patient_record_counts(plan_rng, n_docs)
    if first_id + len(counts) > 1000:
        raise ValueError(f"{len(counts)} patients from number {first_id} do not fit in 3 digits")
    docs: list[Document] = []
    for i, count in enumerate(counts):
        number = first_id + i
        rng = random.Random(sub_seed("2014-patient", seed, number))
        s = Surrogates(rng, LOCALES, word_name_rate=0.12, lower_name_rate=0.03)
        patient = make_patient(s, number)
        date = patient.first_date
        for k in range(count):
            doc_id = f"{number:03d}-{k + 1:02d}"
            record = Record2014(s, patient, k, date, rare_boost, rare_frames)
            _install_extra(record)
            meta = dict(metadata or {}, group=f"{number:03d}")
            docs.append(record.write(doc_id, meta))
            date = date + dt.timedelta(days=rng.randint(20, 420))
    return docs
