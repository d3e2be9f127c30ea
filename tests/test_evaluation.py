"""Hand-computed fixtures for every criterion and every quirk of the official
scorer (see shared/reference/evaluation.md), the worked example included.

Every expected count below is worked out by hand in the comments; none was
produced by running the code.
"""
from __future__ import annotations


import numpy as np
import pytest

from ensemble_deid.corpus.document import Annotation, Document
from ensemble_deid.evaluation import (
    ALL, OFFICIAL, EvalOptions, EvaluationError, EvaluationWarning, Scorer, evaluate, f_beta,
)


def find(text: str, context: str, inner: str | None = None) -> tuple[int, int]:
    """Offsets of ``inner`` inside the one occurrence of ``context``."""
    assert text.count(context) == 1, context
    start = text.index(context)
    if inner is None:
        return start, start + len(context)
    assert context.count(inner) == 1, inner
    start += context.index(inner)
    return start, start + len(inner)


def tag(text: str, label: str, context: str, inner: str | None = None) -> Annotation:
    category, type_ = label.split(":")
    s, e = find(text, context, inner)
    return Annotation(s, e, category, type_)


def counts(report, criterion):
    m = report[criterion].micro
    return (m.tp, m.fp, m.fn)


# --------------------------------------------------------------------------
# The worked example of evaluation.md, rebuilt as one hand-made pair of
# records whose counts give every printed figure at once.
#
# gold (14 tags, 23 tokens)                 system (13 tags, 22 tokens)
# G1  NAME:DOCTOR  "John Smith"    2 tok    S1-S7 = G1-G7 exactly (strict TP 7;
# G2  NAME:PATIENT "Mary Jones"    2 tok H        5 of them HIPAA: G2 G3 G5 G6 G7,
# G3  DATE:DATE    "2014-05-06"    3 tok H        12 tokens)
# G4  ID:IDNUM     "123456"        1 tok (IDNUM: never HIPAA, official quirk)
# G5  CONTACT:PHONE "555-1234"     2 tok H
# G6  AGE:AGE      "45"            1 tok H (every AGE is HIPAA, official quirk)
# G7  ID:MEDICALRECORD "MR12345"   1 tok H
# G8  DATE:DATE    "May 5"         2 tok H  S8  DATE "May 5,"  end +1: relaxed only
# G9  NAME:DOCTOR  "Lopez Garcia"  2 tok    S9  NAME:PATIENT same span: binary only;
#                                               HIPAA: S9 passes the filter, G9 not
# G10 LOCATION:CITY "Springfield"  1 tok H  S10 CITY "Spring" (end -5): partial token
# G11 DATE:DATE    "June 1999"     2 tok H  S11 DATE "(June 1999" start -1: tokens only
# G12 LOCATION:HOSPITAL "General"  1 tok    S13 HOSPITAL "General Hospital"
# G13 LOCATION:HOSPITAL "Hospital" 1 tok        (spans G12+G13: tokens only)
# G14 PROFESSION "staff nurse"     2 tok    S12 DATE "today": spurious, 1 tok H
#
# strict:  TP 7 (S1-S7), FP 6 (S8-S13), FN 7        -> P 7/13 .5385, R 7/14 .5, F1 14/27 .5185
# relaxed: + S8~G8 -> TP 8, FP 5, FN 6               -> 8/13 .6154, 8/14 .5714, F1 16/27 .5926
# token:   TP 12 (S1-S7) + 2 (S8) + 2 (S11) + 2 (S13) = 18; system 22 -> FP 4
#          (S9 2 wrong type, "Spring" 1, "today" 1); gold 23 -> FN 5 (G9 2, G10 1, G14 2)
#          -> 18/22 .8182, 18/23 .7826, F1 36/45 .80
# binary token: + S9's 2 tokens -> TP 20, FP 2, FN 3 -> 20/22 .9091, 20/23 .8696, F1 .8889
# HIPAA strict: gold in scope 8 (G2 G3 G5 G6 G7 G8 G10 G11), system in scope 10
#          (S2 S3 S5 S6 S7 S8 S9 S10 S11 S12); TP 5 -> 5/10 .50, 5/8 .625, F1 10/18 .5556
# binary strict: 7 + S9=G9 span -> TP 8, FP 5, FN 6
# HIPAA relaxed: 5 + S8~G8 = 6 -> 6/10, 6/8
# HIPAA token: gold tokens in scope 2+3+2+1+1+2+1+2 = 14; system 2+3+2+1+1 + 2+2+1+2+1 = 17;
#          TP 9 (S2 S3 S5 S6 S7) + 2 (S8) + 2 (S11) = 13 -> FP 4, FN 1
# HIPAA binary token: S9 matches no gold in scope (G9 is DOCTOR) -> same as HIPAA token
# HIPAA binary strict: S9's span matches G9, which is out of scope -> TP 5, FP 5, FN 3
# --------------------------------------------------------------------------
TEXT = (
    "Dr. John Smith saw Mary Jones on 2014-05-06. MRN 123456, phone 555-1234. Age 45. "
    "Record MR12345. Seen May 5, by Dr. Lopez Garcia in Springfield (June 1999) at "
    "General Hospital today; staff nurse present."
)
GOLD_TAGS = [
    tag(TEXT, "NAME:DOCTOR", "John Smith"),
    tag(TEXT, "NAME:PATIENT", "Mary Jones"),
    tag(TEXT, "DATE:DATE", "2014-05-06"),
    tag(TEXT, "ID:IDNUM", "MRN 123456", "123456"),
    tag(TEXT, "CONTACT:PHONE", "555-1234"),
    tag(TEXT, "AGE:AGE", "Age 45", "45"),
    tag(TEXT, "ID:MEDICALRECORD", "MR12345"),
    tag(TEXT, "DATE:DATE", "May 5,", "May 5"),
    tag(TEXT, "NAME:DOCTOR", "Lopez Garcia"),
    tag(TEXT, "LOCATION:CITY", "Springfield"),
    tag(TEXT, "DATE:DATE", "(June 1999", "June 1999"),
    tag(TEXT, "LOCATION:HOSPITAL", "General Hospital", "General"),
    tag(TEXT, "LOCATION:HOSPITAL", "General Hospital", "Hospital"),
    tag(TEXT, "PROFESSION:PROFESSION", "staff nurse"),
]
SYSTEM_TAGS = GOLD_TAGS[:7] + [
    tag(TEXT, "DATE:DATE", "May 5,"),
    tag(TEXT, "NAME:PATIENT", "Lopez Garcia"),
    tag(TEXT, "LOCATION:CITY", "Springfield", "Spring"),
    tag(TEXT, "DATE:DATE", "(June 1999"),
    tag(TEXT, "DATE:DATE", "today"),
    tag(TEXT, "LOCATION:HOSPITAL", "General Hospital"),
]


