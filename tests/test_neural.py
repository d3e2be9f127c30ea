"""Neural taggers (issue 7): the BiLSTM(-CRF) network, its CRF algebra, the
embeddings loader, training on the tiny corpus, checkpoints, and the shared
adapter contract for lstm-crf-n, lstm-crf-l, lstm-l and lstm-crf-fea.

Small dimensions and few epochs keep each fit to a couple of CPU seconds.
"""
from __future__ import annotations

import inspect
import itertools
import json
import pickle
import subprocess
import sys
from collections import Counter

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torchcrf")

from ensemble_deid.corpus.bio import OUTSIDE, gold_tags  # noqa: E402
from ensemble_deid.taggers.neural.base import NeuralTagger, split_held_out  # noqa: E402
from ensemble_deid.taggers.constraints import InvalidParameter  # noqa: E402
from ensemble_deid.taggers.prediction import DocumentPrediction  # noqa: E402
from ensemble_deid.taggers.registry import tagger_class  # noqa: E402

from .tagger_contract import TaggerContract  # noqa: E402
from .tiny_corpus import tiny_corpus  # noqa: E402

# Fast settings for the tiny corpus: whole notes as sequences (few steps), Adam.
FAST = dict(
    epochs=8, patience=0, batch_size=4, lr=0.02, optimizer="adam", char_dim=12, char_lstm_dim=12,
    word_dim=24, word_lstm_dim=24, context="document", validation_fraction=0.0, dropout=0.2,
)
NAMES = ("lstm-crf-n", "lstm-crf-l", "lstm-l", "lstm-crf-fea")


@pytest.fixture(scope="module")
def docs():
    return tiny_corpus(24)


@pytest.fixture(scope="module")
def fitted(docs):
    return tagger_class("lstm-crf-l")(**FAST).fit(docs[:18])


def strict_f1(tagger, docs):
    return strict_f1_of(tagger.predict(docs), docs)


def strict_f1_of(preds, docs):
    gold = {(d.id,) + a.key for d in docs for a in d.annotations}
    found = {(p.doc_id,) + s.key for p, d in zip(preds, docs) for s in p.spans(d)}
    return 2 * len(gold & found) / (len(gold) + len(found)) if gold or found else 0.0


# --- the CRF algebra against pytorch-crf and brute force --------------------------------
def _random_crf(K=5, B=4, T=6, seed=0):
    from torchcrf import CRF

    torch.manual_seed(seed)
    crf = CRF(K, batch_first=True)
    for p in crf.parameters():
        torch.nn.init.normal_(p)
    scores = torch.randn(B, T, K)
    lengths = torch.tensor([T, 3, 1, T - 1][:B])
    mask = torch.arange(T).unsqueeze(0) < lengths.unsqueeze(1)
    return crf, scores, mask, lengths


def test_crf_log_likelihood_matches_pytorch_crf():
    from ensemble_deid.taggers.neural.network import crf_log_likelihood

    crf, scores, mask, _ = _random_crf()
    tags = torch.randint(0, 5, mask.shape)
    ours = crf_log_likelihood(scores, tags, mask, crf.start_transitions, crf.transitions, crf.end_transitions)
    theirs = crf(scores, tags, mask=mask, reduction="none")
    assert torch.allclose(ours, theirs, atol=1e-5)


def test_crf_log_likelihood_stays_finite_when_forward_sums_underflow():
    # Scores far apart (the best tag 300 nats above the rest, with forbidden
    # moves): the probability-space forward step underflows for some tags;
    # the likelihood must still match pytorch-crf's logsumexp and every
    # gradient stay finite.
    from ensemble_deid.taggers.neural.network import FORBIDDEN, bio_constraints, crf_log_likelihood

    tags_ = ["O", "B-A", "I-A", "B-B", "I-B"]
    crf, scores, mask, _ = _random_crf(K=5, seed=3)
    start_ok, trans_ok = bio_constraints(tags_)
    start = (crf.start_transitions + torch.where(torch.as_tensor(start_ok), 0.0, FORBIDDEN)).detach()
    trans = (crf.transitions + torch.where(torch.as_tensor(trans_ok), 0.0, FORBIDDEN)).detach()
    scores = (scores * 100).requires_grad_()
    tags = torch.zeros(mask.shape, dtype=torch.long)
    ours = crf_log_likelihood(scores, tags, mask, start, trans, crf.end_transitions)
    crf.start_transitions.data, crf.transitions.data = start, trans
    theirs = crf(scores, tags, mask=mask, reduction="none")
    assert torch.allclose(ours, theirs, rtol=1e-4, atol=1e-2)
    ours.sum().backward()
    assert torch.isfinite(scores.grad).all()


def test_viterbi_matches_pytorch_crf():
    from ensemble_deid.taggers.neural.network import viterbi

    crf, scores, mask, lengths = _random_crf(seed=1)
    ours = viterbi(scores, mask, crf.start_transitions, crf.transitions, crf.end_transitions)
    for i, path in enumerate(crf.decode(scores, mask=mask)):
        assert ours[i, : lengths[i]].tolist() == path


