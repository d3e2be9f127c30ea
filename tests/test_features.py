"""The shared linear feature extractor and the gazetteers."""
from __future__ import annotations

import pickle
import re
from importlib import resources

import numpy as np
import pytest

from ensemble_deid.corpus.document import Document
from ensemble_deid.taggers.features import REGEX_FEATURES, FeatureExtractor, vw_escape, vw_features
from ensemble_deid.taggers.gazetteers import GAZETTEER_FILES, Gazetteers, default_gazetteers, normalize, read_list

NOTE = (
    "HISTORY OF PRESENT ILLNESS:\n"
    "Mr. Smith (seen in Boston is a 45 yo man.\n"
    "Email: jdoe@example.org\n"
    "Nombre: Ana. Vive en San Sebastián de los Reyes (Madrid).\n"
)


@pytest.fixture(scope="module")
def doc():
    return Document("n1", NOTE)


@pytest.fixture(scope="module")
def fx():
    return FeatureExtractor()


def feats_of(doc, feats, word, nth=0):
    idx = [i for i, w in enumerate(doc.tokens.words) if w == word][nth]
    return set(feats[idx])


def test_one_feature_list_per_token(doc, fx):
    feats = fx.document_features(doc)
    assert len(feats) == len(doc.tokens)
    assert all(isinstance(f, list) and all(isinstance(s, str) for s in f) for f in feats)
    assert all("bias" in f for f in feats)


def test_window_ngrams_affixes_and_shapes(doc, fx):
    feats = fx.document_features(doc)
    f = feats_of(doc, feats, "Boston")
    assert {"w[0]=boston", "w[-1]=in", "w[-2]=seen", "w[1]=is", "w[2]=a"} <= f
    assert {"w[-1]|w[0]=in|boston", "w[0]|w[1]=boston|is", "w[-1]|w[0]|w[1]=in|boston|is"} <= f
    assert {"p1=B", "p5=Bosto", "s1=n", "s5=oston"} <= f
    assert {"shape=Aaaaaa", "sshape=Aa", "title", "hascap"} <= f
    assert "allcap" not in f and "digit" not in f
    assert {"sh[-1]=a", "sh[1]=a", "shape[-1]=aa"} <= f


def test_digits_are_shaped_in_the_window_but_raw_in_affixes(doc, fx):
    f = feats_of(doc, fx.document_features(doc), "45")
    assert "w[0]=00" in f and "w[0]=45" not in f
    assert {"p2=45", "digit", "shape=00"} <= f
    assert "w[-1]|w[0]=a|00" in f


def test_document_edges_are_padded(doc, fx):
    feats = fx.document_features(doc)
    assert {"w[-1]=<s>", "w[-2]=<s>", "bos", "bol"} <= set(feats[0])
    assert {"w[1]=</s>", "w[2]=</s>", "eol"} <= set(feats[-1])


def test_sections_and_fields(doc, fx):
    feats = fx.document_features(doc)
    assert "in_heading" in feats_of(doc, feats, "HISTORY")
    assert "sec=history_of_present_illness" in feats_of(doc, feats, "Smith")
    assert "in_key" in feats_of(doc, feats, "Email")
    assert "fld=email" in feats_of(doc, feats, "jdoe")
    assert "fld=nombre" in feats_of(doc, feats, "Ana")
    # the field value ends with its line
    assert not any(s.startswith("fld=") for s in feats_of(doc, feats, "Smith"))


def test_sentence_facts(doc, fx):
    feats = fx.document_features(doc)
    smith = feats_of(doc, feats, "Smith")
    assert "sbrk" in smith  # "(seen in Boston ..." never closes
    assert "send" in feats_of(doc, feats, "man")
    assert any(s.startswith("slen=") for s in smith)


def test_gazetteer_hits_multiword_and_accent_insensitive(doc, fx):
    feats = fx.document_features(doc)
    assert {"gz=city", "gz=city:B"} <= feats_of(doc, feats, "Boston")
    assert "gz=title" in feats_of(doc, feats, "Mr")
    assert "gz=city:B" in feats_of(doc, feats, "San")
    assert "gz=city:I" in feats_of(doc, feats, "Reyes")  # "San Sebastián de los Reyes"
    assert "gz=city" in feats_of(doc, feats, "Madrid")
    assert "gz=first_name" in feats_of(doc, feats, "Ana")


