"""The 2016 style: long psychiatric intake notes (CEGS N-GRID-like).

One note per patient (ids ``NNNN``): many short sentences under intake
headings; identifying data, history of present illness, psychiatric,
substance-use, legal, trauma, family and social history rich in professions,
employers, schools, cities, countries and ages; mental status exam; few IDs
and contacts. Dates are ordinary calendar years (1950-2020), mostly written
as years and months, unlike the shifted, numeric dates of the 2014 style.
"""
from __future__ import annotations

import datetime as dt
import random
from typing import Callable

from ..document import Document
from . import lists
from .builder import Composer, Noise, Piece, TextBuilder
from .surrogates import Person, Surrogates, sub_seed, weighted

STYLE = "ngrid-2016"

LOCALES = (("en_US", 0.72), ("es_MX", 0.06), ("pt_BR", 0.04), ("en_IE", 0.04), ("en_GB", 0.04),
           ("it_IT", 0.03), ("pl_PL", 0.02), ("fr_FR", 0.02), ("vi_VN", 0.015), ("en_IN", 0.015))

DATE_FORMATS = (
    ("year", 12, False), ("month_year", 6, False), ("mdy_nopad", 4, False), ("mdy", 3, False),
    ("md", 2.5, False), ("month", 2.5, False), ("month_of_year", 1.5, False),
    ("month_day_year", 1.5, False), ("mdy_short", 1.5, False), ("my", 1.2, False),
    ("month_day", 1, False), ("weekday", 1.2, False), ("apos_yy", 0.6, True),
    ("mon_year", 0.5, True), ("month_ordinal", 0.5, True), ("ordinal_of_month", 0.3, True),
    ("iso", 0.25, True), ("mdy_dash", 0.3, True), ("day_month_year", 0.3, True),
    ("mon_apos_yy", 0.2, True), ("my_short", 0.4, True),
    # version 3: shapes training sees a handful of times
    ("mon_dot_year", 0.4, True), ("month_comma_year", 0.3, True), ("lower_month_year", 0.3, True),
    ("lower_month", 0.4, True), ("mon_day", 0.3, True), ("mon_dot_day", 0.3, True),
    ("md_dash", 0.3, True), ("md_pad", 0.3, True), ("mdy_pad_short", 0.3, True),
    ("mon_dash_yy", 0.2, True), ("month_nospace", 0.1, True), ("mdy_spaced", 0.15, True),
    ("month_day_comma_tight", 0.1, True), ("md_dot", 0.15, True), ("weekday_abbr", 0.3, True),
)
PAST_DATE_FORMATS = (
    ("year", 10, False), ("month_year", 3, False), ("month_of_year", 1, False), ("apos_yy", 0.6, True),
    ("mon_year", 0.3, True), ("my", 0.5, False), ("mdy_nopad", 0.5, False),
    ("mon_dot_year", 0.3, True), ("month_comma_year", 0.3, True), ("lower_month_year", 0.3, True),
    ("mon_dash_yy", 0.15, True), ("my_short", 0.2, True),
)
AGE_FORMS_PAST = (  # an age at some past event
    ("at_n", 10, False), ("age_n", 6, False), ("when_n", 4, False), ("in_her_decade", 3, False),
    ("in_her_late_decade", 2, False), ("at_age_word", 1, True), ("aged_n", 0.5, True),
    ("mid_decade", 0.6, True), ("word_decade", 0.6, True), ("word_age", 0.3, True),
)
AGE_FORMS_NOW = (
    ("year_old", 8, False), ("year_old_sp", 4, False), ("yo", 3, False), ("y/o", 2, False),
    ("word_year_old", 0.8, True), ("yo_glued", 0.6, True), ("yF", 0.5, True),
    ("yrs", 0.5, True), ("yo_dots", 0.5, True), ("years_of_age", 0.3, True),
)
PATIENT_FORMS = (("last", 6, False), ("first", 3, False), ("full", 1.5, False), ("full_mi", 0.3, False),
                 ("last_first", 0.3, False), ("upper_full", 0.2, False), ("initials", 0.5, True),
                 ("first_initial", 0.3, True), ("upper_last", 0.2, True), ("initials_dotted", 0.15, True))
DOCTOR_FORMS = (("full", 4, False), ("last", 4, False), ("initial_last", 1, False), ("full_mi", 0.5, False),
                ("first", 0.4, True), ("last_initial", 0.3, True), ("initials", 0.3, True))
# How a clinician or a friend/relative is named where the words around do not
# tell which one is meant.
SHARED_FORMS = (("full", 3), ("first", 2), ("last", 1.5), ("initial_last", 0.5), ("first_initial", 0.3))


def _table(formats, rare_boost: float):
    return tuple((f, w * (rare_boost if rare else 1.0)) for f, w, rare in formats)