def test_crf_marginals_match_brute_force():
    from ensemble_deid.taggers.neural.network import crf_marginals

    K = 3
    crf, scores, mask, lengths = _random_crf(K=K, T=5, seed=2)
    marg = crf_marginals(scores, mask, crf.start_transitions, crf.transitions, crf.end_transitions)
    for b in range(scores.shape[0]):
        n = int(lengths[b])
        expected = torch.zeros(n, K)
        for path in itertools.product(range(K), repeat=n):
            tags = torch.tensor(path + (0,) * (scores.shape[1] - n)).unsqueeze(0)
            p = crf(scores[b : b + 1], tags, mask=mask[b : b + 1]).exp()
            for t, k in enumerate(path):
                expected[t, k] += p
        assert torch.allclose(marg[b, :n], expected, atol=1e-5)


def test_bio_constraints_forbid_invalid_moves():
    from ensemble_deid.taggers.neural.network import FORBIDDEN, bio_constraints, viterbi

    tags = ["O", "B-NAME:DOCTOR", "I-NAME:DOCTOR", "B-DATE:DATE", "I-DATE:DATE"]
    start, trans = bio_constraints(tags)
    assert start.tolist() == [True, True, False, True, False]
    assert trans[1, 2] and trans[2, 2] and not trans[0, 2] and not trans[3, 2] and not trans[2, 4]
    assert trans[:, [0, 1, 3]].all()  # O and B-* may follow anything
    # Emissions that favour I- tags everywhere still decode to valid BIO.
    torch.manual_seed(0)
    scores = torch.randn(3, 6, 5)
    scores[..., 2] += 5.0
    scores[..., 4] += 5.0
    mask = torch.ones(3, 6, dtype=torch.bool)
    start_t = torch.where(torch.as_tensor(start), 0.0, FORBIDDEN)
    trans_t = torch.where(torch.as_tensor(trans), 0.0, FORBIDDEN)
    paths = viterbi(scores, mask, start_t, trans_t, torch.zeros(5))
    for path in paths:
        assert start[path[0]] and all(trans[a, b] for a, b in zip(path[:-1], path[1:]))


def test_bilstm_ignores_padding():
    """Each sequence's outputs do not depend on what pads it in the batch."""
    from ensemble_deid.taggers.neural.network import BiLSTM

    torch.manual_seed(0)
    lstm = BiLSTM(3, 4)
    x = torch.randn(2, 7, 3)
    lengths = torch.tensor([7, 4])
    both = lstm(x, lengths)
    alone = lstm(x[1:, :4], lengths[1:])
    assert torch.allclose(both[1, :4], alone[0], atol=1e-6)
    x2 = x.clone()
    x2[1, 4:] = 100.0  # different padding
    assert torch.allclose(lstm(x2, lengths)[1, :4], both[1, :4], atol=1e-6)
    finals = lstm.final_states(x, lengths)
    assert torch.allclose(finals[1, :4], both[1, 3, :4]) and torch.allclose(finals[1, 4:], both[1, 0, 4:])


# --- vocabularies and the embeddings loader ------------------------------------------------
def test_glove_and_word2vec_text_loader(tmp_path):
    from ensemble_deid.taggers.neural.vocab import EmbeddingsFormatError, load_embeddings, normalize_word

    glove = tmp_path / "tiny.glove.txt"
    glove.write_text("the 0.1 0.2 0.3\nPatient 1 2 3\n1946 0 0 1\npatient 9 9 9\n", encoding="utf-8")
    vec = load_embeddings(glove, dim=3)
    assert set(vec) == {"the", "patient", "0000"}
    assert np.allclose(vec["patient"], [1, 2, 3])  # first of the words that normalise alike
    w2v = tmp_path / "tiny.w2v.txt"
    w2v.write_text("2 3\nclinic 1 0 0\nmercy 0 1 0\n", encoding="utf-8")
    assert set(load_embeddings(w2v)) == {"clinic", "mercy"}
    with pytest.raises(EmbeddingsFormatError, match="2 dimensions|expected 2|3 values"):
        load_embeddings(w2v, dim=2)
    bad = tmp_path / "bad.txt"
    bad.write_text("a 1 2\nb 1\n", encoding="utf-8")
    with pytest.raises(EmbeddingsFormatError, match="line 2"):
        load_embeddings(bad)
    assert normalize_word("Enero2019") == "enero0000"


def test_pretrained_vectors_initialise_the_embeddings(tmp_path, docs):
    from ensemble_deid.taggers.neural.vocab import normalize_word

    words = sorted({normalize_word(w) for d in docs[:18] for w in d.tokens.words})[:5]
    path = tmp_path / "vectors.txt"
    rng = np.random.default_rng(0)
    vectors = {w: rng.normal(size=24).round(4) for w in words + ["unseenword"]}
    path.write_text("".join(f"{w} {' '.join(map(str, v))}\n" for w, v in vectors.items()), encoding="utf-8")
    tagger = tagger_class("lstm-crf-l")(**{**FAST, "epochs": 1, "lr": 1e-9, "embeddings_path": str(path)})
    tagger.fit(docs[:18])
    emb = tagger.state_dict_["word_emb.weight"].numpy()
    assert "unseenword" in tagger.words_  # pre-trained words join the vocabulary
    for w, v in vectors.items():
        assert np.allclose(emb[tagger.words_.index(w)], v, atol=1e-4)