@pytest.fixture
def worked():
    gold = [Document("worked-01", TEXT, GOLD_TAGS)]
    return gold, {"worked-01": SYSTEM_TAGS}


def test_worked_example_printed_figures(worked):
    report = evaluate(*worked, criteria=OFFICIAL)
    printed = {  # criterion: (P, R, F1) as the official program printed them
        "strict": (0.5385, 0.5, 0.5185),
        "relaxed": (0.6154, 0.5714, 0.5926),
        "token": (0.8182, 0.7826, 0.80),
        "hipaa_strict": (0.50, 0.625, 0.5556),
        "binary_token": (0.9091, 0.8696, 0.8889),
    }
    for name, figures in printed.items():
        m = report[name].micro
        assert (round(m.precision, 4), round(m.recall, 4), round(m.f1, 4)) == figures, name


def test_worked_example_counts_every_criterion(worked):
    report = evaluate(*worked, criteria=OFFICIAL + ("binary_relaxed",))
    expected = {
        "strict": (7, 6, 7),
        "relaxed": (8, 5, 6),
        "token": (18, 4, 5),
        "binary_token": (20, 2, 3),
        "binary_strict": (8, 5, 6),
        "binary_relaxed": (9, 4, 5),  # binary strict + S8~G8
        "hipaa_token": (13, 4, 1),
        "hipaa_strict": (5, 5, 3),
        "hipaa_relaxed": (6, 4, 2),
        "hipaa_binary_token": (13, 4, 1),
        "hipaa_binary_strict": (5, 5, 3),
    }
    assert {k: counts(report, k) for k in expected} == expected


