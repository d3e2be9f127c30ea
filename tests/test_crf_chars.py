"""The character-view CRF (issue 29): its features name no word, gazetteer,
section or regular expression, and it passes the shared adapter contract."""
from __future__ import annotations

from ensemble_deid.corpus.document import Document
from ensemble_deid.taggers.char_features import CharFeatureExtractor, char_ngrams
from ensemble_deid.taggers.features import FeatureExtractor

from .tagger_contract import TaggerContract
from .tiny_corpus import tiny_corpus


def test_char_ngrams_of_a_word():
    assert char_ngrams("Ana", range(2, 4)) == ["^a", "an", "na", "a$", "^an", "ana", "na$"]
    assert char_ngrams("x", range(3, 4)) == ["^x$"]


def test_features_of_a_short_note():
    doc = Document("d1", "Dr. Ana vio")
    feats = CharFeatureExtractor(min_n=3, max_n=3, context=1, context_n=3, shape_window=1).document_features(doc)
    words = list(doc.tokens.words)
    assert words == ["Dr", ".", "Ana", "vio"]
    ana = feats[2]
    assert ana == ["bias", "shape=Aaa", "sh[0]=Aa", "c=^an", "c=ana", "c=na$", "c[-1]=^.$", "c[1]=^vi", "c[1]=vio",
                   "c[1]=io$", "sh[-1]=.", "sh[1]=a", "sh[-1]|sh[0]=.|Aa"]
    assert feats[0][-3:] == ["sh[-1]=<b>", "sh[1]=.", "c[-1]=<s>"] or "c[-1]=<s>" in feats[0]


def test_the_view_shares_only_shapes_with_the_word_features():
    doc = tiny_corpus(3)[0]
    words = {f for token in FeatureExtractor().document_features(doc) for f in token} - {"bias"}
    chars = {f for token in CharFeatureExtractor().document_features(doc) for f in token} - {"bias"}
    shared = words & chars
    assert shared and all(f.startswith(("sh[", "shape=")) for f in shared)
    assert not any(f.startswith(("w[", "gz", "re=", "sec", "fld", "p1=", "s1=")) for f in chars)


class TestCrfCharsContract(TaggerContract):
    tagger_name = "crf-chars"
    tagger_params = {"max_iterations": 50}