def test_shape_ids():
    from ensemble_deid.taggers.neural.vocab import N_CASINGS, N_SHAPES, shape_ids
    from ensemble_deid.corpus.tokenize import tokenize

    text = "Dr. ADAMS 12\nx@y"
    toks = tokenize(text)
    ids = shape_ids(toks.words, toks.starts, toks.ends, text)
    assert len(ids) == len(toks) and ids.min() >= 1 and ids.max() < N_SHAPES
    gaps = (ids - 1) // N_CASINGS
    assert gaps.tolist() == [2, 0, 1, 1, 2, 0, 0]  # start, glued, space, space, line break, glued, glued


def test_bucket_batches_cover_every_sequence_once():
    from ensemble_deid.taggers.neural.training import bucket_batches

    lengths = np.random.default_rng(0).integers(1, 50, size=103)
    batches = bucket_batches(lengths, 10, np.random.default_rng(1))
    flat = np.concatenate(batches)
    assert sorted(flat.tolist()) == list(range(103))
    assert max(len(b) for b in batches) == 10
    # bucketed: a batch spans a narrow band of lengths
    assert np.mean([np.ptp(lengths[b]) for b in batches]) < 10


def test_held_out_split_keeps_patients_together(docs):
    train, held = split_held_out(docs, 0.25, seed=3)
    assert held and train and len(train) + len(held) == len(docs)
    assert not {d.metadata["group"] for d in train} & {d.metadata["group"] for d in held}
    assert split_held_out(docs, 0.0, seed=3) == (list(docs), [])


# --- learning ----------------------------------------------------------------------------------
def test_learning_happens(fitted, docs):
    losses = [h["loss"] for h in fitted.history_]
    assert losses[-1] < 0.2 * losses[0], "training loss should fall"
    # The majority baseline tags every token with the most frequent tag (O).
    train = docs[:18]
    counts = Counter(t for d in train for t in gold_tags(d))
    assert counts.most_common(1)[0][0] == OUTSIDE
    baseline = strict_f1_of([DocumentPrediction.empty(d) for d in train], train)
    assert strict_f1(fitted, train) > baseline + 0.8
    assert fitted.train_info_["epochs_run"] == FAST["epochs"]


def test_crf_output_is_valid_bio(fitted, docs):
    for pred in fitted.predict(docs[18:]):
        prev = OUTSIDE
        for tag in pred.tags:
            if tag.startswith("I-"):
                assert prev[2:] == tag[2:], "I-X only after B-X or I-X"
            prev = tag


def test_early_stopping_and_history(docs):
    tagger = tagger_class("lstm-crf-l")(
        **{**FAST, "epochs": 30, "patience": 2, "anneal_patience": 1, "validation_fraction": 0.2}
    )
    tagger.fit(docs[:18])
    info = tagger.train_info_
    assert info["held_out_documents"] >= 2
    assert all(h["dev_f1"] is not None for h in tagger.history_)
    assert info["best_epoch"] == 1 + int(np.argmax([h["dev_f1"] for h in tagger.history_]))
    if info["stopped_early"]:
        assert info["epochs_run"] == info["best_epoch"] + 2
    lrs = [h["lr"] for h in tagger.history_]
    assert all(b <= a for a, b in zip(lrs, lrs[1:]))  # decay and annealing only lower it
    decay = lambda e: 1.0 / (1.0 + tagger.lr_decay * (e - 1))  # noqa: E731
    for prev, cur in zip(tagger.history_, tagger.history_[1:]):
        best_before = max(h["dev_f1"] for h in tagger.history_[: prev["epoch"] - 1]) if prev["epoch"] > 1 else -1
        annealed = prev["dev_f1"] <= best_before  # a non-improving epoch halves the rate
        expected = prev["lr"] / decay(prev["epoch"]) * decay(cur["epoch"]) * (tagger.anneal if annealed else 1.0)
        assert cur["lr"] == pytest.approx(expected)


def test_weight_averaging(docs):
    """ema_decay: the returned weights are a moving average of the steps'
    weights, warmed up so that a short run is not held at its random start
    (without the warm-up, a decay of 0.9999 over these ~40 steps would keep
    the initial weights and tag nothing)."""
    raw = tagger_class("lstm-crf-l")(**{**FAST, "ema_decay": 0.0}).fit(docs[:18])
    slow = tagger_class("lstm-crf-l")(**{**FAST, "ema_decay": 0.9999}).fit(docs[:18])
    assert any(not torch.equal(raw.state_dict_[k], slow.state_dict_[k]) for k in raw.state_dict_)
    assert strict_f1(slow, docs[:18]) > 0.8
    averaged = tagger_class("lstm-crf-l")(**{**FAST, "ema_decay": 0.9, "validation_fraction": 0.2}).fit(docs[:18])
    assert averaged.train_info_["best_held_out_f1"] > 0.5
    with pytest.raises(ValueError, match="ema_decay"):
        tagger_class("lstm-crf-l")(ema_decay=1.0).fit(docs[:2])