def test_worked_example_semeval(worked):
    # S1-S7 exact (7); S9 PATIENT on G9's span: same boundaries, other label (1);
    # S8 ~ G8, S10 "Spring" ~ G10, S11 ~ G11, S13 ~ G12 (first gold it overlaps):
    # overlap, same label (4); S12 "today": spurious (1); G13, G14: missed (2).
    report = evaluate(*worked, criteria="semeval")
    outcomes = {k: tuple(report[k].outcomes[o] for o in ("correct", "incorrect", "partial", "missed", "spurious"))
                for k in report.criteria}
    assert outcomes == {
        "semeval_strict": (7, 5, 0, 2, 1),   # incorrect = 1 + 4
        "semeval_exact": (8, 4, 0, 2, 1),    # + same boundaries
        "semeval_partial": (8, 0, 4, 2, 1),  # overlaps earn half
        "semeval_type": (11, 1, 0, 2, 1),    # + overlaps with the same label
    }
    # partial: P = (8 + 4/2) / actual 13, R = 10 / possible 14
    m = report["semeval_partial"].micro
    assert (m.precision, m.recall) == (pytest.approx(10 / 13), pytest.approx(10 / 14))


def test_worked_example_breakdowns(worked):
    report = evaluate(*worked, criteria=["strict"])
    by_cat = {k: (v.tp, v.fp, v.fn) for k, v in report["strict"].by_category.items()}
    # NAME: G1 G2 G9 / S1 S2 S9; DATE: G3 G8 G11 / S3 S8 S11 S12; ID: G4 G7 / S4 S7;
    # LOCATION: G10 G12 G13 / S10 S13; PROFESSION: G14 / -
    assert by_cat == {
        "NAME": (2, 1, 1), "PROFESSION": (0, 0, 1), "LOCATION": (0, 2, 3), "AGE": (1, 0, 0),
        "DATE": (1, 3, 2), "CONTACT": (1, 0, 0), "ID": (2, 0, 0), "OTHER": (0, 0, 0),
    }
    sub = report["strict"].by_subtype
    assert (sub["NAME:DOCTOR"].tp, sub["NAME:DOCTOR"].fp, sub["NAME:DOCTOR"].fn) == (1, 0, 1)
    assert (sub["NAME:PATIENT"].tp, sub["NAME:PATIENT"].fp, sub["NAME:PATIENT"].fn) == (1, 1, 0)
    assert (sub["LOCATION:HOSPITAL"].tp, sub["LOCATION:HOSPITAL"].fp, sub["LOCATION:HOSPITAL"].fn) == (0, 1, 2)


