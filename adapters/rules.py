"""Rule tagger: regular expressions and small lexicons for PHI with a telling
shape, in the spirit of PhysioNet deid and [LIU17 Table 2].

It predicts only what it knows, in the i2b2 scheme:

| label | evidence |
|---|---|
| CONTACT:EMAIL, CONTACT:URL, CONTACT:IPADDR | their syntax |
| CONTACT:PHONE, CONTACT:FAX | US and Spanish number layouts; a bare digit run only after a cue (Tel., Tfno., phone, ...); FAX after a fax cue |
| ID:SSN | ddd-dd-dddd; any number after SSN / NASS / social security cues |
| ID:MEDICALRECORD | numbers after MRN, medical record, NHC, historia clínica, ... |
| ID:HEALTHPLAN, ID:LICENSE, ID:ACCOUNT, ID:IDNUM | numbers after insurance / licence (NºCol, DEA) / account, encounter, episodio / ID, DNI cues; Spanish DNI/NIE shapes |
| LOCATION:ZIP | after a US state abbreviation, a CP / código postal cue, or as "28034 Madrid" after a comma or at a line start |
| DATE:DATE | numeric dates (validated), month names (English, Spanish), years after a cue (in, since, en, desde, ...), weekdays and holidays; never a bare "7/10" without a date cue |
| AGE:AGE | "45 year old", "45 yo", "aged 45", "in her 60s"; Spanish "varón de 45 años", "edad: 45", "a los 3 años" (MEDDOCAN spans include the unit) |

``label_map`` renames its output to a corpus's scheme: a shipped map name
(``"i2b2-to-meddocan"``, from ``ensemble_deid/labelmaps/``), a TOML path, or an
inline ``{"types": {...}, "drop": [...]}`` dict. ``types`` keeps only some of
its labels (i2b2 names, before the label map). Spans are snapped to the common
tokens (``DocumentPrediction.from_spans``). No confidences: rules give none.
"""
from __future__ import annotations

import re
from importlib import resources
from pathlib import Path
from typing import Any, Iterable, Sequence

from ensemble_deid.corpus.document import Annotation, Document
from ensemble_deid.corpus.labelmap import LabelMap
from ensemble_deid.taggers.prediction import DocumentPrediction
from ensemble_deid.taggers.base import Tagger

# --- lexicons -------------------------------------------------------------------------

_MONTHS_EN = (
    r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?"
    r"|Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)"
)
_MONTHS_EN_FULL = r"(?:January|February|March|April|June|July|August|September|October|November|December)"
_MONTHS_ES = r"(?:enero|febrero|marzo|abril|mayo|junio|julio|agosto|septiembre|setiembre|octubre|noviembre|diciembre)"
_MONTHS_ES_ABBR = r"(?:ene|feb|mar|abr|may|jun|jul|ago|sep|sept|oct|nov|dic)"
_WEEKDAYS = (
    r"(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday"
    r"|[Ll]unes|[Mm]artes|[Mm]i[eé]rcoles|[Jj]ueves|[Vv]iernes|[Ss][aá]bado|[Dd]omingo)"
)
_HOLIDAYS = (
    r"(?:Christmas(?:\s+Eve)?|Thanksgiving|Easter|Halloween|New\s+Year'?s(?:\s+(?:Eve|Day))?"
    r"|Memorial\s+Day|Labor\s+Day|Independence\s+Day|Valentine'?s\s+Day"
    r"|Nochebuena|Nochevieja|Navidad(?:es)?|Semana\s+Santa)"
)
_US_STATES = (
    "AL AK AZ AR CA CO CT DE DC FL GA HI ID IL IN IA KS KY LA ME MD MA MI MN MS MO MT NE NV NH "
    "NJ NM NY NC ND OH OK OR PA RI SC SD TN TX UT VT VA WA WV WI WY PR"
).split()
_UNITS = r"(?:mg|mcg|µg|ug|g|kg|ml|mL|l|L|cc|cm|mm|m|u|U|UI|IU|mEq|mmol|mol|%|h|hrs?|min|lb|lbs|oz)"

_CUE_TEL = r"(?:tel(?:[eé]fono|efono|f)?|tfno|tlfno|tlf|telf|phone|ph|cell(?:ular)?|mobile|m[oó]vil|beeper|pager|call)"
_CUE_FAX = r"(?:fax|telefax)"
_NUMCUE = r"(?:\s*(?:#|n[º°o]\.?|no\.?|num(?:ber|ero|\.)?|n[uú]mero))?\s*[:#.-]?\s*"