class Intake2016:
    """Writes one intake note."""

    def __init__(self, s: Surrogates, note_date: dt.date, rare_boost: float, rare_frames: float = 0.06):
        self.s = s
        self.rng = s.rng
        self.date = note_date
        self.person = s.person()
        self.sex = self.person.sex
        self.age = self.rng.randint(18, 72)
        self.birth_year = note_date.year - self.age
        self.clinician = s.person()
        self.other_clinicians = [s.person() for _ in range(self.rng.randint(2, 4))]
        self.partner = s.person("M" if self.sex == "F" and self.rng.random() < 0.85 else "F")
        self.friends = [s.person() for _ in range(2)]
        self.hospitals = [s.hospital(lists.HOSPITAL_KINDS_2016) for _ in range(3)]
        self.home_city = s.pick(lists.CITIES_NE) if s.chance(0.7) else s.fictional_town()
        r = self.rng.random()
        self.origin_city = s.pick(lists.CITIES_WIDE) if r < 0.5 else s.fictional_town() if r < 0.75 else s.foreign_city()
        self.country = s.country(0.3)
        self.profession = s.profession(0.6)
        self.employer = s.pick(lists.ORG_GENERIC_2016) if s.chance(0.3) else s.company()
        self.date_table = _table(DATE_FORMATS, rare_boost)
        self.age_past = _table(AGE_FORMS_PAST, rare_boost)
        self.age_now = _table(AGE_FORMS_NOW, rare_boost)
        self.past_table = _table(PAST_DATE_FORMATS, rare_boost)
        self.patient_forms = _table(PATIENT_FORMS, rare_boost)
        self.doctor_forms = _table(DOCTOR_FORMS, rare_boost)
        self.rare_boost = rare_boost
        self.rare_frames = rare_frames
        self.b = TextBuilder()
        noise = Noise(self.rng, typo_rate=self.rng.choice((0.0, 0.005, 0.012, 0.025)),
                      space_rate=self.rng.choice((0.0, 0.003, 0.012)),
                      # some writers are careless with the casing and spelling of names and places
                      phi_case_rate=self.rng.choice((0.0, 0.0, 0.0, 0.05, 0.15, 0.35)),
                      phi_typo_rate=self.rng.choice((0.0, 0.0, 0.02, 0.06)))
        self.c = Composer(self.b, self.rng, self.slots(), noise)

    # -- slots ---------------------------------------------------------------
    def slots(self) -> dict[str, Callable]:
        s = self.s
        female = self.sex == "F"
        return {
            "PATIENT": lambda: s.name(self.person, weighted(self.rng, self.patient_forms), "PATIENT"),
            "PT_LAST": lambda: s.name(self.person, "last", "PATIENT"),
            "PT_FIRST": lambda: s.name(self.person, "first", "PATIENT"),
            "PT_FULL": lambda: s.name(self.person, s.pick(("full", "full", "full_mi")), "PATIENT"),
            "MS": lambda: s.pick(("Ms.", "Ms", "Mrs.")) if female else s.pick(("Mr.", "Mr")),
            "HE": lambda: "she" if female else "he",
            "She": lambda: "She" if female else "He",
            "HIS": lambda: "her" if female else "his",
            "His": lambda: "Her" if female else "His",
            "HIM": lambda: "her" if female else "him",
            "woman": lambda: s.pick(("woman", "female", "woman")) if female else s.pick(("man", "male", "man")),
            "PARTNER": lambda: s.name(self.partner, s.pick(("first", "first", "full")), "PATIENT"),
            "partner_word": lambda: s.pick(("boyfriend", "husband", "partner", "fiance")) if self.partner.sex == "M"
            else s.pick(("girlfriend", "wife", "partner")),
            "FRIEND": lambda: s.name(s.pick(self.friends), "first" if s.chance(0.6) else weighted(self.rng, SHARED_FORMS), "PATIENT"),
            "SOMEONE": lambda: self.someone(),
            "life_event": lambda: s.pick(lists.LIFE_EVENTS),
            "PLURAL_PROFESSION": lambda: [(_plural(s.profession(0.3)), "PROFESSION")],
            "routine": lambda: s.pick(lists.DAILY_ROUTINES),
            "SOMEREL": lambda: self.someone("PATIENT"),
            "SOMEDOC": lambda: self.someone("DOCTOR"),
            "CLINICIAN": lambda: s.name(self.clinician, s.pick(("full", "full_mi", "full")), "DOCTOR"),
            "DR": lambda: [(s.pick(("Dr. ", "Dr. ", "Dr ", "Doctor ")), None)]
            + s.name(s.pick(self.other_clinicians), weighted(self.rng, (("last", 4), ("full", 2), ("initial_last", 1))), "DOCTOR"),
            "THERAPIST": lambda: self.therapist(),
            "DATE": lambda: self.date_recent(),
            "NOTE_DATE": lambda: [(s.format_date(self.date, weighted(self.rng, (("mdy_nopad", 3), ("mdy", 3), ("month_day_year", 2), ("mdy_short", 1), ("iso", 0.3)))), "DATE")],
            "YEAR": lambda: self.year_date(),
            "PAST": lambda: self.past_date(),
            "HOLIDAY": lambda: [(s.holiday(self.rare_boost), "DATE")],
            "AGE_NOW": lambda: s.age_pieces(self.age, weighted(self.rng, self.age_now), self.sex),
            "AGE_THEN": lambda: s.age_pieces(self.younger(), weighted(self.rng, self.age_past), self.sex),
            "CHILD_AGE": lambda: [(str(self.rng.randint(1, min(30, max(2, self.age - 17)))), "AGE")],
            "REL_AGE": lambda: [(str(self.rng.randint(max(self.age + 17, 40), 95)), "AGE")],
            "SIB_AGE": lambda: [(str(max(1, self.age + self.rng.randint(-9, 9))), "AGE")],
            "HOSPITAL": lambda: [(self.hospital(), "HOSPITAL")],
            "HOME_CITY": lambda: [(self.home_city, "CITY")],
            "ORIGIN_CITY": lambda: [(self.origin_city, "CITY")],
            "CITY": lambda: [(self.any_city(), "CITY")],
            "STATE": lambda: [(s.pick(lists.STATES)[0] if s.chance(0.85) else s.pick(lists.STATES)[1], "STATE")],
            "COUNTRY": lambda: [(self.country, "COUNTRY")],
            "ANY_COUNTRY": lambda: [(s.country(0.3), "COUNTRY")],
            "PROFESSION": lambda: [(self.profession, "PROFESSION")],
            "ANY_PROFESSION": lambda: [(s.profession(0.6), "PROFESSION")],
            "FIELD": lambda: [(s.pick(lists.PROFESSION_FIELDS), "PROFESSION")],
            "EMPLOYER": lambda: [(self.employer, "ORGANIZATION")],
            "ORG": lambda: [(s.pick(lists.ORG_GENERIC_2016).replace("the ", "") if s.chance(0.35) else s.company(), "ORGANIZATION")],
            "SCHOOL": lambda: [(s.school(), "ORGANIZATION")],
            "LOCOTHER": lambda: [(s.pick(lists.LOCATION_OTHER).replace("the ", ""), "LOCATION-OTHER")],
            "DEPARTMENT": lambda: [(s.pick(lists.DEPARTMENTS_2016), "DEPARTMENT")],
            "STREET": lambda: [(s.street(), "STREET")],
            "ZIP": lambda: [(s.zipcode(), "ZIP")],
            "PHONE": lambda: [(s.phone(s.pick(("paren", "dash", "dash", "local"))), "PHONE")],
            "EMAIL": lambda: [(s.email(self.person), "EMAIL")],
            "MRN": lambda: [(s.pattern(s.pick(("#######", "########", "###-##-##"))), "MEDICALRECORD")],
            "IDNUM": lambda: [(s.pattern(s.pick(("#####", "?####-##"))), "IDNUM")],
            "drug": lambda: s.pick(lists.DRUGS_2016)[0],
            "drugdose": lambda: " ".join(s.pick(lists.DRUGS_2016)),
            "symptom": lambda: s.pick(lists.SYMPTOMS_2016),
            "dx": lambda: s.pick(lists.DIAGNOSES_2016),
            "substance": lambda: s.pick(lists.SUBSTANCES),
            "relative": lambda: s.pick(lists.RELATIVES),
            "num": lambda: str(self.rng.randint(2, 12)),
            "score": lambda: f"{self.rng.randint(0, 10)}/10",
            "phq": lambda: str(self.rng.randint(4, 27)),
            "season": lambda: s.pick(lists.SEASONS),
            "lookalike": lambda: s.pick(LOOKALIKES_2016),
            "role": lambda: s.pick(lists.NON_PROFESSION_ROLES) if s.chance(0.4)
            else f"{s.pick(lists.ROLE_ADJECTIVES)} {s.pick(lists.ROLE_NOUNS)}",
            "modifier": lambda: s.pick(lists.PROFESSION_MODIFIERS),
            "workplace": lambda: s.pick(lists.GENERIC_WORKPLACES),
            "genschool": lambda: s.pick(lists.GENERIC_SCHOOLS),
            "genplace": lambda: s.pick(lists.GENERIC_PLACES),
            "nationality": lambda: s.pick(lists.NATIONALITIES),
            "language": lambda: s.pick(lists.LANGUAGES),
            "capword": lambda: s.pick(lists.NON_PHI_CAPITALISED_2016 + lists.NON_PHI_CAPITALISED_2016_EXTRA),
            "eponym": lambda: s.pick(lists.EPONYMS),
            "yrs": lambda: str(self.rng.randint(2, 40)),
            "years": lambda: str(self.rng.randint(2, 25)),
            "pills": lambda: str(self.rng.randint(10, 60)),
            "d": lambda: str(self.rng.randint(1, 9)),
            "n4": lambda: str(self.rng.choice((1000, 1200, 1500, 2000, 2500, 3000))) + self.s.pick((" mg", " dollars", " calories")),
            "AGE_BARE": lambda: [(str(self.younger()), "AGE")],
            "YEAR_RANGE": lambda: self.year_range(),
            "n4d": lambda: str(self.rng.choice((900, 1100, 1200, 1400, 1500, 1800, 2000, 2200, 2500, 3000))),
            "decade": lambda: self.s.pick(("80s", "90s", "2000s", "nineties", "eighties")),
            "AGE_NUM": lambda: [(str(self.rng.randint(3, 60)), "AGE")],
            "AGE_HYPH": lambda: [(str(self.rng.randint(2, 60)), "AGE"), ("-year-old " + self.s.pick(("son", "daughter", "nephew", "friend", "coworker")), None)],
        }

    def any_city(self) -> str:
        r = self.rng.random()
        if r < 0.5:
            return self.s.pick(lists.CITIES_WIDE + lists.CITIES_NE)
        return self.s.fictional_town() if r < 0.8 else self.s.foreign_city()

    def therapist(self) -> list[Piece]:
        who = self.s.pick(self.other_clinicians)
        forms = SHARED_FORMS if self.s.chance(0.4) else self.doctor_forms
        return self.s.name(who, weighted(self.rng, forms), "DOCTOR")

    def someone(self, type_: str | None = None) -> list[Piece]:
        """A clinician, or a friend, partner or relative, named the same way
        either is: the type shows only from who the person is."""
        s = self.s
        form = weighted(self.rng, SHARED_FORMS)
        if type_ is None:
            type_ = "DOCTOR" if s.chance(0.45) else "PATIENT"
        if type_ == "DOCTOR":
            return s.name(s.pick(self.other_clinicians + [self.clinician]), form, "DOCTOR")
        who = s.pick(self.friends + [self.partner]) if s.chance(0.7) else s.person()
        return s.name(who, form, "PATIENT")

    def hospital(self) -> str:
        h = self.s.pick(self.hospitals)
        return weighted(self.rng, ((h.name, 4), (h.short, 3), (h.abbr, 2.5)))

    def younger(self) -> int:
        return self.rng.randint(5, max(6, self.age - 1))

    def date_recent(self) -> list[Piece]:
        d = self.date - dt.timedelta(days=self.rng.randint(1, 400))
        fmt = weighted(self.rng, self.date_table)
        return [(self.s.format_date(d, fmt), "DATE")]

    def past_date(self) -> list[Piece]:
        d = self.s.date_between(dt.date(max(1950, self.birth_year + 5), 1, 1), self.date - dt.timedelta(days=30))
        fmt = weighted(self.rng, self.past_table)
        return [(self.s.format_date(d, fmt), "DATE")]

    def year_range(self) -> list[Piece]:
        """Two dates joined by a hyphen or "to": "2008-2010", "'08-'10"."""
        a = self.rng.randint(max(1950, self.birth_year + 5), self.date.year - 1)
        b = self.rng.randint(a + 1, self.date.year)
        if self.s.chance(0.2):
            return [(f"'{a % 100:02d}", "DATE"), ("-", None), (f"'{b % 100:02d}", "DATE")]
        if self.s.chance(0.15 * self.rare_boost):  # "2009-10", a school year
            return [(str(a), "DATE"), ("-", None), (f"{(a + 1) % 100:02d}", "DATE")]
        return [(str(a), "DATE"), (self.s.pick(("-", " - ", " to ", "-")), None), (str(b), "DATE")]

    def year_date(self) -> list[Piece]:
        year = self.rng.randint(max(1950, self.birth_year + 5), self.date.year)
        return [(str(year), "DATE")]

    # -- layout --------------------------------------------------------------------
    def heading(self, *names: str) -> None:
        name = self.s.pick(names)
        c = self.c
        c.line()
        style = self.heading_style
        if style == 0:
            c.line(f"{name}:")
        elif style == 1:
            c.line(name.upper())
        elif style == 2:
            c.line(f"**{name}**")
        elif style == 3:
            c.say(f"{name.upper()}: ")
        else:
            c.line(f"{name}")
            c.line("-" * len(name))

    def sentences(self, templates: list[str], lo: int, hi: int, newline_rate: float = 0.15) -> None:
        k = min(len(templates), self.rng.randint(lo, hi))
        for t in self.rng.sample(templates, k):
            self.c.say(t)
            self.c.say("\n" if self.rng.random() < newline_rate else self.s.pick((" ", " ", " ", "  ")))
        self.c.line()

    # -- sections ---------------------------------------------------------------------
    def header(self) -> None:
        c, s = self.c, self.s
        self.heading_style = self.rng.randrange(5)
        r = self.rng.random()
        if r < 0.4:
            c.line("[[Psychiatric Intake|PSYCHIATRIC EVALUATION|Initial Psychiatric Evaluation|Intake Assessment|Outpatient Intake]]")
        if s.chance(0.8):
            c.line("[[Date of [[evaluation|service|intake]]|Date|Visit date|Evaluation date]]: {NOTE_DATE}")
        if s.chance(0.5):
            c.line("[[Clinician|Evaluator|Provider|Attending]]: {CLINICIAN}[[, MD|, PhD|, LICSW|, NP|]]")
        if s.chance(0.35):
            c.line("[[Referred by|Referral source|Referring provider]]: [[{DR}|{THERAPIST}, [[LICSW|PCP|therapist]]|self|{HOSPITAL} ED]]")
        if s.chance(0.06):
            c.line("[[MRN|Medical record #]]: {MRN}")
        if s.chance(0.35):
            c.line("[[Sources|Source of information|Informant]]: [[patient|patient and chart|patient, {HIS} {partner_word} {PARTNER}|patient, records from {HOSPITAL}]]")

    def identifying(self) -> None:
        self.heading("Identifying Data", "ID", "Identifying Information", "Identification", "Reason for Referral")
        c = self.c
        c.say("{MS} {PT_LAST} is a {AGE_NOW} [[single|married|divorced|separated|widowed|never-married]] "
              "[[{COUNTRY}-born |]]{woman} [[who lives|living]] [[with {HIS} {partner_word} {PARTNER}|alone|with {HIS} mother|with roommates|in a shelter]] "
              "in {HOME_CITY}[[, {STATE}|]]. ")
        c.say(c.choose("[[{She} [[works as|is employed as|is]] a {PROFESSION}[[ at {EMPLOYER}| for {EMPLOYER}|]].|"
                       "{She} is [[currently unemployed|on disability|a student at {SCHOOL}|retired]].|"
                       "{She} [[was|used to be]] a {PROFESSION} [[until {YEAR}|until recently|for {num} years]].]] "))
        c.line(c.choose("[[{She} [[presents|is referred|comes in]] [[for evaluation of|with]] {symptom} and {symptom}.|"
                        "{She} was referred by {DR} for [[medication management|evaluation|therapy]].|"
                        "[[Self-referred|Referred by {HIS} PCP]] after [[a recent ED visit|discharge from {HOSPITAL}|a crisis]].]]"))

    def chief_complaint(self) -> None:
        self.heading("Chief Complaint", "CC", "Chief complaint", "Presenting Problem")
        self.c.line(self.c.choose('"[[I can\'t sleep|I\'ve been really depressed|I need help with my drinking|My anxiety is out of control|'
                                  'I don\'t want to feel like this anymore|My wife made me come|I keep having panic attacks|I need to get back on meds]]"'))

    def hpi(self) -> None:
        self.heading("History of Present Illness", "HPI", "History of Present Illness", "Current Episode")
        templates = [
            "{She} reports {symptom} since {DATE}.", "Symptoms began [[around|in]] {DATE}.",
            "{She} [[describes|endorses]] {symptom}.", "{She} denies {symptom}.", "Sleep is [[poor|fragmented|4-5 hours a night]].",
            "Appetite is [[decreased|increased|unchanged]].", "{She} [[lost|gained]] {num} lbs.",
            "Energy is low.", "Concentration is [[poor|ok]].", "{She} rates mood {score}.", "Anxiety is {score}.",
            "PHQ-9 today was {phq}.", "GAD-7 {phq}.", "Things got worse after {HOLIDAY}.",
            "[[Stressors include|Major stressor is]] [[loss of job at {EMPLOYER}|breakup with {PARTNER}|death of {HIS} {relative} in {PAST}|financial problems|eviction]].",
            "{She} was [[laid off|fired]] from {EMPLOYER} in {DATE}.", "{She} stopped {drug} on {DATE}.",
            "{She} [[went to|presented to]] the ED at {HOSPITAL} on {DATE}.", "{She} was not admitted.",
            "{She} has been missing work.", "{She} is [[worried|upset]] about {HIS} {relative}.",
            "{She} [[saw|met with]] {DR} on {DATE}.", "{She} [[started|has been seeing]] a therapist, {THERAPIST}, in {DATE}.",
            "[[Mood has been|Has felt]] [[down|low|irritable]] [[most days|nearly every day]].",
            "{She} [[had|reports]] a panic attack at work last {season}.", "No recent SI.", "No HI.", "{She} denies AH/VH.",
            "{She} cries [[daily|often]].", "{She} feels guilty.", "{She} isolates at home.",
            "{She} [[spoke|talked]] with {HIS} friend {FRIEND} about it.", "{FRIEND} drove {HIM} here today.",
            "{She} [[moved|relocated]] to {HOME_CITY} in {DATE}.", "{She} [[visited|went to]] {CITY} on {DATE}.",
            "{lookalike}.", "{She} hopes to return to work.", "{She} wants to feel better.",
            "{She} feels [[hopeless|worthless|numb|on edge]].", "{She} has trouble getting out of bed.",
            "{She} stopped going to the gym.", "{She} [[no longer|rarely]] enjoys [[music|cooking|going out]].",
            "{She} worries about money.", "{She} has been arguing with {HIS} {partner_word}.",
            "{She} [[wakes|has been waking]] at [[3|4|5]] am.", "{She} naps during the day.",
            "{She} has had thoughts that {HE} would be better off dead.", "{She} has no plan.",
            "{She} [[drank|has been drinking]] more [[lately|since the layoff|on weekends]].",
            "{She} missed {num} days of work last month.", "{She} took {pills} pills of {drug} on {DATE}.",
            "{She} [[called|texted]] {FRIEND} [[that night|afterwards]].", "{PT_FIRST} [[says|states]] {HE} is [[tired|exhausted|scared]].",
            "{PT_FIRST} reports {symptom}.", "[[Per|According to]] {HIS} {partner_word}, {HE} has been {symptom_ing}.",
            "{She} is [[{nationality}|{nationality}-American]] and speaks {language}.", "{She} was a {role} {AGE_THEN}.",
            "{She} [[went|returned]] to {capword} last week.", "{She} had a [[good|bad]] week.",
            "{She} [[denies|reports]] racing thoughts.", "{She} has been [[spending|gambling]] more money.",
            "{She} went to {workplace} to apply for a job.", "Symptoms [[worsen|are worse]] in the {season}.",
            "{She} was started on {drug} by {HIS} PCP {DR} in {DATE}.", "{She} ran out of {drug} {num} days ago.",
            "{She} sleeps {d}-{d} hours.", "{She} slept well {d}/7 nights.", "{She} has [[{d}|{num}]] drinks on weekends.",
            "{She} eats [[once|twice]] a day.", "{She} feels [[{d}/10|worse|better]] [[today|this week]].", "{She} is tired all the time.",
            "{She} feels like a burden.", "{She} has no energy.", "{She} stays in {HIS} room.", "{She} has trouble focusing at work.",
            "{She} [[avoids|fears]] crowds.", "Panic attacks [[{num}x/week|daily|twice a month]].", "{She} [[skips|forgets]] doses of {drug}.",
            "{She} takes [[1/2|{d}/2|one]] tab of {drug} at night.", "Started {drug} {d} weeks ago at {d}0 mg.",
        ]
        self.sentences(templates, 10, 17)
        self.frames(8, 12)
        self.sentences(TIMELINE, 3, 6)

    FRAMES = [
        "{She} grew up in [[{ORIGIN_CITY}|{COUNTRY}|{STATE}|{LOCOTHER}|{genplace}|{genplace}]].",
        "{She} [[was|worked as]] a [[{PROFESSION}|{ANY_PROFESSION}|{role}|{role}|{modifier} {ANY_PROFESSION}]] [[for years|back then|{AGE_THEN}|before that]].",
        "{She} [[is|was|has been]] a [[{role}|{modifier} {PROFESSION}|{role}|{ANY_PROFESSION}]] [[since {YEAR}|for {yrs} years|all {HIS} life|lately]].",
        "{She} [[talks to|texts|relies on|sees|trusts]] [[{FRIEND}|{THERAPIST}|{PARTNER}|{capword}]] [[every day|weekly|a lot|when upset]].",
        "{She} [[works|worked|used to work]] at [[{EMPLOYER}|{workplace}|{HOSPITAL}|{ORG}|{workplace}]].",
        "{She} [[attended|went to|finished]] [[{SCHOOL}|{genschool}|{capword}|{genschool}]][[ {AGE_THEN}| in {PAST}|]].",
        "{She} moved [[to|from]] [[{CITY}|{STATE}|{ANY_COUNTRY}|{genplace}|{LOCOTHER}|{genplace}]] [[in {PAST}|{AGE_THEN}|{num} years ago|last {season}|after the divorce]].",
        "{She} [[wakes|woke up|gets up]] at [[{d} am|{d}|{d}:30]] [[most days|every day|and cannot fall back asleep]].",
        "{She} [[started drinking|began using|first smoked]] at [[{AGE_BARE}|{AGE_BARE}|least {num} years ago]].",
        "{She} [[took|swallowed|had]] [[{pills}|{num}|about {pills}]] [[pills|tablets|beers]] [[that night|on {DATE}|at {d} pm]].",
        "[[Brother|Sister|Son|Daughter|Cousin]] [[({SIB_AGE})|({CHILD_AGE})|(x{num})|]] [[lives nearby|is supportive|lives in {CITY}]].",
        "{She} [[spent|lived]] [[{num} years|time|summers]] in [[{CITY}|{ANY_COUNTRY}|{genplace}|{LOCOTHER}]].",
        "[[In|Since|By|Around]] [[{YEAR}|{YEAR}|{n4}|the {season}]] {HE} [[was|had been]] [[sober|drinking daily|in treatment|working]].",
        "{She} [[calls|phones]] [[{FRIEND}|{PARTNER}|the hotline|{HIS} sponsor|{HIS} mother]] [[for support|most nights|when {HE} cannot sleep]].",
        "Spoke with [[{THERAPIST}|{FRIEND}|{PARTNER}|{DR}]] [[by phone|today|with consent]].",
        "{She} [[hopes|plans|wants]] to [[move to {CITY}|visit {ANY_COUNTRY}|go back to {SCHOOL}|work at {ORG}|become a {ANY_PROFESSION}|be a {role}]].",
        "[[{relative}|{His} {relative}|{FRIEND}|{THERAPIST}|{PARTNER}]] [[has|was diagnosed with|was treated for]] [[{eponym}|{dx}|cancer]].",
        "[[{FRIEND}|{THERAPIST}|{PARTNER}|{DR}|{capword}]] [[suggested|recommended]] [[{capword}|{drug}|this evaluation|{HOSPITAL}]].",
        "[[Her|His]] [[mother|father|uncle|grandmother]] [[was|is]] [[{nationality}|from {ANY_COUNTRY}|from {CITY}|a {ANY_PROFESSION}|a {role}]].",
        "{She} [[drank|used]] [[for {yrs} years|{yrs} times|daily for {yrs} months|since {AGE_BARE}|since {YEAR}|since age {AGE_BARE}]].",
        "[[Last|Most recent]] [[drink|use|visit|admission]] [[{DATE}|{num} days ago|last {season}|{yrs} weeks ago|in {YEAR}]].",
        "[[Lived|Worked|Drank|Used]] [[there|heavily|daily|in {CITY}]] [[from {YEAR_RANGE}|{YEAR_RANGE}|for {yrs} years|in the {decade}|until {YEAR}]].",
        "[[Rent is|Owes|Gets|Spent]] [[${n4d}|${n4d}|{n4d} dollars|about ${n4d}]] [[a month|in total|on {substance}|from SSDI]].",
        "[[Early|Late|Mid|Since early|In late]] {YEAR} {HE} [[relapsed|moved|lost {HIS} job|started treatment]].",
        "[[Worked|Works]] [[{yrs} hours|nights|weekends|part-time]] [[as a {ANY_PROFESSION}|at {workplace}|at {ORG}|for {EMPLOYER}|as a {role}]].",
        "{She} [[reads|watches]] [[{capword}|the news|{nationality} TV]] [[daily|at night]].",
        "[[{She} is|Son is|Daughter is|{His} brother is|Score is|PHQ-9 is|Anxiety is|{She} was]] [[{AGE_NUM}|{num}|{phq}|{AGE_NUM}|{num}]] [[now|today|at intake|this week]].",
        "[[A|a|{She} has a|After a]] [[{AGE_HYPH}|{yrs}-year history of {substance} use|{yrs}-year relationship|{yrs}-year sentence|{yrs}-month stay]].",
        "[[Woke|Drank|Used|Left]] at [[{d}|{d} pm|{AGE_NUM}|{d}:30|{AGE_NUM}]] [[and|,|then]] [[called {FRIEND}|went to bed|blacked out|left home]].",
        "{She} [[lives|stays]] [[with {FRIEND}|with {PARTNER}|in {genplace}|near {LOCOTHER}|in {CITY}|on {STREET}]].",
        "{She} {life_event} [[at {AGE_BARE}|in {CITY}|at {AGE_BARE}|in {PAST}]][[ and {life_event} at {AGE_BARE}|||]]. [[Now|Lately|These days]] {HE} {routine} at [[{d}|1[[0|1|2]]|{d}|{d}:30]][[ am| pm|]].",
        "{She} {routine} at [[{d}|1[[0|1|2]]]] [[most days|every day|now]]; {HE} {life_event} [[at {AGE_BARE}|in {PAST}|at {AGE_BARE}]].",
        "{She} [[was|got]] [[fired|laid off|promoted|hired]] [[from|at|by]] [[{EMPLOYER}|{ORG}|{workplace}|{HOSPITAL}]] [[in {PAST}|{AGE_THEN}|last {season}|recently]].",
    ]

    # Frames that training sees only a few times (weight ``rare_frames``, higher
    # in test splits): new phrasings around names, places, schools, jobs.
    RARE_FRAMES = [
        "{She} [[stayed|lived|crashed]] with {SOMEREL} in {CITY} [[for a while|after the eviction|in {PAST}]].",
        "{SOMEONE} [[in {CITY}|at {ORG}|]] [[thinks|feels|says]] {HE} [[should|needs to]] [[go back on {drug}|get help|stop drinking]].",
        "[[Went|Drove|Flew]] to [[{CITY}|{ANY_COUNTRY}|{LOCOTHER}|{STATE}]] [[with|to see]] {SOMEONE} [[over {HOLIDAY}|in {DATE}|last {season}]].",
        "{She} [[did|took]] [[a course|classes|training]] [[at|through]] [[{SCHOOL}|{ORG}|{HOSPITAL}]] to become a {ANY_PROFESSION}.",
        "[[{His}|The]] [[ex|ex-wife|ex-husband|stepmother|godfather]] {SOMEREL} [[is|was]] a {ANY_PROFESSION} [[in|at]] [[{CITY}|{ORG}]].",
        "[[Worked|Temped|Interned]] at {ORG} [[in|outside]] {CITY} [[in {PAST}|{AGE_THEN}|for {num} months]].",
        "[[Saw|Sees|Was seeing]] {SOMEONE} [[at|through]] [[{HOSPITAL}|{SCHOOL}|{ORG}]] [[since {YEAR}|until {DATE}|weekly]].",
        "{SOMEONE} [[in|from|at]] [[{CITY}|{ORG}|{STATE}]] [[is|was]] [[supportive|worried|in touch]].",
        "[[From|Born and raised in]] {ORIGIN_CITY}[[, {ANY_COUNTRY}|, {STATE}|]]; [[came|moved]] to {HOME_CITY} [[{AGE_THEN}|in {PAST}|at {AGE_BARE}]].",
        "[[Between|From]] {YEAR_RANGE} {HE} [[was|worked as]] a {ANY_PROFESSION}.",
        "[[Last|Most recent]] [[appt|session|visit]] with {SOMEONE} was {DATE}[[; next {DATE}|]].",
        "{She} [[wants|plans]] to [[apply to|transfer to|finish at]] {SCHOOL} [[in {DATE}|next {season}|by {YEAR}]].",
        "[[Aunt|Uncle|Cousin|Godmother]] {SOMEREL} ({AGE_NUM}) [[lives in|moved to]] {CITY}.",
        "[[Age|Aged|At]] {AGE_BARE}, [[{HE} moved|{HE} dropped out|first hospitalization|first arrest]]; [[at|by]] {AGE_BARE}, [[{HE} was drinking daily|{HE} had a child|{HE} left home]].",
        "[[Employer|Job|Work]]: {ORG}[[ ({ANY_PROFESSION})| - {ANY_PROFESSION}|]].",
        "[[Contact|Emergency contact|Collateral]]: {SOMEREL}[[, {PHONE}|]].",
        "[[Therapist|Prescriber|Case manager|PCP]] [[is|=|:]] {SOMEDOC}[[ at {HOSPITAL}| in {CITY}|]].",
        "{She} [[met|dated|married]] {SOMEREL} [[in {DATE}|at {SCHOOL}|at {ORG}|in {CITY}]].",
        "[[Dropped|Stopped]] {drug} [[in {DATE}|on {DATE}|around {HOLIDAY}]] [[after|per]] {SOMEONE}.",
        "[[Occupation|Job|Work history]]: [[{ANY_PROFESSION}|{PROFESSION}|{role}|{workplace}]][[, then {ANY_PROFESSION}|; before that {role}|]].",
        "[[Both parents|{His} parents|{His} siblings|Most of the family]] [[were|are]] {PLURAL_PROFESSION}[[ in {CITY}| at {ORG}|]].",
        "[[At|Around|By]] [[{AGE_BARE}|{AGE_BARE}|{num} am]] [[{HE} was|{HE} started]] [[a {ANY_PROFESSION}|a {role}|working nights]][[ in {CITY}|]].",
        "[[Siblings|Kids|Children|Roommates]]: {SOMEREL} ({SIB_AGE}), {SOMEREL} ({SIB_AGE})[[ and {SOMEREL}|]].",
        "[[Has lived in|Lived in|Moved between]] {CITY}, {CITY} and [[{CITY}|{STATE}|{ANY_COUNTRY}]].",
        "[[Lived|Was]] [[in|at]] {genplace} [[from {YEAR_RANGE}|until {DATE}|in {PAST}]]; [[then|later]] {CITY}.",
        "{She} [[got pregnant|had {HIS} first child|was expelled|ran away|got {HIS} license|first got high]] at {AGE_BARE}; [[now|these days]] {HE} [[gets up|goes to bed|eats|takes {drug}]] at [[{d}|1{d}|{d}:30|1{d} pm]].",
        "[[By|Around|Before]] {AGE_BARE} {HE} [[had|was]] [[{num} DUIs|in foster care|using daily|on {drug}]]; [[since|by]] {YEAR} [[sober|stable|working]].",
        "[[Sister|Brother|Son|Daughter|Friend]] {SOMEREL}, [[{AGE_NUM}|age {AGE_NUM}|{AGE_NUM} y/o]], [[lives|works]] in {CITY}.",
        "[[{HOLIDAY}|{DATE}|{HOLIDAY}]] was [[hard|the worst|a trigger]]; [[{HE} drank|{HE} cut|{HE} relapsed]] [[again on {DATE}|that {DATE}|the next day]].",
        "[[Scored|Got|Rated]] [[{phq}|1{d}|{d}]] [[on the PHQ-9|points|/27]] [[on {DATE}|in {DATE}|last {season}]]; [[{HE} was|{HE} turned]] {AGE_NUM} [[that {season}|then|in {YEAR}]].",
    ]

    def frames(self, lo: int, hi: int) -> None:
        table = [(t, 1.0) for t in self.FRAMES] + [(t, self.rare_frames) for t in self.RARE_FRAMES]
        k = self.rng.randint(lo, hi)
        chosen = []
        for _ in range(min(k, len(table))):
            t = weighted(self.rng, table)
            chosen.append(t)
            table = [(u, w) for u, w in table if u is not t]
        for t in chosen:
            self.c.say(t)
            self.c.say("\n" if self.rng.random() < 0.15 else self.s.pick((" ", " ", " ", "  ")))
        self.c.line()

    def psych_history(self) -> None:
        self.heading("Past Psychiatric History", "Psychiatric History", "Past Psych Hx", "Prior Treatment")
        templates = [
            "First [[saw a therapist|had psychiatric treatment|was treated for depression]] {AGE_THEN}.",
            "[[Hospitalized|Admitted]] at {HOSPITAL} in {PAST} for [[SI|depression|mania|psychosis]].",
            "[[Hospitalized|Admitted]] at {HOSPITAL} [[{AGE_THEN}|in {PAST}]].",
            "Prior [[partial program|PHP|IOP]] at {HOSPITAL} [[{DEPARTMENT}|]] in {PAST}.",
            "{num} prior [[hospitalizations|admissions]].", "[[One|One prior]] suicide attempt {AGE_THEN} by [[overdose|cutting|hanging]].",
            "No prior suicide attempts.", "History of [[cutting|self-harm]] {AGE_THEN}.",
            "Prior trials: {drug} ([[ineffective|side effects|helped]]), {drug}, {drug}.",
            "Treated by {DR} at {HOSPITAL} from {PAST} to {PAST}.", "Saw a [[counselor|therapist]] at {SCHOOL} {AGE_THEN}.",
            "Diagnosed with {dx} {AGE_THEN}.", "Previous diagnoses include {dx} and {dx}.",
            "No ECT.", "[[Had|Received]] ECT at {HOSPITAL} in {PAST}.", "Last [[psychiatrist|prescriber]] was {DR}.",
            "Was in {capword} for {num} months.", "Hospitalized [[twice|once|three times]] as a teenager.",
            "Has been in and out of treatment for {years} years.", "Never on a mood stabilizer.",
            "Was in foster care {AGE_THEN}.", "Was on {drug} [[for years|briefly|until {PAST}]].",
            "Attended {genschool} while in treatment.", "Lived in {genplace} after discharge.",
        ]
        self.sentences(templates, 5, 9)
        self.frames(1, 3)

    def substance(self) -> None:
        self.heading("Substance Use History", "Substance Abuse History", "Substance Use", "Drug and Alcohol History")
        templates = [
            "First drink {AGE_THEN}.", "Began using {substance} {AGE_THEN}.", "Heaviest use [[{AGE_THEN}|in {PAST}]].",
            "Drinks [[{num} beers|a pint of vodka|{num} glasses of wine|a 30-pack]] [[per day|a week|on weekends]].",
            "Last drink {DATE}.", "Last use of {substance} {DATE}.", "Sober since {DATE}.", "Sober since {PAST}.",
            "[[Used|Tried]] {substance} [[as a teen|{AGE_THEN}|in college]].", "[[Detox|Detoxed]] at {HOSPITAL} in {PAST}.",
            "Completed [[a 28 day program|residential treatment]] at {HOSPITAL} in {PAST}.",
            "Attends [[AA|NA|SMART Recovery]] meetings in {HOME_CITY} {num} times a week.", "Has a sponsor, {FRIEND}.",
            "Denies IVDU.", "History of IV heroin use.", "[[Smokes|Smoked]] {num} cigarettes a day.",
            "No history of withdrawal seizures.", "History of DTs.", "Daily cannabis use.", "Denies gambling.",
            "Longest period of sobriety was {num} [[months|years]].", "Relapsed [[after|around]] {HOLIDAY}.",
            "Was on {drug} maintenance at {HOSPITAL} [[since {PAST}|for {num} years]].",
            "Drinks to fall asleep.", "Uses {substance} [[daily|on weekends|to cope]].", "Denies current use of {substance}.",
            "Was a {role} [[in college|{AGE_THEN}|for years]].", "Has had blackouts.", "Friends at {capword} are supportive.",
            "Started [[smoking|vaping]] at {years}.", "Uses about {num} grams a day.", "Was {role} at {workplace}.",
        ]
        self.sentences(templates, 5, 10)
        self.frames(1, 3)

    def legal(self) -> None:
        self.heading("Legal History", "Legal", "Legal Hx")
        templates = [
            "Arrested for [[DUI|OUI|possession|assault]] in {PAST}.", "Arrested in {CITY} {AGE_THEN}.",
            "On probation until {DATE}.", "No legal history.", "[[Served|Spent]] {num} months at [[{CITY} House of Correction|county jail]] in {PAST}.",
            "Has a court date on {DATE}.", "Restraining order against {PARTNER} since {PAST}.", "No current charges.",
        ]
        self.sentences(templates, 1, 3)

    def trauma(self) -> None:
        self.heading("Trauma History", "Trauma", "Abuse History")
        templates = [
            "[[Sexually abused|Physically abused]] by a [[neighbor|stepfather|cousin|coach]] {AGE_THEN}.",
            "Witnessed domestic violence as a child.", "Denies trauma history.", "[[Assaulted|Mugged]] in {CITY} in {PAST}.",
            "Emotionally abusive relationship with {PARTNER}.", "Deployed to {ANY_COUNTRY} in {PAST}.",
            "Lost {HIS} best friend to an overdose in {PAST}.", "House fire {AGE_THEN}.",
        ]
        self.sentences(templates, 1, 3)

    def family(self) -> None:
        self.heading("Family History", "Family Psychiatric History", "Family Hx", "Family History")
        templates = [
            "{relative} with {dx}.", "{relative} with alcoholism.", "{relative} committed suicide {AGE_THEN_REL}.",
            "[[Mother|Father]] [[died|passed away]] at {REL_AGE} of [[cancer|an MI|an overdose|cirrhosis]].",
            "[[Mother|Father]] is {REL_AGE} and [[lives in|is in]] {CITY}.", "{relative} with depression, treated with {drug}.",
            "[[Brother|Sister]] ({SIB_AGE}) [[is in recovery|has bipolar disorder|is in prison]].",
            "No family history of suicide.", "[[Father|Mother]] was a {ANY_PROFESSION}.",
            "[[Father|Mother|Stepfather]] worked as a {ANY_PROFESSION} [[at|for]] {ORG}.",
            "{relative} with schizophrenia, hospitalized at {HOSPITAL}.", "Grandmother had dementia.",
        ]
        self.sentences(templates, 3, 6)
        self.frames(1, 2)

    def social(self) -> None:
        self.heading("Social History", "Social History", "Developmental and Social History", "Psychosocial History")
        templates = [
            "Born in {ORIGIN_CITY}[[, {COUNTRY}|]].", "Born in {COUNTRY} and moved to {STATE} {AGE_THEN}.",
            "Raised by {HIS} [[mother|grandmother|parents|aunt]] in {ORIGIN_CITY}.", "Moved to {HOME_CITY} in {PAST}.",
            "Grew up in {LOCOTHER}.", "Lived in {CITY}, {STATE} [[from {PAST} to {PAST}|for {num} years|as a teenager]].",
            "[[Has|Had]] {num} siblings.", "[[Middle|Oldest|Youngest]] of {num} children.",
            "[[Graduated from|Attended]] {SCHOOL} [[in {PAST}|{AGE_THEN}]].", "Dropped out of {SCHOOL} {AGE_THEN}.",
            "Completed [[GED|high school|two years of college|a BA]][[ in {PAST}| at {SCHOOL}|]].",
            "Has a degree in [[nursing|business|psychology|engineering]] from {SCHOOL}.",
            "Works as a {PROFESSION}.", "Works as a {PROFESSION} at {EMPLOYER}.", "{She} was a {PROFESSION} at {EMPLOYER} for {num} years.",
            "Previously worked in {FIELD}.", "Worked [[at|for]] {ORG} [[from {PAST} to {PAST}|for {num} years|briefly]].",
            "Currently [[unemployed|on SSDI|looking for work]].", "[[Served in|Enlisted in]] the [[Army|Navy|Marines]] {AGE_THEN}.",
            "[[Married|Met {HIS} {partner_word}]] {AGE_THEN}.", "Divorced in {PAST}.",
            "Has [[a son|a daughter]] ({CHILD_AGE}) and [[a son|a daughter]] ({CHILD_AGE}).",
            "Has {num} children, ages {CHILD_AGE} and {CHILD_AGE}.", "[[Son|Daughter]] is {CHILD_AGE} and lives with {HIS} father.",
            "{His} {partner_word} {PARTNER} is a {ANY_PROFESSION}.", "Lives in an apartment in {LOCOTHER}.",
            "[[Catholic|Baptist|Jewish|Muslim|Not religious]].", "Enjoys [[painting|fishing|music|the gym]].",
            "Finances are [[tight|stable]].", "Has a car.", "Has friends through church.", "Close to {HIS} cousin {FRIEND}.",
            "{She} [[travels|goes]] to {COUNTRY} every {season} to see family.", "Speaks {language} at home.",
            "Works at {workplace}.", "Worked at {workplace} for {years} years.", "{She} was a {role}.", "Moved to {genplace} {AGE_THEN}.",
            "Attended {genschool}.", "Family is {nationality}.", "{She} identifies as {nationality}.", "Lives in {genplace}.",
            "{She} was a {PROFESSION} [[before {HIS} injury|until {DATE}|for {years} years]].", "{She} works {num} hours a week.",
            "{She} [[enjoyed|liked|hated]] school.", "Was held back in [[2nd|4th|8th]] grade.", "Has an IEP.",
            "[[Close|Not close]] to {HIS} parents.", "Parents divorced {AGE_THEN}.", "{She} has a dog.", "{She} volunteers at {capword}.",
            "Would like to go back to school to become a {ANY_PROFESSION}.", "Hopes to work as a {ANY_PROFESSION}.",
        ]
        self.sentences(templates, 7, 12)
        self.frames(5, 9)

    def medical(self) -> None:
        self.heading("Past Medical History", "Medical History", "PMH", "Medical")
        templates = [
            "[[Asthma|Hypothyroidism|Migraines|HTN|Obesity|Chronic back pain|Hep C|Seizure disorder|GERD]].",
            "PCP is {DR} at {HOSPITAL}.", "No head injury.", "Concussion {AGE_THEN}.", "No seizures.",
            "Allergies: [[NKDA|penicillin|sulfa]].", "[[Surgery|Appendectomy|C-section]] in {PAST}.",
        ]
        self.sentences(templates, 2, 4)

    def meds(self) -> None:
        self.heading("Current Medications", "Medications", "Meds")
        items = [" ".join(self.s.pick(lists.DRUGS_2016)) + self.s.pick(("", " daily", " qhs", " bid", " prn")) for _ in range(self.rng.randint(1, 4))]
        self.c.line(self.s.pick(("\n", ", ", "; ")).join(items))

    def psych_ros(self) -> None:
        """Review of psychiatric symptoms: capitalised non-PHI, fractions, scores."""
        self.heading("Review of Symptoms", "Psychiatric ROS", "Review of Systems", "Symptom Review")
        parts = [
            "Depression: [[+low mood, +anhedonia|+guilt, +poor sleep|denies|+hopelessness]]", "Mania: [[denies|+decreased need for sleep|+racing thoughts x{num} days]]",
            "Psychosis: [[denies AH/VH|+paranoia|denies]]", "Anxiety: [[+worry|+panic attacks {num}x/week|+restlessness]]",
            "PTSD: [[+nightmares|+flashbacks|denies]]", "OCD: [[denies|+checking]]", "ED: [[denies|+restricting]]",
            "ADHD: [[+distractibility|denies]]", "Sleep: [[{d}-{d} hrs|{d}/7 nights poor|poor]]", "Appetite: [[down|up|ok]]",
            "Energy: [[{d}/10|low]]", "Concentration: [[poor|fair]]", "SI: [[passive|denies]]", "HI: denies",
        ]
        sep = self.s.pick(("\n", ". ", "; "))
        self.c.line(sep.join(self.rng.sample(parts, self.rng.randint(6, len(parts)))))

    def strengths(self) -> None:
        self.heading("Strengths", "Strengths and Supports", "Goals")
        templates = [
            "Motivated for treatment.", "Good insight.", "Supportive family.", "Stable housing.", "Employed.", "Sense of humor.",
            "{She} wants to [[sleep better|get sober|return to work|feel less anxious]].", "Goal: [[{d} days sober|less panic|better sleep]].",
            "Engaged with [[AA|DBT|CBT|church]].", "Likes [[art|music|sports|cooking]].", "Insight is [[limited|fair|good]].",
        ]
        self.sentences(templates, 2, 5)

    def mse(self) -> None:
        self.heading("Mental Status Exam", "MSE", "Mental Status Examination")
        parts = [
            "Appearance: [[well groomed|disheveled|casually dressed|appears stated age|appears older than stated age]]",
            "Behavior: [[cooperative|guarded|tearful at times|good eye contact]]", "Speech: [[normal rate and volume|pressured|soft]]",
            "Mood: [[\"depressed\"|\"anxious\"|\"okay\"|\"stressed\"]]", "Affect: [[constricted|tearful|anxious|full range]]",
            "Thought process: [[linear|goal directed|tangential]]", "Thought content: [[no SI/HI|passive SI, no plan|no delusions]]",
            "Perception: [[no AH/VH|denies hallucinations]]", "Cognition: [[alert and oriented x3|grossly intact]]",
            "Insight: [[fair|limited|good]]", "Judgment: [[fair|intact|impaired]]",
            "Psychomotor: [[no agitation|slowed|restless]]", "Attention: [[intact|distractible]]",
            "Memory: [[intact|3/3 recall|2/3 at 5 minutes]]", "Fund of knowledge: [[average|below average]]",
            "Orientation: [[person, place and time|x3]]", "Impulse control: [[fair|poor]]",
        ]
        sep = self.s.pick(("\n", ". ", "; "))
        self.c.line(sep.join(self.rng.sample(parts, self.rng.randint(6, len(parts)))))

    def risk(self) -> None:
        self.heading("Risk Assessment", "Safety Assessment", "Risk")
        templates = [
            "Denies SI/HI.", "Passive SI without plan or intent.", "No access to firearms.", "Risk factors include {dx}.",
            "Protective factors: [[children|faith|future orientation|supportive {partner_word}]].",
            "No history of violence.", "Has a history of impulsive overdoses.", "Lives with others.", "Engaged in treatment.",
            "Not currently intoxicated.", "Able to contract for safety.", "Recent losses increase risk.",
            "Acute risk is [[low|moderate]].", "Chronic risk is elevated.", "Safety plan reviewed.",
        ]
        self.sentences(templates, 3, 6)

    def assessment(self) -> None:
        self.heading("Assessment", "Formulation", "Impression", "Assessment and Plan")
        self.c.line("[[{MS} {PT_LAST}|{PT_FIRST}|Pt]] is a {AGE_NOW} {woman} with [[a history of|]] {dx} who presents with {symptom}, "
                    "[[in the context of|after]] [[job loss|a breakup|relapse|the death of {HIS} {relative}]].")
        self.heading("Diagnosis", "Diagnoses", "DSM-5 Diagnosis")
        for _ in range(self.rng.randint(1, 3)):
            self.c.line(self.s.pick(("", "- ", "Axis I: ")) + self.s.pick(lists.DIAGNOSES_2016))

    def plan(self) -> None:
        self.heading("Plan", "Recommendations", "Treatment Plan")
        templates = [
            "Start {drugdose}.", "Increase {drug}.", "Continue {drugdose} daily.", "Taper {drug}.",
            "Refer to therapy with {THERAPIST}.", "Refer to [[IOP|PHP|DBT group]] at {HOSPITAL}.",
            "Follow up with [[me|{DR}|{THERAPIST}]] [[in {num} weeks|on {DATE}]].", "Next appointment {DATE}.",
            "Labs: [[lithium level|TSH|CBC, BMP|A1c and lipids]].", "Contact {PCP_SHORT} re: medical issues.",
            "Crisis line given: {PHONE}.", "{She} can call the clinic at {PHONE}.", "Signed release for {HOSPITAL}.",
            "AA meetings daily.", "Return precautions reviewed.", "Letter for {EMPLOYER} provided.",
        ]
        self.sentences(templates, 3, 6, newline_rate=0.6)

    def signature(self) -> None:
        c = self.c
        c.line()
        r = self.rng.random()
        if r < 0.5:
            c.line("{CLINICIAN}[[, MD|, PhD|, LICSW|, NP| MD|]]")
            if self.s.chance(0.4):
                c.line("[[Signed|Dictated]] {NOTE_DATE}")
        elif r < 0.8:
            c.line("[[Electronically signed by|Signed by|Evaluated by]] {CLINICIAN} on {NOTE_DATE}")
        else:
            c.line("[[Attending|Supervising psychiatrist]]: {DR}")
        if self.s.chance(0.05):
            c.line("[[Email|Contact]]: {EMAIL}")

    def write(self, doc_id: str, metadata: dict) -> Document:
        self.header()
        self.identifying()
        if self.s.chance(0.7):
            self.chief_complaint()
        self.hpi()
        middle = [self.psych_history, self.substance, self.legal, self.trauma, self.medical, self.meds,
                  self.family, self.social]
        odds = (0.95, 0.9, 0.5, 0.55, 0.7, 0.8, 0.9, 0.98)
        kept = [f for f, p in zip(middle, odds) if self.s.chance(p)]
        if self.s.chance(0.2):
            self.rng.shuffle(kept)
        for f in kept:
            f()
        if self.s.chance(0.6):
            self.psych_ros()
        self.mse()
        if self.s.chance(0.7):
            self.risk()
        if self.s.chance(0.5):
            self.strengths()
        self.assessment()
        self.plan()
        self.signature()
        return self.b.document(doc_id, metadata)