def test_worked_example_leak(worked):
    leak = evaluate(*worked, criteria=["strict"]).leak
    # tokens left uncovered: "Springfield" (only "Spring" covered), "staff", "nurse"
    assert (leak.overall.tokens, leak.overall.leaked_tokens) == (23, 3)
    # non-space gold characters: 9+9+10+6+8+2+7+4+11+11+8+7+8+10 = 110; leaked "field" + "staffnurse"
    assert (leak.overall.chars, leak.overall.leaked_chars) == (110, 15)
    # HIPAA gold: G2 G3 G5 G6 G7 G8 G10 G11: 14 tokens, 59 characters; only "Springfield" leaks
    assert (leak.hipaa.tokens, leak.hipaa.leaked_tokens, leak.hipaa.chars, leak.hipaa.leaked_chars) == (14, 1, 59, 5)
    assert (leak.by_category["PROFESSION"].leaked_tokens, leak.by_category["PROFESSION"].tokens) == (2, 2)
    assert leak.overall.token_rate == pytest.approx(3 / 23)
    # entities: 14 gold tags; G10 ("Springfield") and G14 ("staff nurse") have a leaked token
    assert (leak.overall.entities, leak.overall.leaked_entities) == (14, 2)
    assert (leak.hipaa.entities, leak.hipaa.leaked_entities) == (8, 1)
    assert (leak.by_category["PROFESSION"].entities, leak.by_category["PROFESSION"].leaked_entities) == (1, 1)
    assert leak.overall.entity_rate == pytest.approx(2 / 14)


def test_worked_example_quirk_switches(worked):
    # IDNUM kept: G4/S4 join HIPAA strict as a TP -> 6/11, 6/9
    r = evaluate(*worked, criteria=["hipaa_strict"], options=EvalOptions(hipaa_exclude_idnum=False))
    assert counts(r, "hipaa_strict") == (6, 5, 3)
    # Safe Harbor ages: "45" is not over 89, so G6/S6 leave HIPAA scope -> 4/9, 4/7
    r = evaluate(*worked, criteria=["hipaa_strict"], options=EvalOptions(hipaa_all_ages=False))
    assert counts(r, "hipaa_strict") == (4, 5, 3)


# --------------------------------------------------------------------------
# Quirks, one small hand-computed fixture each.
# --------------------------------------------------------------------------
FILLER = "The patient Lopez Garcia was seen on 2014-05-06 in Boston by Dr. Zoë O'Brien, age 45 and 95. " * 2


def doc(*tags: Annotation, text: str = FILLER, id: str = "d1") -> Document:
    return Document(id, text, tags)


def ann(start, end, label="DATE:DATE"):
    c, t = label.split(":")
    return Annotation(start, end, c, t)


def score(gold_tags, system_tags, criteria, options=EvalOptions(), text=FILLER):
    return evaluate([doc(*gold_tags, text=text)], {"d1": list(system_tags)}, criteria=criteria, options=options)


def test_duplicate_system_tags_collapse():
    g = ann(37, 47)
    r = score([g], [g, ann(37, 47)], ["strict", "token", "relaxed", "semeval_strict"])
    assert counts(r, "strict") == (1, 0, 0)
    assert counts(r, "token") == (3, 0, 0)  # 2014 / 05 / 06
    assert counts(r, "relaxed") == (1, 0, 0)
    assert counts(r, "semeval_strict") == (1, 0, 0)


def test_same_span_two_types_is_two_keys():
    r = score([ann(37, 47)], [ann(37, 47), ann(37, 47, "ID:IDNUM")], ["strict", "binary_strict", "token"])
    assert counts(r, "strict") == (1, 1, 0)
    assert counts(r, "binary_strict") == (1, 0, 0)  # both are the key (37, 47)
    assert counts(r, "token") == (3, 3, 0)


def test_strict_upper_cases_names_and_types_token_does_not():
    s, e = find(FILLER[:94], "Lopez Garcia")
    gold = [Annotation(s, e, "NAME", "PATIENT")]
    system = [Annotation(s, e, "name", "patient")]
    r = score(gold, system, ["strict", "relaxed", "token", "binary_token", "hipaa_strict"])
    assert counts(r, "strict") == (1, 0, 0)
    assert counts(r, "relaxed") == (1, 0, 0)
    assert counts(r, "token") == (0, 2, 2)  # case-sensitive: "name/patient" != "NAME/PATIENT"
    assert counts(r, "binary_token") == (2, 0, 0)
    # the HIPAA filter is a case-sensitive prefix match: "patient" is not kept
    assert counts(r, "hipaa_strict") == (0, 0, 1)