def test_refit_trains_on_every_note_for_the_chosen_epochs(docs):
    from ensemble_deid.taggers.neural.vocab import normalize_word

    params = {**FAST, "epochs": 6, "patience": 3, "validation_fraction": 0.25, "corpus_vectors": False}
    held = tagger_class("lstm-crf-l")(**{**params, "refit": False}).fit(docs[:16])
    refit = tagger_class("lstm-crf-l")(**{**params, "refit": True}).fit(docs[:16])
    info = refit.train_info_
    assert info["best_epoch"] == held.train_info_["best_epoch"]  # same held-out run first
    assert info["refit"]["epochs"] == info["best_epoch"] and info["refit"]["documents"] == 16
    assert info["refit"]["train_tokens"] == sum(len(d.tokens) for d in docs[:16])
    # The held-out notes' words are in the refitted vocabulary, not in the other
    # (no corpus vectors here: they would bring every note's words in).
    all_words = {normalize_word(w) for d in docs[:16] for w in d.tokens.words}
    assert all_words <= set(refit.words_.itos)
    assert not all_words <= set(held.words_.itos)
    assert strict_f1(refit, docs[:16]) > 0.8
    no_held_out = tagger_class("lstm-crf-l")(**{**FAST, "epochs": 2, "refit": True}).fit(docs[:6])
    assert "refit" not in no_held_out.train_info_  # nothing was held out: nothing to refit


def test_marginals_sum_to_one_and_match_confidences(fitted, docs):
    marginals = fitted.predict_marginals(docs[18:])
    preds = fitted.predict(docs[18:])
    for m, p, d in zip(marginals, preds, docs[18:]):
        assert m.shape == (len(d.tokens), len(fitted.tags_))
        assert np.allclose(m.sum(axis=1), 1.0, atol=1e-4)
        idx = [fitted.tags_.index(t) for t in p.tags]
        assert np.allclose(p.confidences, m[np.arange(len(idx)), idx], atol=1e-6)


def test_softmax_marginals_sum_to_one(docs):
    tagger = tagger_class("lstm-l")(**{**FAST, "epochs": 2}).fit(docs[:6])
    for m in tagger.predict_marginals(docs[18:20]):
        assert np.allclose(m.sum(axis=1), 1.0, atol=1e-5)


def test_checkpoint_round_trip(fitted, docs, tmp_path):
    path = fitted.save(tmp_path / "model.pt")
    for loader in (NeuralTagger.load, type(fitted).load):
        restored = loader(path)
        assert type(restored) is type(fitted) and restored.get_params() == fitted.get_params()
        a, b = fitted.predict(docs[18:]), restored.predict(docs[18:])
        assert [p.tags for p in a] == [p.tags for p in b]
        assert all(np.allclose(x.confidences, y.confidences) for x, y in zip(a, b))
    with pytest.raises(ValueError, match="checkpoint of 'lstm-crf-l'"):
        tagger_class("lstm-l").load(path)
    # Plain data only: loads with weights_only=True.
    assert torch.load(path, weights_only=True)["tagger"] == "lstm-crf-l"


def test_checkpoint_vocabularies_are_packed_and_format_1_still_loads(fitted, docs, tmp_path):
    """Vocabularies are saved as one string, its lengths and the counts
    (tensors: weights-only loading takes milliseconds, not a Python step per
    word); a checkpoint written with format 1's lists loads to the same tagger."""
    path = fitted.save(tmp_path / "model.pt")
    ckpt = torch.load(path, weights_only=True)
    assert ckpt["format"] == "ensemble-deid/neural-checkpoint/2"
    words = ckpt["words"]
    assert set(words) == {"text", "lengths", "counts"} and isinstance(words["lengths"], torch.Tensor)
    assert words["text"] == "".join(fitted.words_.itos[2:]) and words["counts"].tolist() == fitted.words_.counts[2:]
    ckpt.update(format="ensemble-deid/neural-checkpoint/1", words=fitted.words_.to_state(),
                chars=fitted.chars_.to_state())
    torch.save(ckpt, tmp_path / "old.pt")
    old = NeuralTagger.load(tmp_path / "old.pt")
    assert old.words_.itos == fitted.words_.itos and old.chars_.counts == fitted.chars_.counts
    # Any entries, an empty one (a vectors file line starting with a space) and NULs included, come back as they were.
    from ensemble_deid.taggers.neural.base import pack_vocab, unpack_vocab
    from ensemble_deid.taggers.neural.vocab import Vocab

    odd = Vocab(["", "a\x00b", "é", "  "], [0, 3, 1, 2])
    back = unpack_vocab(pack_vocab(odd), "odd")
    assert back.itos == odd.itos and back.counts == odd.counts
    assert [p.tags for p in old.predict(docs[18:])] == [p.tags for p in fitted.predict(docs[18:])]


@pytest.fixture(scope="module")
def fea_checkpoint(docs, tmp_path_factory):
    """A saved lstm-crf-fea (it keeps state under 'extra') and its words."""
    tagger = tagger_class("lstm-crf-fea")(**{**FAST, "epochs": 1}).fit(docs[:6])
    return tagger.save(tmp_path_factory.mktemp("fea") / "model.pt"), tagger.words_.itos[2:]


def _packed(items):
    return {"text": "".join(items), "lengths": torch.tensor([len(w) for w in items]),
            "counts": torch.ones(len(items), dtype=torch.int64)}


NOT_A_VOCABULARY = "is not a vocabulary: "