# Spanish person nouns that introduce "de 45 años" as an age
_PERSON_ES = (
    r"(?:var[oó]n|mujer|hombre|paciente|ni[ñn][oa]|chic[oa]|se[ñn]or(?:a|ita)?|lactante|beb[eé]"
    r"|joven|adolescente|anciano|anciana|gestante|primigesta|secundigesta|reci[eé]n\s+nacid[oa]|individuo|sujeto|hij[oa]|herman[oa])"
)


def _re(pattern: str, flags: int = 0) -> re.Pattern:
    return re.compile(pattern, flags)


# (label, pattern, priority). The span is the named group "v" when present,
# else the whole match. Higher priority wins where candidates overlap.
_PATTERNS: list[tuple[str, re.Pattern, int]] = [
    # --- contact -----------------------------------------------------------------
    ("CONTACT:EMAIL", _re(r"(?<![\w.+-])[A-Za-z0-9][\w.+-]*@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}"), 100),
    ("CONTACT:URL", _re(r"\b(?:https?://|ftp://|www\.)[^\s<>\"'()]*[^\s<>\"'().,;:!?]", re.I), 95),
    ("CONTACT:URL", _re(
        r"(?<![@\w.-])(?:[A-Za-z0-9-]+\.)+(?:com|org|net|edu|gov|info|es|cat|eus|gal|uk|de|fr|it|eu|mx|ar|co|cl)"
        r"(?:/[^\s<>\"']*[^\s<>\"'().,;:!?])?(?![\w@])"), 60),
    ("CONTACT:IPADDR", _re(r"(?<![\d.])(?:(?:25[0-5]|2[0-4]\d|1?\d?\d)\.){3}(?:25[0-5]|2[0-4]\d|1?\d?\d)(?![\d.]\d)"), 90),
    # phone/fax after a cue (any digit layout)
    ("CONTACT:FAX", _re(rf"\b{_CUE_FAX}\b{_NUMCUE}(?P<v>\+?\(?\d[\d\s().-]{{4,18}}\d)(?!\d)", re.I), 82),
    ("CONTACT:PHONE", _re(rf"\b{_CUE_TEL}\b{_NUMCUE}(?P<v>\+?\(?\d[\d\s().-]{{4,18}}\d)(?!\d)", re.I), 81),
    # US layouts
    ("CONTACT:PHONE", _re(
        r"(?<![\d/.-])(?:\+?1[\s.-]?)?(?:\(\d{3}\)\s?|\d{3}[\s.-])\d{3}[\s.-]\d{4}"
        r"(?:\s*(?:x|ext\.?)\s*\d{1,5})?(?![\d/-])"), 55),
    # Spanish layouts: 9 digits starting 6-9 in groups 3-3-3, 3-2-2-2, 2-3-2-2, with an optional +34
    ("CONTACT:PHONE", _re(
        r"(?<![\d/.-])(?:(?:\+|00)34[\s.-]?)?[6-9]\d(?:\d[\s.-]\d{3}[\s.-]\d{3}|\d[\s.-]\d{2}[\s.-]\d{2}[\s.-]\d{2}"
        r"|[\s.-]\d{3}[\s.-]\d{2}[\s.-]\d{2})(?![\d/-])"), 55),
    ("CONTACT:PHONE", _re(r"(?:\+|00)34[\s.-]?(?P<v>[6-9]\d{8})(?!\d)"), 55),
    # --- ids -----------------------------------------------------------------------
    ("ID:SSN", _re(r"(?<![\d-])\d{3}-\d{2}-\d{4}(?![\d-])"), 75),
    ("ID:SSN", _re(
        rf"(?:\bSSN|\bN\.?A\.?S\.?S\b\.?|\bsocial\s+security|seguridad\s+social|\bafiliaci[oó]n){_NUMCUE}"
        r"(?P<v>\d[\d /-]{5,18}\d)(?!\d)", re.I), 85),
    ("ID:MEDICALRECORD", _re(
        rf"(?:\bMRN|\bMR\b|\bmedical\s+record|\brecord|\bunit|\bN\.?H\.?C\b\.?|\bhistoria(?:\s+cl[ií]nica)?|\bH\.?C\b\.?){_NUMCUE}"
        r"(?P<v>[A-Z]{0,3}[-\s]?\d[\dA-Za-z/-]{2,}\d|[A-Z]{0,3}\d{4,})(?![\w-])", re.I), 84),
    ("ID:HEALTHPLAN", _re(
        rf"(?:\binsurance|\bpolicy|\bmember|\bhealth\s*plan|\bmedicaid|\bmedicare|\btarjeta(?:\s+sanitaria)?|\bCIP|\bTSI|\bp[oó]liza){_NUMCUE}"
        r"(?P<v>[A-Z0-9][A-Z0-9-]{4,}\d[A-Z0-9]*)\b", re.I), 83),
    ("ID:LICENSE", _re(
        rf"(?:\bN[º°o]\.?\s*Col(?:egiado)?\b\.?|\bcolegiad[oa]|\blicen[sc]e|\blic\b\.?|\bDEA){_NUMCUE}"
        r"(?P<v>[A-Z]{0,2}\d[\d /-]{2,14}\d)(?!\d)", re.I), 83),
    ("ID:ACCOUNT", _re(
        rf"(?:\baccount|\bacct|\bencounter|\bvisit|\bepisod(?:e|io)|\bcuenta){_NUMCUE}"
        r"(?P<v>[A-Z]{0,3}\d[\dA-Z-]{3,})\b", re.I), 80),
    ("ID:IDNUM", _re(
        rf"(?:\bID|\bidentification|\bidentificaci[oó]n|\bDNI|\bNIF|\bNIE|\bpasaporte|\bpassport){_NUMCUE}"
        r"(?P<v>[A-Z]{0,3}\d[\dA-Z-]{3,})\b"), 70),
    ("ID:IDNUM", _re(r"(?<![\w-])(?:\d{8}|[XYZ]\d{7})[-\s]?[A-HJ-NP-TV-Z](?![\w-])"), 65),  # DNI / NIE
    # --- zip -----------------------------------------------------------------------
    ("LOCATION:ZIP", _re(rf"\b(?:{'|'.join(_US_STATES)})\.?,?\s+(?P<v>\d{{5}}(?:-\d{{4}})?)(?![\d-])"), 45),
    ("LOCATION:ZIP", _re(r"(?:\bC\.\s?P\.|\bCP\b|c[oó]digo\s+postal|\bzip(?:\s*code)?)\s*[:#.]?\s*(?P<v>\d{5}(?:-\d{4})?)(?!\d)", re.I), 78),
    ("LOCATION:ZIP", _re(
        r"(?:^|,[ \t]*|\n[ \t]*)(?P<v>(?:0[1-9]|[1-4]\d|5[0-2])\d{3})[ \t]+(?=[A-ZÁÉÍÓÚÑ][a-záéíóúñ]{2,})", re.M), 40),
    # --- dates -----------------------------------------------------------------------
    ("DATE:DATE", _re(
        r"(?<![\d/.-])(?P<a>\d{1,2})(?P<s>[/.-])(?P<b>\d{1,2})(?P=s)(?P<y>\d{4}|\d{2})(?![\d/-]|\.\d)"), 62),
    ("DATE:DATE", _re(r"(?<![\d/.-])(?:19|20)\d{2}(?P<s>[/.-])(?:0?[1-9]|1[0-2])(?P=s)(?:0?[1-9]|[12]\d|3[01])(?![\d/-])"), 62),
    ("DATE:DATE", _re(r"(?<![\d/.-])(?:0?[1-9]|1[0-2])[/-](?:19|20)\d{2}(?![\d/-])"), 58),
    ("DATE:DATE", _re(
        r"\b(?:on|since|from|until|till|through|dated?|el|del|desde|hasta|d[ií]a)\s+"
        r"(?P<v>(?:0?[1-9]|1[0-2])/(?:0?[1-9]|[12]\d|3[01]))(?![\d/])", re.I), 57),
    ("DATE:DATE", _re(
        rf"\b(?:(?:{_MONTHS_EN})\.?\s+\d{{1,2}}(?:st|nd|rd|th)?(?:,?\s+(?:19|20)?\d{{2}})?"
        rf"|\d{{1,2}}(?:st|nd|rd|th)?(?:\s+of)?\s+(?:{_MONTHS_EN})\.?(?:,?\s+(?:19|20)\d{{2}})?"
        rf"|(?:{_MONTHS_EN})\.?,?\s+(?:of\s+)?(?:19|20)\d{{2}}"
        rf"|(?:{_MONTHS_EN_FULL}))\b(?!\s*\d)"), 60),
    ("DATE:DATE", _re(
        rf"\b(?:\d{{1,2}}\s+de\s+{_MONTHS_ES}(?:\s+(?:de|del)\s+(?:19|20)\d{{2}})?"
        rf"|{_MONTHS_ES}\s+(?:de\s+|del\s+)?(?:19|20)\d{{2}}"
        rf"|\d{{1,2}}[-/\s]{_MONTHS_ES_ABBR}\.?[-/\s](?:19|20)?\d{{2}})\b", re.I), 61),
    ("DATE:DATE", _re(rf"\b(?:[Mm]es\s+de|[Ee]n|[Dd]esde|[Hh]asta|[Dd]urante)\s+(?P<v>{_MONTHS_ES})\b"), 52),
    ("DATE:DATE", _re(
        r"\b(?:in|since|from|until|by|during|year|en|desde|hasta|durante|a\s+finales\s+de|a\s+principios\s+de)\s+"
        rf"(?P<v>(?:19|20)\d{{2}})\b(?!\s*{_UNITS}\b)(?![.,]\d)", re.I), 50),
    ("DATE:DATE", _re(r"\b(?P<v>a[ñn]o\s+(?:19|20)\d{2})\b(?![.,]\d)", re.I), 51),  # MEDDOCAN: "año 2005"
    ("DATE:DATE", _re(rf"\b{_WEEKDAYS}\b"), 48),
    ("DATE:DATE", _re(rf"\b{_HOLIDAYS}\b"), 47),
    # --- ages ------------------------------------------------------------------------
    ("AGE:AGE", _re(
        r"(?<![\d.])(?P<v>\d{1,3})(?:\s*|-)(?:years?|yrs?|y)(?:\s*|-)old\b", re.I), 50),
    ("AGE:AGE", _re(r"(?<![\d.])(?P<v>\d{1,3})\s*(?:yo|y/o|y\.o\.?|yr\.?\s*old)(?![\w/])", re.I), 50),
    ("AGE:AGE", _re(r"\b(?:age|aged|age\s+of)\s*:?\s*(?P<v>\d{1,3})\b(?!\s*(?:%|years?\s+ago|months))", re.I), 49),
    ("AGE:AGE", _re(r"(?<![\d.])(?P<v>\d{1,3})\s*(?:years?|yrs?)\s+of\s+age\b", re.I), 49),
    ("AGE:AGE", _re(r"\bin\s+(?:his|her|their)\s+(?:early\s+|mid\s+|late\s+|mid-)?(?P<v>\d0'?s)\b", re.I), 48),
    ("AGE:AGE", _re(
        rf"(?:\b{_PERSON_ES}\s+(?:[^\W\d]+\s+){{0,3}}?de\s+|\bedad\s*(?:de\s*)?:?\s*|\ba\s+la\s+edad\s+de\s+)"
        r"(?P<v>\d{1,3}(?:\s*(?:años|meses|a\.)|(?=\s*[.,;\n]|\s+[A-Z])))"
        r"(?!\s+(?:de\s+(?:evoluci|duraci|seguimiento|tratamiento|antig|edad\s+gestacional)|antes|despu[eé]s|m[aá]s\s+tarde|tras))", re.I), 50),
    # "a los 3 años" is an age unless a duration follows ("a los 2 años del diagnóstico")
    ("AGE:AGE", _re(
        r"a\s+los\s+(?P<v>\d{1,3}\s*(?:años|meses))(?!\s+(?:del?\b(?!\s+edad)|tras|despu[eé]s|antes|m[aá]s|en\b|se\b|la\b|el\b))",
        re.I), 50),
]