def test_strict_ignores_text_id_comment_attributes():
    g = Annotation(37, 47, "DATE", "DATE", text="2014-05-06", id="P0", comment="x")
    s = Annotation(37, 47, "DATE", "DATE", text=None, id="T9", comment="")
    assert counts(score([g], [s], ["strict"]), "strict") == (1, 0, 0)


@pytest.mark.parametrize("end,expected", [
    (45, (1, 0, 0)), (49, (1, 0, 0)),  # end within 2 either way
    (44, (0, 1, 1)), (50, (0, 1, 1)),  # 3 away: no match
])
def test_relaxed_end_tolerance(end, expected):
    assert counts(score([ann(37, 47)], [ann(37, end)], ["relaxed"]), "relaxed") == expected


def test_relaxed_needs_same_start_and_type():
    r = score([ann(37, 47)], [ann(38, 47), ann(37, 47, "ID:IDNUM")], ["relaxed"])
    assert counts(r, "relaxed") == (0, 2, 1)


def test_relaxed_one_gold_absorbs_two_system_tags():
    # gold end E=47; system ends E-2 and E+2 (4 apart: both stay in the system set).
    # |system| 2 > |gold| 1, so TP = matched gold = 1; FP = system tags with no
    # gold within 2 = 0; FN 0.  One-to-one: one pair, the other system tag is FP.
    gold, system = [ann(37, 47)], [ann(37, 45), ann(37, 49)]
    assert counts(score(gold, system, ["relaxed"]), "relaxed") == (1, 0, 0)
    one = score(gold, system, ["relaxed"], EvalOptions(relaxed_many_to_one=False))
    assert counts(one, "relaxed") == (1, 1, 0)


def test_relaxed_system_tags_within_two_collapse():
    # system ends 46 and 47 are "equal": the set keeps the first (46) only.
    gold, system = [ann(37, 47)], [ann(37, 46), ann(37, 47)]
    assert counts(score(gold, system, ["relaxed"]), "relaxed") == (1, 0, 0)
    assert counts(score(gold, system, ["strict"]), "strict") == (1, 1, 0)
    one = score(gold, system, ["relaxed"], EvalOptions(relaxed_many_to_one=False))
    assert counts(one, "relaxed") == (1, 1, 0)


def test_relaxed_intersection_walks_the_smaller_set():
    # gold ends 44 and 47 (3 apart: both kept), system end 46 (within 2 of both).
    # |system| 1 <= |gold| 2: TP = matched system tags = 1; FN = gold tags with no
    # system tag within 2 = 0; FP 0.  So P = 1, R = 1/(1+0) = 1 with one TP.
    gold, system = [ann(37, 44), ann(37, 47)], [ann(37, 46)]
    assert counts(score(gold, system, ["relaxed"]), "relaxed") == (1, 0, 0)
    one = score(gold, system, ["relaxed"], EvalOptions(relaxed_many_to_one=False))
    assert counts(one, "relaxed") == (1, 0, 1)


def test_token_partial_token_is_one_fp_and_one_fn():
    s, e = find(FILLER[:94], "Lopez")
    gold = [Annotation(s, e, "NAME", "PATIENT")]
    system = [Annotation(s, s + 3, "NAME", "PATIENT")]  # "Lop"
    r = score(gold, system, ["token", "strict", "relaxed"])
    assert counts(r, "token") == (0, 1, 1)
    assert counts(r, "strict") == (0, 1, 1)
    assert counts(r, "relaxed") == (1, 0, 0)  # end 2 short


def test_token_regex_ascii_quirk_and_unicode_switch():
    s, e = find(FILLER[:94], "Zoë")
    gold = [Annotation(s, e, "NAME", "DOCTOR")]
    system = [Annotation(s, s + 2, "NAME", "DOCTOR")]  # "Zo"
    # [a-zA-Z0-9]+ cuts "Zoë" to the token "Zo": the system tag matches it
    assert counts(score(gold, system, ["token"]), "token") == (1, 0, 0)
    uni = score(gold, system, ["token"], EvalOptions(ascii_token_regex=False))
    assert counts(uni, "token") == (0, 1, 1)