@pytest.mark.parametrize("field, edit, message", [
    ("words", lambda c: c.pop("words"), "is missing"),
    ("tags", lambda c: c.__setitem__("tags", None), "is not a list"),
    ("tags", lambda c: c.__setitem__("tags", [1, 2]), "holds something other than tag names"),
    ("state_dict", lambda c: c["state_dict"].__setitem__("x", [1.0]), "holds something other than named tensors"),
    ("params", lambda c: c["params"].__setitem__("dropout_rate", 0.5), "names 1 parameter"),
    ("extra", lambda c: c.__setitem__("extra", {}), "lacks what 'lstm-crf-fea' keeps there"),
    ("words", lambda c: c["words"].__setitem__("lengths", c["words"]["lengths"] + 1),
     NOT_A_VOCABULARY + "its lengths do not cut its text"),
    ("words", lambda c: c["words"].__setitem__("lengths", c["words"]["lengths"].float()),
     NOT_A_VOCABULARY + "its lengths are not a vector of integers"),
    ("words", lambda c: c["words"].__setitem__("counts", c["words"]["counts"][:3]),
     NOT_A_VOCABULARY + "its counts do not match its entries"),
    ("words", lambda c: c.__setitem__("words", _packed(["ab", "ab"])), NOT_A_VOCABULARY + "an entry is repeated"),
    ("words", lambda c: c.__setitem__("words", _packed(["<unk>", "ab"])), NOT_A_VOCABULARY + "an entry is repeated"),
    ("words", lambda c: c.__setitem__("words", _packed([""] * 1000)), NOT_A_VOCABULARY + "an entry is repeated"),
    ("chars", lambda c: c.__setitem__("chars", {"itos": [1, 2], "counts": [1, 1]}),
     NOT_A_VOCABULARY + "its entries are not strings"),
    ("chars", lambda c: c.__setitem__("chars", {"items": []}), NOT_A_VOCABULARY + "unknown fields"),
])
def test_a_malformed_checkpoint_is_refused_naming_its_field(fea_checkpoint, tmp_path, field, edit, message):
    """An edited checkpoint (a bundle from elsewhere is untrusted) is a
    ValueError naming the file and the field, before anything uses it; never
    a KeyError or TypeError from deep inside, never an entry of a vocabulary."""
    saved, words = fea_checkpoint
    ckpt = torch.load(saved, weights_only=True)
    edit(ckpt)
    torch.save(ckpt, tmp_path / "model.pt")
    with pytest.raises(ValueError, match=f"model.pt: checkpoint field '{field}' {message}") as err:
        NeuralTagger.load(tmp_path / "model.pt")
    assert not any(w in str(err.value) for w in words if len(w) > 3)


def test_sentence_context_and_pickle(docs):
    tagger = tagger_class("lstm-crf-n")(**{**FAST, "context": "sentence", "batch_size": 16, "epochs": 3})
    tagger.fit(docs[:8])
    assert "_model" in vars(tagger)
    blob = pickle.dumps(tagger)
    assert b"torch.nn" not in blob  # no live module in the pickle
    restored = pickle.loads(blob)
    assert [p.tags for p in restored.predict(docs[18:20])] == [p.tags for p in tagger.predict(docs[18:20])]


def test_sentence_segments_never_start_inside_a_span():
    """A span cut by the sentence splitter: for the BIO-constrained CRF its
    second part starts with B-, the only start that CRF can decode."""
    from ensemble_deid.corpus.document import Annotation, Document
    from ensemble_deid.taggers.neural.training import encode_documents
    from ensemble_deid.taggers.neural.vocab import build_char_vocab, build_word_vocab, normalize_word

    text = "Paciente: Ana Maria.\nPerez Gil vive en Sol. Fin del informe."
    start, end = text.index("Ana"), text.index(" vive")
    doc = Document("d1", text, [Annotation(start, end, "NAME", "PATIENT")])
    tags = [OUTSIDE, "B-NAME:PATIENT", "I-NAME:PATIENT"]
    index = {t: i for i, t in enumerate(tags)}
    words = build_word_vocab(normalize_word(w) for w in doc.tokens.words)
    chars = build_char_vocab(doc.tokens.words)
    doc_tags = [tags[i] for i in encode_documents([doc], words, chars, "document", index, gold_tags).sequences[0].tags]
    assert doc_tags == gold_tags(doc)
    segments = encode_documents([doc], words, chars, "sentence", index, gold_tags, start_with_begin=True).sequences
    assert len(segments) == 3
    second = [tags[i] for i in segments[1].tags]
    assert second == ["B-NAME:PATIENT", "I-NAME:PATIENT", "O", "O", "O", "O"]
    # Without the constrained CRF (softmax) the gold I- stays: predicted, it rejoins the span.
    kept = encode_documents([doc], words, chars, "sentence", index, gold_tags).sequences
    assert [tags[i] for i in kept[1].tags][0] == "I-NAME:PATIENT"
    assert gold_tags(doc)[5] == "I-NAME:PATIENT"  # the document itself is unchanged