# Dates that name places ("Hospital 12 de Octubre", "Calle 2 de Mayo") are not dates.
_DATE_VETO = re.compile(
    r"(?:hospital(?:\s+universitario)?|avenida|avda\.?|calle|c/|plaza|pza\.?|paseo|colegio|instituto|street|st\.|avenue|ave\.?)\s*$",
    re.I,
)


def _valid_numeric_date(m: re.Match) -> bool:
    a, b = int(m.group("a")), int(m.group("b"))
    if not (1 <= a <= 31 and 1 <= b <= 31):
        return False
    return a <= 12 or b <= 12


def _load_label_map(spec: Any) -> LabelMap | None:
    if spec is None:
        return None
    if isinstance(spec, LabelMap):
        return spec
    if isinstance(spec, dict):
        return LabelMap.from_dict(spec, source="<RuleTagger label_map>")
    spec = str(spec)
    path = Path(spec)
    if path.suffix == ".toml" and path.exists():
        return LabelMap.load(path)
    shipped = resources.files("ensemble_deid").joinpath("labelmaps", f"{spec}.toml")
    if "/" not in spec and "\\" not in spec and shipped.is_file():  # a name, never a path out of labelmaps/
        return LabelMap.from_dict(_toml(shipped.read_text(encoding="utf-8")), source=f"labelmaps/{spec}.toml")
    available = sorted(
        p.name[:-5] for p in resources.files("ensemble_deid").joinpath("labelmaps").iterdir() if p.name.endswith(".toml")
    )
    raise ValueError(f"label_map {spec!r} is neither a TOML file nor a shipped map; shipped: {available}")