def test_token_punctuation_separates_tokens():
    s, e = find(FILLER[:94], "O'Brien")
    r = score([Annotation(s, e, "NAME", "DOCTOR")], [Annotation(s + 2, e, "NAME", "DOCTOR")], ["token"])
    assert counts(r, "token") == (1, 0, 1)  # gold O / Brien; system Brien


def test_token_tag_without_alphanumerics_is_one_empty_token():
    text = "Seen on ## and -- ok"
    g = Annotation(8, 10, "OTHER", "OTHER")  # "##"
    # the empty token sits at the tag's end (the official split puts it after
    # the covered text): gold "##" -> (10, 10), system "#" -> (9, 9): no match
    r = score([g], [Annotation(8, 9, "OTHER", "OTHER")], ["token", "strict"], text=text)
    assert counts(r, "token") == (0, 1, 1)
    # "##" [8, 10) and its second "#" [9, 10) share the end 10: one empty token (10, 10)
    r = score([g], [Annotation(9, 10, "OTHER", "OTHER")], ["token"], text=text)
    assert counts(r, "token") == (1, 0, 0)
    r = score([g], [], ["token"], text=text)
    assert counts(r, "token") == (0, 0, 1)
    r = score([g], [Annotation(15, 17, "OTHER", "OTHER")], ["token"], text=text)
    assert counts(r, "token") == (0, 1, 1)


def test_hipaa_idnum_quirk():
    g = ann(37, 47, "ID:IDNUM")
    assert counts(score([g], [g], ["hipaa_strict", "strict"]), "hipaa_strict") == (0, 0, 0)
    r = score([g], [g], ["hipaa_strict"], EvalOptions(hipaa_exclude_idnum=False))
    assert counts(r, "hipaa_strict") == (1, 0, 0)


def test_hipaa_age_quirk_and_safe_harbor():
    t = FILLER[:94]
    a45, a95 = find(t, "age 45", "45"), find(t, "and 95", "95")
    tags = [ann(*a45, "AGE:AGE"), ann(*a95, "AGE:AGE")]
    assert counts(score(tags, tags, ["hipaa_strict"]), "hipaa_strict") == (2, 0, 0)
    safe = EvalOptions(hipaa_all_ages=False)
    assert counts(score(tags, tags, ["hipaa_strict"], safe), "hipaa_strict") == (1, 0, 0)
    # an age without digits cannot be ruled out: kept
    text = "aged ninety-two years"
    words = [Annotation(5, 15, "AGE", "AGE")]
    assert counts(score(words, words, ["hipaa_strict"], safe, text=text), "hipaa_strict") == (1, 0, 0)


def test_hipaa_filter_is_prefix_match_and_wrong_hipaa_type_is_fp():
    s, e = find(FILLER[:94], "Lopez Garcia")
    gold = [Annotation(s, e, "NAME", "DOCTOR"), ann(37, 47)]
    system = [Annotation(s, e, "NAME", "PATIENT"), ann(37, 47, "DATE:DATERANGE")]
    r = score(gold, system, ["hipaa_strict", "hipaa_binary_strict", "strict"])
    # gold DOCTOR is out of scope; system PATIENT and DATERANGE (prefix DATE) are in
    assert counts(r, "hipaa_strict") == (0, 2, 1)
    assert counts(r, "hipaa_binary_strict") == (1, 1, 0)
    assert counts(r, "strict") == (0, 2, 2)


def test_binary_variants_ignore_names_and_types():
    s, e = find(FILLER[:94], "Boston")
    gold = [Annotation(s, e, "LOCATION", "CITY")]
    system = [Annotation(s, e, "NAME", "PATIENT")]
    r = score(gold, system, ["binary_strict", "binary_token", "strict", "token"])
    assert counts(r, "binary_strict") == (1, 0, 0)
    assert counts(r, "binary_token") == (1, 0, 0)
    assert counts(r, "strict") == (0, 1, 1)
    assert counts(r, "token") == (0, 1, 1)