# Dated events: the 2016 notes date much of the history.
TIMELINE = [
    "{She} was seen in the ED on {DATE}.", "Admitted {DATE} to {DATE}.", "[[On|Since]] {DATE} {HE} has been on {drug}.",
    "{DATE}: started {drug}.", "{DATE}: ED visit for [[SI|intoxication|panic]].", "Relapsed on {DATE} after {num} months sober.",
    "{She} [[lost|left]] {HIS} job in {DATE}.", "Last therapy session was {DATE}.", "Moved out on {DATE}.",
    "[[Court date|Hearing]] was {DATE}.", "{She} was discharged on {DATE}.", "Outpatient care since {YEAR}.",
    "{She} has not worked since {DATE}.", "Began [[IOP|therapy|AA]] in {DATE}.", "Broke up with {PARTNER} in {DATE}.",
    "[[Worse|Better]] since {HOLIDAY}.", "Mood improved over {DATE}.", "[[Mother|Father|Grandmother]] died in {YEAR}.",
]

LOOKALIKES_2016 = (
    "{She} has hope for the future", "Mood is 5/10 today", "Slept 4/7 nights", "Drinks 2-3 times a week",
    "{She} feels young for {HIS} age", "{She} wants to be a better mother", "Worst day was last week",
    "Took 20 pills of Tylenol", "Scored 18 on the PHQ-9", "{She} works nights", "{She} went to church Sunday school as a child",
    "Sober for 90 days in the past", "Needs a note for work", "Lives in public housing", "Taking lithium 300 mg twice a day",
)