def _toml(text: str) -> dict:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]
    return tomllib.loads(text)


def find_spans(text: str, labels: Iterable[str] | None = None) -> list[Annotation]:
    """The rule matches in ``text`` (i2b2 labels), overlaps resolved by pattern
    priority then length; sorted by offset."""
    wanted = None if labels is None else set(labels)
    candidates: list[tuple[int, int, int, str]] = []  # (-priority, -length, start, end, label)
    for label, pattern, priority in _PATTERNS:
        if wanted is not None and label not in wanted and label.split(":")[1] not in wanted:
            continue
        for m in pattern.finditer(text):
            if "a" in pattern.groupindex and not _valid_numeric_date(m):
                continue
            if label == "DATE:DATE" and _DATE_VETO.search(text, max(0, m.start() - 30), m.start()):
                continue
            if "v" in pattern.groupindex and m.group("v") is not None:
                start, end = m.span("v")
            else:
                start, end = m.span()
            # Trim white space and punctuation a loose pattern may take; an
            # opening bracket stays when the span closes it: "(617) 555-0140".
            while end > start and text[end - 1] in " \t\n.-(":
                end -= 1
            while start < end and (text[start] in " \t\n-" or (text[start] == "(" and ")" not in text[start:end])):
                start += 1
            if end > start:
                candidates.append((-priority, -(end - start), start, end, label))
    candidates.sort()
    taken: list[tuple[int, int]] = []
    out: list[Annotation] = []
    for _, _, start, end, label in candidates:
        if any(start < e and s < end for s, e in taken):
            continue
        taken.append((start, end))
        category, type_ = label.split(":")
        out.append(Annotation(start, end, category, type_))
    return sorted(out)