def test_macro_official_definition():
    t = "aaaa bbbb cccc dddd"
    gold = [
        Document("A", t, [ann(0, 4), ann(5, 9)]),
        Document("B", t, [ann(0, 4)]),
        Document("C", t, []),
    ]
    system = {"A": [ann(0, 4), ann(10, 14)], "B": [ann(0, 4)], "C": []}
    r = evaluate(gold, system, criteria=["strict"])["strict"]
    # per document P: A 1/2, B 1, C 0 (nothing in scope); R likewise
    assert r.macro.precision == pytest.approx(0.5)
    assert r.macro.recall == pytest.approx(0.5)
    assert r.macro.precision_sd == pytest.approx(np.sqrt((0 + 0.25 + 0.25) / 3))  # population SD
    assert r.macro.f1 == pytest.approx(0.5)
    assert (r.micro.tp, r.micro.fp, r.micro.fn) == (2, 1, 1)
    assert r.micro.f1 == pytest.approx(2 / 3)
    assert r.documents.tp.tolist() == [1, 1, 0] and r.documents.doc_ids == ("A", "B", "C")


def test_f_beta():
    assert f_beta(0.5, 1.0, 1) == pytest.approx(2 / 3)
    assert f_beta(0.5, 1.0, 2) == pytest.approx(5 * 0.5 / (4 * 0.5 + 1))
    assert f_beta(0.0, 0.0, 1) == 0.0
    m = evaluate([doc(ann(37, 47), ann(58, 64, "LOCATION:CITY"))], {"d1": [ann(37, 47)]}, criteria=["strict"])["strict"].micro
    assert (m.precision, m.recall) == (1.0, 0.5)
    assert m.f2 == pytest.approx(5 * 0.5 / (4 + 0.5))


def test_semeval_schemes_hand_computed():
    text = "x" * 60
    gold = [ann(0, 5, "NAME:PATIENT"), ann(10, 15), ann(20, 25, "LOCATION:CITY"), ann(30, 35, "ID:IDNUM"), ann(40, 45, "AGE:AGE")]
    system = [
        ann(0, 5, "NAME:PATIENT"),    # exact match
        ann(10, 15, "LOCATION:CITY"),  # same boundaries, other label
        ann(20, 23, "LOCATION:CITY"),  # overlap, same label
        ann(31, 38),                   # overlap, other label
        ann(50, 55),                   # spurious; gold (40, 45) is missed
    ]
    r = evaluate([Document("d", text, gold)], {"d": system}, criteria="semeval")
    outcome = {k: tuple(r[k].outcomes[o] for o in ("correct", "incorrect", "partial", "missed", "spurious")) for k in r.criteria}
    assert outcome == {
        "semeval_strict": (1, 3, 0, 1, 1),
        "semeval_exact": (2, 2, 0, 1, 1),
        "semeval_partial": (2, 0, 2, 1, 1),
        "semeval_type": (2, 2, 0, 1, 1),
    }
    # possible = cor+inc+par+mis = 5, actual = cor+inc+par+spu = 5 (the five system tags)
    assert (r["semeval_strict"].micro.precision, r["semeval_strict"].micro.recall) == (pytest.approx(1 / 5), pytest.approx(1 / 5))
    # partial: (correct + partial/2) = 2 + 1 = 3 over 5 each way
    assert (r["semeval_partial"].micro.precision, r["semeval_partial"].micro.recall) == (pytest.approx(3 / 5), pytest.approx(3 / 5))