def test_regex_hits(doc, fx):
    feats = fx.document_features(doc)
    assert "re=email" in feats_of(doc, feats, "jdoe")
    assert "re=email" in feats_of(doc, feats, "example")
    assert not any(s.startswith("re=") for s in feats_of(doc, feats, "Boston"))


def test_groups_can_be_switched_off(doc):
    feats = FeatureExtractor(window=0, ngrams=1, affixes=(), shapes=False, orthography=False,
                             sentence=False, sections=False, gazetteers=False, regexes=False,
                             conjunctions=False).document_features(doc)
    assert all(f == ["bias", f"w[0]={w.lower() if not w.isdigit() else '0' * len(w)}"]
               for f, w in zip(feats, doc.tokens.words))
    bigrams = FeatureExtractor(window=1, ngrams=2).document_features(doc)
    assert not any(s.startswith("w[-1]|w[0]|w[1]=") for f in bigrams for s in f)
    assert any(s.startswith("w[-1]|w[0]=") for f in bigrams for s in f)


def test_invalid_parameters():
    with pytest.raises(ValueError):
        FeatureExtractor(window=-1)
    with pytest.raises(ValueError):
        FeatureExtractor(ngrams=0)
    with pytest.raises(ValueError):
        FeatureExtractor(affixes=(0, 2))


def test_empty_document(fx):
    empty = Document("e", "   \n ")
    assert fx.document_features(empty) == []
    assert fx.binary_flags(empty).shape == (0, len(fx.flag_names))


def test_binary_flags(doc, fx):
    flags = fx.binary_flags(doc)
    names = fx.flag_names
    assert flags.shape == (len(doc.tokens), len(names)) and flags.dtype == np.uint8
    assert set(np.unique(flags)) <= {0, 1}
    assert len(set(names)) == len(names)
    col = {n: j for j, n in enumerate(names)}
    words = doc.tokens.words
    boston = words.index("Boston")
    assert flags[boston, col["gz:city"]] == 1 and flags[boston, col["ortho:title"]] == 1
    assert flags[words.index("jdoe"), col["re:email"]] == 1
    assert flags[words.index("jdoe"), col["sec:in_value"]] == 1
    assert flags[0, col["sent:bos"]] == 1 and flags[0, col["sec:in_heading"]] == 1
    # exactly one sentence-length bucket per token
    buckets = [j for n, j in col.items() if n.startswith("sent:len")]
    assert np.all(flags[:, buckets].sum(1) == 1)
    # the same evidence as the string features
    feats = fx.document_features(doc)
    assert [("gz=city" in f) for f in feats] == flags[:, col["gz:city"]].astype(bool).tolist()
    assert [("sbrk" in f) for f in feats] == flags[:, col["sent:sbrk"]].astype(bool).tolist()
    assert all(f"re:{r}" in col for r in REGEX_FEATURES)


def test_flag_names_follow_parameters():
    names = FeatureExtractor(gazetteers=False, regexes=False).flag_names
    assert not any(n.startswith(("gz:", "re:")) for n in names)


def test_extractor_pickles_without_caches(doc, fx):
    before = fx.document_features(doc)
    blob = pickle.dumps(fx)
    assert len(blob) < 2000  # word cache and gazetteers are not shipped
    assert pickle.loads(blob).document_features(doc) == before


def test_config_is_plain(fx):
    cfg = fx.get_config()
    assert cfg["window"] == 2 and cfg["affixes"] == [1, 2, 3, 4, 5] and "version" in cfg
    assert "FeatureExtractor(" in repr(fx)


def test_vw_escaping():
    assert vw_escape("w[0]|w[1]=a:b c|d") == "w[0]\\pw[1]=a\\cb\\sc\\pd"
    line = vw_features(["w[0]=x:y", "p1=|"])
    assert ":" not in line and "|" not in line and len(line.split(" ")) == 2


def test_features_never_contain_white_space(doc, fx):
    assert not any(re.search(r"\s", s) for f in fx.document_features(doc) for s in f)


# --- gazetteers -------------------------------------------------------------------

def test_normalize():
    assert normalize("Álava") == "alava"
    assert normalize("PEÑA") == "pena"
    assert normalize("boston") == "boston"