def test_long_notes_are_cut_at_line_breaks(docs):
    from ensemble_deid.taggers.neural.training import encode_documents
    from ensemble_deid.taggers.neural.vocab import build_char_vocab, build_word_vocab, normalize_word

    doc = max(docs, key=lambda d: len(d.tokens))
    toks = doc.tokens
    words = build_word_vocab(normalize_word(w) for w in toks.words)
    chars = build_char_vocab(toks.words)
    line_starts = {0} | {i for i in range(1, len(toks)) if "\n" in doc.text[toks.ends[i - 1]:toks.starts[i]]}
    longest_line = max(b - a for a, b in zip(sorted(line_starts), sorted(line_starts)[1:] + [len(toks)]))
    limit = max(longest_line, len(toks) // 3)
    pieces = encode_documents([doc], words, chars, "document", max_length=limit).sequences
    assert len(pieces) > 1
    assert [p.start for p in pieces][0] == 0 and all(p.start in line_starts for p in pieces)
    assert sum(len(p) for p in pieces) == len(toks)
    assert all(a.start + len(a) == b.start for a, b in zip(pieces, pieces[1:]))
    assert all(len(p) <= limit for p in pieces)
    whole = encode_documents([doc], words, chars, "document", max_length=len(toks)).sequences
    assert len(whole) == 1
    tagger = tagger_class("lstm-crf-l")(**{**FAST, "epochs": 2, "max_length": limit}).fit(docs[:6])
    assert [len(p.tags) for p in tagger.predict(docs[6:8])] == [len(d.tokens) for d in docs[6:8]]
    with pytest.raises(ValueError, match="max_length"):
        tagger_class("lstm-crf-l")(max_length=-1).fit(docs[:2])


def test_empty_documents_and_bad_params(docs, fitted):
    from ensemble_deid.corpus.document import Document

    empty = Document("empty-1", "", [])
    pred = fitted.predict([empty, docs[18]])
    assert pred[0].tags == () and len(pred[1].tags) == len(docs[18].tokens)
    with pytest.raises(ValueError, match="context"):
        tagger_class("lstm-crf-l")(context="paragraph").fit(docs[:2])
    with pytest.raises(ValueError, match="optimizer"):
        tagger_class("lstm-crf-l")(optimizer="lbfgs").fit(docs[:2])


def test_param_hash_ignores_verbosity_and_threads():
    cls = tagger_class("lstm-crf-l")
    assert cls().param_hash() == cls(verbose=True, num_threads=2).param_hash()
    assert cls().param_hash() != cls(lr=0.1).param_hash()
    # An int for a float parameter (as typed in a spec) is the same model.
    assert cls(validation_fraction=0).param_hash() == cls(validation_fraction=0.0).param_hash()
    assert cls(validation_fraction=0).param_hash() != cls().param_hash()  # the default holds out 0.1


def test_adapters_share_the_base_parameters():
    base = [p for p in inspect.signature(NeuralTagger.__init__).parameters if p != "self"]
    for name in NAMES:
        cls = tagger_class(name)
        params = [p for p in inspect.signature(cls.__init__).parameters if p != "self"]
        assert params[: len(base)] == base, name
        assert cls.requires == ("torch", "torchcrf")
    assert tagger_class("lstm-l").use_crf is False
    assert tagger_class("lstm-crf-n")().lr == 0.01
    assert tagger_class("lstm-crf-l")().lr == 0.005
    assert tagger_class("lstm-l")().lr == 0.2
    assert [tagger_class(n)().epochs for n in ("lstm-crf-n", "lstm-crf-l", "lstm-l")] == [30, 30, 30]  # ceilings
    assert {n: tagger_class(n)().batch_size for n in NAMES} == {n: 64 if n == "lstm-l" else 16 for n in NAMES}
    assert all(tagger_class(n)().validation_fraction == 0.1 for n in NAMES)


def test_adapters_derive_their_constructor_from_the_base():
    # One signature (NeuralTagger.__init__); adapters state only what they change.
    for name in NAMES:
        cls = tagger_class(name)
        assert "__init__" not in vars(cls) or vars(cls)["__init__"].__qualname__.endswith(".__init__"), name
    fea = tagger_class("lstm-crf-fea")
    tagger = fea(feature_dim=8)
    assert tagger.get_params()["feature_dim"] == 8 and tagger.get_params()["ehr_names_path"] is None
    assert tagger.epochs == 30 and tagger.lr == 0.01
    assert tagger.clone().get_params() == tagger.get_params()
    assert repr(tagger) == "LstmCrfFeaTagger(feature_dim=8)"
    lstm = tagger_class("lstm-l")(0)  # positional as in the signature: epochs
    assert lstm.epochs == 0 and lstm.optimizer == "sgd" and lstm.context == "sentence"
    assert tagger_class("lstm-l")().set_params(lr=0.1).lr == 0.1
    with pytest.raises(TypeError):
        fea(no_such_parameter=1)


def test_importing_the_adapters_does_not_import_torch():
    code = (
        "import sys\n"
        "from ensemble_deid.taggers.registry import describe_taggers\n"
        "import ensemble_deid_adapters.lstm_crf_l, ensemble_deid_adapters.lstm_crf_fea\n"
        "describe_taggers()\n"
        "print('torch' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# --- the feature-augmented variant --------------------------------------------------------------
def test_fea_uses_feature_flags_and_ehr_names(docs, tmp_path):
    pytest.importorskip("ensemble_deid.taggers.features")
    from ensemble_deid.taggers.neural.ehr import EHR_FLAG_NAMES, ehr_flags, load_ehr_names

    names = {}
    for d in docs[:18]:
        patient = [a for a in d.annotations if a.type == "PATIENT"]
        names[d.id] = {"patient": [d.text[a.start : a.end] for a in patient], "doctor": []}
    path = tmp_path / "ehr.json"
    path.write_text(json.dumps(names), encoding="utf-8")
    loaded = load_ehr_names(path)
    flags = ehr_flags(docs[0], loaded)
    tags = gold_tags(docs[0])
    patient_tokens = [i for i, t in enumerate(tags) if t.endswith(":PATIENT")]
    assert flags[patient_tokens, 0].all() and flags[:, 1].sum() == 0
    assert ehr_flags(docs[20], loaded).sum() == 0  # no entry: no flags

    tagger = tagger_class("lstm-crf-fea")(**{**FAST, "epochs": 2, "ehr_names_path": str(path)}).fit(docs[:18])
    assert tagger.feature_names_[-2:] == EHR_FLAG_NAMES
    assert len(tagger.feature_names_) > 10
    assert tagger.state_dict_["feature_layer.0.weight"].shape == (tagger.feature_dim, len(tagger.feature_names_))
    restored = NeuralTagger.load(tagger.save(tmp_path / "fea.pt"))
    assert [p.tags for p in restored.predict(docs[18:])] == [p.tags for p in tagger.predict(docs[18:])]


# --- the shared adapter contract ---------------------------------------------------------------
class TestLstmCrfNContract(TaggerContract):
    tagger_name = "lstm-crf-n"
    tagger_params = FAST


class TestLstmCrfLContract(TaggerContract):
    tagger_name = "lstm-crf-l"
    tagger_params = FAST


class TestLstmLContract(TaggerContract):
    tagger_name = "lstm-l"
    tagger_params = FAST


class TestLstmCrfFeaContract(TaggerContract):
    tagger_name = "lstm-crf-fea"
    tagger_params = FAST



def test_version_2_schedule_trains_every_note_for_every_epoch(docs):
    # The published members (version 2, validation_fraction=0): no held-out part, so no early
    # stopping and no refit; the model is the last epoch's averaged weights, after exactly ``epochs``.
    small = {k: FAST[k] for k in ("char_dim", "char_lstm_dim", "word_dim", "word_lstm_dim", "lr")}
    tagger = tagger_class("lstm-crf-l")(**small, epochs=3, validation_fraction=0).fit(docs[:8])
    info = tagger.train_info_
    assert info["epochs_run"] == 3 and info["best_epoch"] == 3 and not info["stopped_early"]
    assert info["held_out_documents"] == 0 and info["train_documents"] == 8 and "refit" not in info
    assert info["train_tokens"] == sum(len(d.tokens) for d in docs[:8])
    assert all(h["cpu_seconds"] > 0 for h in tagger.history_)


# --- the CRF's feature strings beside the BiLSTM (linear_buckets) -------------------------------
HYBRID = {**FAST, "linear_buckets": 512}


def test_linear_buckets_off_keeps_the_published_members_cache_keys():
    from pathlib import Path

    cls = tagger_class("lstm-crf-l")
    assert "linear_buckets" not in cls().hashed_params()
    assert cls(linear_buckets=0).param_hash() == cls().param_hash()
    assert cls(linear_buckets=64).param_hash() != cls(linear_buckets=128).param_hash() != cls().param_hash()
    # The neural entries published before the parameter existed are still found by their key.
    manifest = Path(__file__).resolve().parents[1] / "cached_predictions" / "meddocan" / "published.json"
    entries = [e for e in json.loads(manifest.read_text())["entries"] if e["tagger"] in NAMES]
    assert len(entries) == 4
    for entry in entries:
        assert "linear_buckets" not in entry["params"]
        assert tagger_class(entry["tagger"])(**entry["params"]).param_hash() == entry["param_hash"]


def test_linear_ids_are_the_crf_feature_strings_hashed_into_buckets(docs):
    from ensemble_deid.taggers.feature_hash import hashed_ids
    from ensemble_deid.taggers.features import FeatureExtractor

    tagger = tagger_class("lstm-crf-l")(linear_buckets=97)
    doc = docs[0]
    ids = tagger._linear_ids(doc)
    rows = FeatureExtractor().document_features(doc)
    assert ids.shape == (len(doc.tokens), max(map(len, rows)))
    for i in (0, 1, len(rows) // 2, len(rows) - 1):
        expected = sorted((hashed_ids(rows[i]).astype(np.int64) % 97 + 1).tolist())
        assert sorted(ids[i][ids[i] > 0].tolist()) == expected  # bucket 0 is padding only
        assert (ids[i] == 0).sum() == ids.shape[1] - len(rows[i])


def test_hybrid_learns_the_linear_weights_and_round_trips(docs, tmp_path):
    tagger = tagger_class("lstm-crf-l")(**HYBRID).fit(docs[:18])
    weights = tagger.state_dict_["linear.weight"]
    assert weights.shape == (513, len(tagger.tags_))
    assert not weights[0].any(), "the padding bucket never learns"
    assert weights[1:].abs().sum() > 0
    train = docs[:18]
    baseline = strict_f1_of([DocumentPrediction.empty(d) for d in train], train)
    assert strict_f1(tagger, train) > baseline + 0.8
    path = tagger.save(tmp_path / "hybrid.pt")
    assert torch.load(path, weights_only=True)["params"]["linear_buckets"] == 512
    restored = NeuralTagger.load(path)
    assert [p.tags for p in restored.predict(docs[18:])] == [p.tags for p in tagger.predict(docs[18:])]
    # Without the linear part the same network is another model.
    plain = tagger_class("lstm-crf-l")(**FAST).fit(docs[:18])
    assert "linear.weight" not in plain.state_dict_


def test_linear_decay_that_would_flip_the_weights_is_refused_before_training():
    with pytest.raises(ValueError, match="linear_decay x lr must be below 1"):
        tagger_class("lstm-crf-l")(lr=0.01, linear_buckets=16, linear_decay=100.0).fit(tiny_corpus(2))


class TestLstmCrfLHybridContract(TaggerContract):
    tagger_name = "lstm-crf-l"
    tagger_params = HYBRID


def test_bio_decode_picks_the_most_probable_valid_sequence_by_hand():
    """lstm-l's bio_decode: Viterbi over log-probabilities with invalid BIO
    moves forbidden. Tokens' probabilities over (O, B-X, I-X), worked by hand:
    argmax reads O, I-X, I-X (an I-X after O); the valid sequences' products
    are O,O,O .5*.3*.3=.045, O,B,I .5*.2*.6=.06, B,I,I .4*.5*.6=.12 (best),
    B,I,O .4*.5*.3=.06; so B-X, I-X, I-X. Confidences stay each chosen tag's
    own probability."""
    from ensemble_deid.taggers.neural.network import Batch, BiLSTMTagger, bio_constraints

    tags = ["O", "B-X", "I-X"]
    probs = torch.tensor([[[0.5, 0.4, 0.1], [0.2, 0.3, 0.5], [0.3, 0.1, 0.6]]])
    for decode, expected in ((False, [0, 2, 2]), (True, [1, 2, 2])):
        net = BiLSTMTagger(5, 5, 3, word_dim=4, char_dim=0, char_lstm_dim=0, word_lstm_dim=4, use_crf=False,
                           allowed=bio_constraints(tags), bio_decode=decode)
        net.emissions = lambda batch: probs.log()
        batch = Batch(*(torch.zeros(1, 3, dtype=torch.long),) * 3, torch.zeros(1, 1, dtype=torch.long),
                      torch.ones(1, dtype=torch.long), torch.tensor([3]), torch.ones(1, 3, dtype=torch.bool))
        best, conf = net.predict(batch)
        assert best[0].tolist() == expected
        assert np.allclose(conf[0][np.arange(3), best[0]], probs[0, np.arange(3), expected])


def test_bio_decode_gives_valid_bio_and_stays_out_of_the_published_key(docs):
    cls = tagger_class("lstm-l")
    assert cls(bio_decode=False).param_hash() == cls().param_hash() != cls(bio_decode=True).param_hash()
    tagger = cls(**{**FAST, "epochs": 2}).fit(docs[:12])
    plain = tagger.predict(docs[12:])
    tagger.set_params(bio_decode=True)
    tagger.__dict__.pop("_model", None)  # the network reads the setting when it is built
    decoded = tagger.predict(docs[12:])
    for pred in decoded:
        for prev, tag in zip((OUTSIDE,) + pred.tags[:-1], pred.tags):
            assert not tag.startswith("I-") or prev[2:] == tag[2:], (prev, tag)
    # Where the most probable tags already form valid BIO, they are the most probable valid sequence.
    valid = [not any(t.startswith("I-") and a[2:] != t[2:] for a, t in zip((OUTSIDE,) + p.tags[:-1], p.tags))
             for p in plain]
    assert any(valid)
    assert all(d.tags == p.tags for d, p, ok in zip(decoded, plain, valid) if ok)
    with pytest.raises(ValueError, match="bio_decode is for a tagger without a CRF"):
        tagger_class("lstm-crf-l")(bio_decode=True).validate_params()


def test_randomly_edited_checkpoints_load_or_are_refused_as_value_errors(fea_checkpoint, tmp_path):
    """A fuzz of checkpoint fields (a bundle from elsewhere is untrusted):
    whatever a field is replaced with, deleted or nested in, loading either
    succeeds or raises a ValueError (which the bundle reports by name), never
    another exception from deep inside."""
    import random

    saved, _ = fea_checkpoint
    base = torch.load(saved, weights_only=True)
    hostile = [-5, 0, 10 ** 30, 1e308, float("nan"), "abc", "../../x", None, True, [], {}, {"a": 1}, [[[1]]],
               torch.zeros(3), torch.zeros(2, 2, dtype=torch.int64), torch.tensor([-1, 5]), ["x", 1], "\x00"]
    rng = random.Random(7)
    outcomes = Counter()
    for case in range(300):
        ckpt = torch.load(saved, weights_only=True)
        for _ in range(rng.choice((1, 1, 2))):
            key = rng.choice(sorted(base))
            if rng.random() < 0.15:
                ckpt.pop(key, None)
            elif isinstance(ckpt.get(key), dict) and ckpt[key] and rng.random() < 0.7:
                inner = rng.choice(sorted(ckpt[key], key=str))
                if rng.random() < 0.2:
                    ckpt[key].pop(inner)
                else:
                    ckpt[key][inner] = rng.choice(hostile)
            else:
                ckpt[key] = rng.choice(hostile)
        torch.save(ckpt, tmp_path / "model.pt")
        try:
            NeuralTagger.load(tmp_path / "model.pt")
            outcomes["loaded"] += 1
        except ValueError as exc:  # names the file, or (a parameter out of its range) the parameter
            assert "model.pt" in str(exc) or isinstance(exc, InvalidParameter), exc
            outcomes["refused"] += 1
    assert outcomes["refused"] > 200, outcomes