def test_semeval_first_overlapping_gold_decides():
    text = "x" * 20
    gold = [ann(0, 5), ann(6, 10)]
    r = evaluate([Document("d", text, gold)], {"d": [ann(3, 8)]}, criteria=["semeval_strict", "semeval_partial"])
    assert r["semeval_strict"].outcomes == {"correct": 0, "incorrect": 1, "partial": 0, "missed": 1, "spurious": 0}
    assert counts(r, "semeval_partial") == (0.5, 0.5, 1.5)


# --------------------------------------------------------------------------
# Inputs: missing documents, texts, ids.
# --------------------------------------------------------------------------
def two_docs():
    return [doc(ann(37, 47), id="a"), doc(ann(37, 47), ann(58, 64, "LOCATION:CITY"), id="b")]


def test_missing_document_is_an_error_by_default():
    with pytest.raises(EvaluationError, match="'b'"):
        evaluate(two_docs(), {"a": [ann(37, 47)]})


def test_missing_as_empty_counts_false_negatives_and_warns():
    with pytest.warns(EvaluationWarning, match="empty"):
        r = evaluate(two_docs(), {"a": [ann(37, 47)]}, criteria=["strict"], options=EvalOptions(missing="empty"))
    assert counts(r, "strict") == (1, 0, 2)
    assert r.missing == ("b",) and r.n_documents == 2


def test_skip_missing_mimics_official_and_warns():
    with pytest.warns(EvaluationWarning, match="skipped"):
        r = evaluate(two_docs(), {"a": [ann(37, 47)]}, criteria=["strict"], options=EvalOptions(missing="skip"))
    assert counts(r, "strict") == (1, 0, 0)
    assert r.doc_ids == ("a",)
    with pytest.warns(EvaluationWarning):
        c = Scorer(two_docs(), "strict", EvalOptions(missing="skip")).counts({"a": [ann(37, 47)]})
    assert c.doc_ids == ("a",) and c.tp.tolist() == [1]


def test_extra_system_documents_warn_and_are_ignored():
    with pytest.warns(EvaluationWarning, match="no gold"):
        r = evaluate(two_docs()[:1], {"a": [ann(37, 47)], "zzz": [ann(0, 3)]}, criteria=["strict"])
    assert counts(r, "strict") == (1, 0, 0)


def test_text_mismatch_names_the_document_not_the_text():
    gold = two_docs()
    system = [Document("a", FILLER, [ann(37, 47)]), Document("b", FILLER.replace("Boston", "Denver"), [])]
    with pytest.raises(EvaluationError) as err:
        evaluate(gold, system)
    assert "'b'" in str(err.value) and "Boston" not in str(err.value) and "Denver" not in str(err.value)


def test_documents_as_system_and_out_of_range_tags():
    gold = two_docs()
    system = [g.with_annotations(g.annotations[:1]) for g in gold]
    r = evaluate(gold, system, criteria=["strict"])
    assert counts(r, "strict") == (2, 0, 1)
    with pytest.raises(EvaluationError, match="'a'"):
        evaluate(gold, {"a": [ann(180, 999)], "b": []})


def test_duplicate_gold_ids_rejected():
    with pytest.raises(EvaluationError, match="duplicate"):
        evaluate([doc(id="a"), doc(id="a")], {"a": []})


def test_report_renderings(worked):
    import csv
    import io
    import json

    from ensemble_deid.evaluation.render import render

    report = evaluate(*worked)
    table = render(report, "table")
    assert "strict" in table and "0.5385" in table
    data = json.loads(render(report, "json"))
    assert data["criteria"]["strict"]["micro"]["tp"] == 7
    assert set(data["criteria"]) == set(ALL)
    rows = list(csv.DictReader(io.StringIO(render(report, "csv"))))
    f1 = [r for r in rows if r["section"] == "micro" and r["criterion"] == "token" and r["measure"] == "f1"]
    assert float(f1[0]["value"]) == pytest.approx(0.8)
    for rendered in (table, render(report, "json"), render(report, "csv")):
        assert "Lopez" not in rendered and "Springfield" not in rendered  # no PHI in output