class RuleTagger(Tagger):
    """Regular expressions and lexicons; nothing to learn.

    Parameters:
        types: i2b2 labels (``"CONTACT:PHONE"``) or subtypes (``"PHONE"``) to
            emit; None for all of them.
        label_map: renames the output (shipped map name, TOML path or dict).
    """

    name = "rules"
    version = "2"  # 2: an opening bracket the span closes is kept ("(617) 555-0140")
    requires = ()
    # Nothing is learned, so its output for a document is the same in every
    # fold: the cache computes it once per document set, and a cross-corpus
    # ensemble counts it once, like the papers' external systems.
    external = True
    description = "regular expressions and lexicons for contact, ID, ZIP, date and age shapes (i2b2 labels)"

    LABELS: tuple[str, ...] = tuple(sorted({label for label, _, _ in _PATTERNS}))

    # label_map and types are checked by loading them (_check_params).
    _parameter_constraints = {"types": [None, list, tuple], "label_map": [None, str, dict, LabelMap]}

    @classmethod
    def local_settings(cls, params) -> list[str]:
        """A label map given as a file (not a shipped name or a dict) is local."""
        spec = params.get("label_map")
        local = isinstance(spec, str) and (spec.endswith(".toml") or "/" in spec or "\\" in spec)
        return super().local_settings(params) + (["label_map"] if local else [])

    def __init__(self, types: Sequence[str] | None = None, label_map: Any = None):
        self._store_params(locals())

    def _check_params(self) -> None:
        _load_label_map(self.label_map)
        if self.types is not None:
            known = set(self.LABELS) | {label.split(":")[1] for label in self.LABELS}
            unknown = sorted(set(self.types) - known)
            if unknown:
                raise ValueError(f"rules: unknown type(s) {unknown}; known: {list(self.LABELS)}")

    def fit(self, documents: Sequence[Document] = ()) -> "RuleTagger":
        """Nothing to learn: checks the parameters and marks the tagger fitted."""
        self.validate_params()
        self.label_map_ = _load_label_map(self.label_map)
        self.fitted_ = True
        return self

    # Saving: nothing is learned; loading re-runs the parameter checks of fit.
    def _fitted_state(self) -> dict:
        return {}

    def _restore_state(self, state: dict) -> None:
        self.fit()

    def predict(self, documents: Sequence[Document]) -> list[DocumentPrediction]:
        self.check_fitted()
        label_map = getattr(self, "label_map_", None)
        out = []
        for doc in documents:
            spans = find_spans(doc.text, self.types)
            if label_map is not None:
                spans = label_map.apply_all(spans)
            out.append(DocumentPrediction.from_spans(doc, spans))
        return out
