"""BIO encoding over the common tokens, decoding back, and alignment loss."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ensemble_deid.corpus.bio import OUTSIDE, alignment_loss, decode, encode, gold_tags
from ensemble_deid.corpus.document import Annotation, Document
from ensemble_deid.corpus.tokenize import tokenize

TEXT = "Seen by Dr. Adams on 1/20/71 at Mercy Hospital."
#       0123456789012345678901234567890123456789012345678


def _ann(text, chunk, label, occurrence=0):
    start = -1
    for _ in range(occurrence + 1):
        start = text.index(chunk, start + 1)
    category, type_ = label.split(":")
    return Annotation(start, start + len(chunk), category, type_)


def test_encode_and_decode_a_note():
    toks = tokenize(TEXT)
    anns = [
        _ann(TEXT, "Adams", "NAME:DOCTOR"),
        _ann(TEXT, "1/20/71", "DATE:DATE"),
        _ann(TEXT, "Mercy Hospital", "LOCATION:HOSPITAL"),
    ]
    tags = encode(toks, anns)
    assert list(zip(toks.words, tags)) == [
        ("Seen", "O"), ("by", "O"), ("Dr", "O"), (".", "O"), ("Adams", "B-NAME:DOCTOR"), ("on", "O"),
        ("1", "B-DATE:DATE"), ("/", "I-DATE:DATE"), ("20", "I-DATE:DATE"), ("/", "I-DATE:DATE"),
        ("71", "I-DATE:DATE"), ("at", "O"), ("Mercy", "B-LOCATION:HOSPITAL"),
        ("Hospital", "I-LOCATION:HOSPITAL"), (".", "O"),
    ]
    assert decode(toks, tags) == sorted(anns)
    doc = Document("d", TEXT, anns)
    assert gold_tags(doc) == tags


def test_partial_token_overlap_tags_the_whole_token():
    text = "MRN12345 seen"
    toks = tokenize(text)  # MRN | 12345 | seen
    tags = encode(toks, [Annotation(4, 8, "ID", "MEDICALRECORD")])  # "2345": inside a token
    assert tags == ["O", "B-ID:MEDICALRECORD", "O"]
    assert decode(toks, tags) == [Annotation(3, 8, "ID", "MEDICALRECORD")]


def test_span_in_white_space_only_is_not_encoded():
    toks = tokenize("a    b")
    assert encode(toks, [Annotation(2, 4, "NAME", "PATIENT")]) == ["O", "O"]


def test_overlapping_gold_spans_first_then_longest_wins():
    text = "John Smith Jones"
    toks = tokenize(text)
    inner = Annotation(5, 10, "NAME", "DOCTOR")
    outer = Annotation(0, 10, "NAME", "PATIENT")
    later = Annotation(5, 16, "NAME", "DOCTOR")
    assert encode(toks, [inner, outer]) == ["B-NAME:PATIENT", "I-NAME:PATIENT", "O"]
    assert encode(toks, [later, outer]) == ["B-NAME:PATIENT", "I-NAME:PATIENT", "O"]
    report = alignment_loss([Document("d", text, [outer, inner])])
    assert (report.spans, report.misaligned, report.lost_to_overlap) == (2, 0, 1)
    assert report.loss == pytest.approx(0.5)


def test_i_after_o_is_repaired_into_a_span():
    toks = tokenize("a b c d e")
    spans = decode(toks, ["O", "I-NAME:PATIENT", "I-NAME:PATIENT", "O", "I-DATE:DATE"])
    assert spans == [Annotation(2, 5, "NAME", "PATIENT"), Annotation(8, 9, "DATE", "DATE")]


def test_label_change_and_b_open_new_spans():
    toks = tokenize("a b c d")
    tags = ["B-NAME:PATIENT", "I-NAME:DOCTOR", "B-NAME:DOCTOR", "I-NAME:DOCTOR"]
    assert decode(toks, tags) == [
        Annotation(0, 1, "NAME", "PATIENT"), Annotation(2, 3, "NAME", "DOCTOR"), Annotation(4, 7, "NAME", "DOCTOR"),
    ]


def test_decode_errors():
    toks = tokenize("a b c")
    with pytest.raises(ValueError, match="2 tags for 3 tokens"):
        decode(toks, ["O", "O"])
    with pytest.raises(ValueError, match="4 tags for 3 tokens"):
        decode(toks, ["O"] * 4)
    with pytest.raises(ValueError, match="token 1"):
        decode(toks, ["O", "X-NAME:PATIENT", "O"])
    with pytest.raises(ValueError, match="CATEGORY:TYPE"):
        decode(toks, ["O", "B-PATIENT", "O"])


def test_empty_text():
    toks = tokenize("")
    assert encode(toks, [Annotation(0, 1, "NAME", "PATIENT")]) == []
    assert decode(toks, []) == []
    assert alignment_loss([]).loss == 0.0


def test_alignment_loss_counts_boundaries_inside_tokens():
    text = "MRN12345 and Smithson"
    docs = [Document("d", text, [
        Annotation(3, 8, "ID", "MEDICALRECORD"),  # aligned: "12345" is a token
        Annotation(13, 18, "NAME", "PATIENT"),  # "Smith" ends inside "Smithson"
    ])]
    report = alignment_loss(docs)
    assert (report.spans, report.misaligned, report.lost_to_overlap) == (2, 1, 0)
    assert report.loss == pytest.approx(0.5)


_LABELS = ["NAME:PATIENT", "NAME:DOCTOR", "DATE:DATE", "LOCATION:CITY", "ID:MEDICALRECORD"]
_WORD = st.text(alphabet=st.sampled_from(list("ab1/.ñÁ-")), min_size=1, max_size=6)
_SEP = st.sampled_from([" ", "  ", "\n", "\t", " \r\n"])


@st.composite
def _tokens_and_spans(draw):
    words = draw(st.lists(_WORD, min_size=1, max_size=25))
    seps = draw(st.lists(_SEP, min_size=len(words), max_size=len(words)))
    text = "".join(w + s for w, s in zip(words, seps))
    toks = tokenize(text)
    n = len(toks)
    # Random cut points give non-overlapping token ranges; each gets a label or none.
    cuts = sorted(set(draw(st.lists(st.integers(0, n), max_size=12))) | {0, n})
    spans = []
    for a, b in zip(cuts, cuts[1:]):
        label = draw(st.sampled_from(_LABELS + [None, None]))
        if label is not None and a < b:
            category, type_ = label.split(":")
            spans.append(Annotation(int(toks.starts[a]), int(toks.ends[b - 1]), category, type_))
    return text, toks, spans


@settings(max_examples=200, deadline=None)
@given(_tokens_and_spans())
def test_token_aligned_spans_survive_encode_decode(case):
    text, toks, spans = case
    tags = encode(toks, spans)
    assert len(tags) == len(toks)
    assert sum(t.startswith("B-") for t in tags) == len(spans)
    assert decode(toks, tags) == sorted(spans)
    assert alignment_loss([Document("d", text, spans)]).loss == 0.0


@settings(max_examples=100, deadline=None)
@given(st.lists(st.sampled_from(["O"] + [p + lab for p in ("B-", "I-") for lab in _LABELS[:2]]), max_size=12))
def test_every_tag_sequence_decodes_to_a_fixed_point(tags):
    toks = tokenize(" ".join("w" * (i + 1) for i in range(len(tags))))
    spans = decode(toks, tags)
    assert all(a.end <= b.start for a, b in zip(spans, spans[1:]))
    # Re-encoding the decoded spans and decoding again changes nothing.
    assert decode(toks, encode(toks, spans)) == spans
    assert sum(t != OUTSIDE for t in encode(toks, spans)) == sum(t != OUTSIDE for t in tags)