def _plural(job: str) -> str:
    """"nurse" -> "nurses", "salesman" -> "salesmen" (the whole word is the PHI)."""
    if job.endswith("man"):
        return job[:-3] + "men"
    if job.endswith(("s", "x", "ch", "sh")):
        return job + "es"
    if job.endswith("y") and job[-2:-1] not in "aeiou":
        return job[:-1] + "ies"
    return job + "s"


def _extra_slots(note: Intake2016) -> None:
    s = note.s
    note.c.slots["symptom_ing"] = lambda: s.pick(("sleeping all day", "isolating", "crying", "drinking", "not eating",
                                                  "yelling at the kids", "staying in bed", "pacing at night"))
    note.c.slots["AGE_THEN_REL"] = lambda: s.age_pieces(note.rng.randint(16, 80), s.pick(("at_n", "age_n")), "M")
    note.c.slots["PCP_SHORT"] = lambda: [("Dr. ", None)] + s.name(s.pick(note.other_clinicians), "last", "DOCTOR")
    base = note.c.slots["lookalike"]
    note.c.slots["lookalike"] = lambda: note.c.choose(base()).replace("{She}", note.c.slots["She"]()).replace("{HIS}", note.c.slots["HIS"]())


def generate(n_docs: int, seed: int, first_id: int = 1, rare_boost: float = 1.0, rare_frames: float = 0.06,
             metadata: dict | None = None) -> list[Document]:
    """``n_docs`` intake notes of the 2016 style, one per patient."""
    if first_id + n_docs > 10000:
        raise ValueError(f"{n_docs} notes from number {first_id} do not fit in 4 digits")
    docs = []
    for i in range(n_docs):
        number = first_id + i
        rng = random.Random(sub_seed("2016-note", seed, number))
        s = Surrogates(rng, LOCALES, word_name_rate=0.08, lower_name_rate=0.05)
        note_date = s.date_between(dt.date(2010, 1, 1), dt.date(2019, 12, 31))
        note = Intake2016(s, note_date, rare_boost, rare_frames)
        _extra_slots(note)
        meta = dict(metadata or {}, group=f"{number:04d}")
        docs.append(note.write(f"{number:04d}", meta))
    return docs