def test_custom_gazetteers_and_membership():
    gaz = Gazetteers({"city": ["New York", "York"], "first_name": ["York"]})
    hits = gaz.match(["in", "new", "york", "."])
    assert hits[0] == ()
    assert ("city", True) in hits[1]
    assert {("city", False), ("city", True), ("first_name", True)} <= set(hits[2])
    assert ("city", "NEW YORK") in gaz and ("city", "Paris") not in gaz
    fx = FeatureExtractor(gazetteers=gaz)
    assert [n for n in fx.flag_names if n.startswith("gz:")] == ["gz:city", "gz:first_name"]
    doc = Document("g", "Born in New York.")
    flags = fx.binary_flags(doc)
    assert flags[doc.tokens.words.index("New"), fx.flag_names.index("gz:city")] == 1


def test_shipped_lists_have_spanish_and_english_entries():
    gaz = default_gazetteers()
    for name, entry in [("country", "España"), ("country", "Spain"), ("city", "Zaragoza"), ("city", "Chicago"),
                        ("state", "Andalucía"), ("state", "Massachusetts"), ("first_name", "José"),
                        ("last_name", "Fernández"), ("month", "marzo"), ("title", "Dra")]:
        assert (name, entry) in gaz, (name, entry)


def test_every_list_has_provenance():
    folder = resources.files("ensemble_deid").joinpath("data", "gazetteers")
    provenance = folder.joinpath("PROVENANCE.md").read_text(encoding="utf-8")
    shipped = sorted(p.name for p in folder.iterdir() if p.name.endswith(".txt"))
    assert shipped and sorted(GAZETTEER_FILES.values()) == shipped
    for fname in shipped:
        assert f"`{fname}`" in provenance, fname
        assert read_list(fname), fname
    assert "Faker" in provenance  # states that no list comes from it


def test_conjunctions(doc, fx):
    feats = fx.document_features(doc)
    boston = feats_of(doc, feats, "Boston")
    assert {"sh[-1]|sh[0]|sh[1]=a|Aa|a", "w[-1]|sh[0]=in|Aa", "sh[0]|w[1]=Aa|is", "gz|cap=city"} <= boston
    assert {"fld|pos=email|0", "fld|sh=email|a"} <= feats_of(doc, feats, "jdoe")
    assert "fld|pos=email|1" in feats_of(doc, feats, "@")
    lower = Document("m", "the man in boston")
    assert "gz|cap=city" not in feats_of(lower, fx.document_features(lower), "boston")
    assert "in_key" in feats_of(doc, feats, ":", 1)  # the colon of "Email:" belongs to the key
    plain = FeatureExtractor(conjunctions=False).document_features(doc)
    assert not any("|sh[0]" in s or s.startswith(("fld|", "gz|")) for f in plain for s in f)


# --- issue 35 item 5: the e-mail pattern in linear time ------------------------------------------

_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")  # the pattern as written, run by re directly


@pytest.mark.parametrize("text", [
    "jdoe@example.org", "a@b.c+d@e.f", "x..y@b.com.", "a@b@c.d", "é@a_a.é++@é1é.a+", "@a.b", "a@b", "+@-.-",
    "mail: a.b+c@d-e.fg, otra@h.es.", "a@b.c..d@e.f", "aB3+/" * 40 + "@x.y",
])
def test_email_matches_are_those_of_the_plain_pattern(text):
    assert [m.span() for m in REGEX_FEATURES["email"].finditer(text)] == [m.span() for m in _EMAIL.finditer(text)]


def test_email_matches_agree_with_the_plain_pattern_on_random_text():
    rng = np.random.default_rng(3)
    for alphabet in ("ab.+-@_1 é\n", "a.+@-", "ab@.c+", "a@.b+ "):
        for _ in range(3000):
            text = "".join(rng.choice(list(alphabet), size=rng.integers(0, 40)))
            assert [m.span() for m in REGEX_FEATURES["email"].finditer(text)] == [m.span() for m in _EMAIL.finditer(text)]


def test_a_megabyte_token_does_not_hang_feature_extraction():
    # A hang guard, not a speed target (that is in benchmarks/scale/bench_long_inputs.py):
    # before the fix one 80k-character token took a minute and this 1.2M-character one
    # hours (quadratic); now a few seconds.
    import subprocess
    import sys

    code = ("from ensemble_deid.corpus.document import Document\n"
            "from ensemble_deid.taggers.features import FeatureExtractor\n"
            "doc = Document('d', 'Adjunto: ' + 'QUJDab' * 200_000 + ' fin.')\n"
            "print(len(FeatureExtractor().document_features(doc)))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-2000:]
    assert int(done.stdout) >= 3
