"""The neural members' faster prediction path (issue 36) against the code it
replaced, kept here verbatim as the reference: encoding token by token,
torch Viterbi over (B, from, to), float32 logsumexp marginals, gather
reversal in the BiLSTM. Tags must be identical; CRF confidences may differ
only by the old float32 rounding (the new marginals are computed in float64
and are closer to exact); softmax confidences are identical. ``crf_marginals``
itself, which the stacked-lstm ensemble thresholds, is unchanged.
"""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torchcrf")

from ensemble_deid.corpus.document import Document  # noqa: E402
from ensemble_deid.taggers.neural import network, training  # noqa: E402
from ensemble_deid.taggers.neural.vocab import build_char_vocab, build_word_vocab, casing, normalize_word  # noqa: E402
from ensemble_deid.taggers.registry import tagger_class  # noqa: E402

from .tiny_corpus import tiny_corpus  # noqa: E402

# The old float32 marginals' own rounding error reached 1.3e-4 on MEDDOCAN dev (200-token pieces).
CONFIDENCE_TOLERANCE = 5e-4


# --- the replaced code (as it was before issue 36) ---------------------------------------
def old_shape_ids(words, starts, ends, text):
    out = np.empty(len(words), dtype=np.int64)
    prev_end = 0
    for i, w in enumerate(words):
        start = int(starts[i])
        if i == 0 or "\n" in text[prev_end:start]:
            gap = 2
        elif start == prev_end:
            gap = 0
        else:
            gap = 1
        out[i] = 1 + casing(w) + 6 * gap
        prev_end = int(ends[i])
    return out


def old_encode_documents(docs, words, chars, context, tag_index=None, gold=None, features=None, max_length=0,
                         start_with_begin=False, feature_ids=None):
    assert feature_ids is None, "the old path had no hashed linear features"
    type_of, type_chars, sequences, n_tokens = {}, [], [], 0
    for d, doc in enumerate(docs):
        toks = doc.tokens
        n = len(toks)
        if n == 0:
            continue
        n_tokens += n
        word_ids = words.indices(normalize_word(w) for w in toks.words)
        types = np.empty(n, dtype=np.int64)
        for i, w in enumerate(toks.words):
            t = type_of.get(w)
            if t is None:
                t = type_of[w] = len(type_chars)
                type_chars.append(training.char_ids(w, chars))
            types[i] = t
        shapes = old_shape_ids(toks.words, toks.starts, toks.ends, doc.text)
        feats = None if features is None else np.asarray(features(doc), dtype=np.float32)
        if context == "sentence":
            ranges = toks.sentences()
        elif max_length and n > max_length:
            ranges = training.line_chunks(shapes, max_length)
        else:
            ranges = [(0, n)]
        for a, b in ranges:
            sequences.append(training.Segment(d, a, word_ids[a:b], types[a:b], shapes[a:b], None,
                                              None if feats is None else feats[a:b]))
    return training.EncodedData(sequences, type_chars, n_tokens)


def old_viterbi(scores, mask, start, trans, end):
    B, T, K = scores.shape
    lengths = mask.sum(1)
    score = start + scores[:, 0]
    history = []
    for t in range(1, T):
        cand = score.unsqueeze(2) + trans.unsqueeze(0)
        best, idx = cand.max(dim=1)
        new = best + scores[:, t]
        score = torch.where(mask[:, t].unsqueeze(1), new, score)
        history.append(idx)
    last = (score + end).argmax(1).cpu().numpy()
    lengths = lengths.cpu().numpy()
    hist = torch.stack(history).cpu().numpy() if history else np.zeros((0, B, K), dtype=np.int64)
    out = np.zeros((B, T), dtype=np.int64)
    rows = np.arange(B)
    current = last.copy()
    for t in range(T - 1, -1, -1):
        current = np.where(lengths - 1 == t, last, current)
        inside = lengths - 1 >= t
        out[inside, t] = current[inside]
        if t > 0:
            current = np.where(lengths - 1 >= t, hist[t - 1][rows, current], current)
    return out


def old_crf_marginals(scores, mask, start, trans, end):
    B, T, K = scores.shape
    lengths = mask.sum(1)
    alphas = [start + scores[:, 0]]
    for t in range(1, T):
        new = torch.logsumexp(alphas[-1].unsqueeze(2) + trans.unsqueeze(0), dim=1) + scores[:, t]
        alphas.append(torch.where(mask[:, t].unsqueeze(1), new, alphas[-1]))
    alpha = torch.stack(alphas, dim=1)
    betas = [None] * T
    beta = end.expand(B, K)
    betas[T - 1] = beta
    for t in range(T - 2, -1, -1):
        step = torch.logsumexp(trans.unsqueeze(0) + (scores[:, t + 1] + beta).unsqueeze(1), dim=2)
        beta = torch.where((t + 1 < lengths).unsqueeze(1), step, end.expand(B, K))
        betas[t] = beta
    return torch.softmax(alpha + torch.stack(betas, dim=1), dim=2)


def old_bilstm_forward(self, x, lengths):
    B, T, D = x.shape
    pos = torch.arange(T).unsqueeze(0)
    last = (lengths - 1).unsqueeze(1)
    idx = torch.where(pos <= last, last - pos, pos).unsqueeze(2)
    out_f, _ = self.fwd(x)
    out_b, _ = self.bwd(x.gather(1, idx.expand(B, T, D)))
    out_b = out_b.gather(1, idx.expand(-1, -1, out_b.shape[2]))
    return torch.cat([out_f, out_b], dim=2)


# --- fixtures ----------------------------------------------------------------------------
def _awkward_docs():
    """Line breaks between glued and spaced tokens, repeated words across notes, an empty note."""
    return [
        Document("a", "Dr. ADAMS 12\nx@y\n\n  Madrid, 28043.\r\nMADRID madrid Ñandú 3/4/2012"),
        Document("empty", ""),
        Document("b", "madrid\n\n\nDr.ADAMS seen 12-03-2019;juan.perez@x.es " + "palabra " * 30),
    ]


@pytest.fixture(scope="module")
def docs():
    return tiny_corpus(16) + _awkward_docs()


FAST = dict(epochs=6, patience=0, batch_size=4, lr=0.02, optimizer="adam", char_dim=8, char_lstm_dim=8, word_dim=16,
            word_lstm_dim=16, validation_fraction=0.0, dropout=0.2)


@pytest.fixture(scope="module", params=["lstm-crf-l", "lstm-l", "lstm-crf-fea"])
def member(request, docs):
    extra = {"context": "sentence"} if request.param == "lstm-l" else {"max_length": 25}
    return tagger_class(request.param)(**FAST, **extra).fit(docs[:12])


# --- tests -------------------------------------------------------------------------------
@pytest.mark.parametrize("context, max_length", [("document", 0), ("document", 20), ("sentence", 0)])
def test_encoding_matches_the_token_by_token_reference(docs, context, max_length):
    train_words = [w for d in docs[:6] for w in d.tokens.words]
    words, chars = build_word_vocab(train_words), build_char_vocab(train_words)
    new = training.encode_documents(docs, words, chars, context, max_length=max_length)
    old = old_encode_documents(docs, words, chars, context, max_length=max_length)
    assert new.n_tokens == old.n_tokens and len(new.type_chars) == len(old.type_chars)
    assert all(np.array_equal(a, b) for a, b in zip(new.type_chars, old.type_chars))
    assert len(new.sequences) == len(old.sequences)
    for a, b in zip(new.sequences, old.sequences):
        assert (a.doc, a.start) == (b.doc, b.start)
        for field in ("words", "types", "shapes"):
            assert np.array_equal(getattr(a, field), getattr(b, field)), field


@pytest.mark.parametrize("seed", range(6))
def test_viterbi_finds_the_reference_path_ties_included(seed):
    from ensemble_deid.taggers.neural.network import FORBIDDEN, bio_constraints

    tags = ["O"] + [f"{p}-{label}" for label in "ABCD" for p in "BI"]
    K, B, T = len(tags), 7, 23
    g = torch.Generator().manual_seed(seed)
    # small integers: many exact ties between candidate paths
    scores = torch.randint(-2, 3, (B, T, K), generator=g).float()
    start_ok, trans_ok = bio_constraints(tags)
    start = torch.randint(-1, 2, (K,), generator=g).float() + torch.where(torch.as_tensor(start_ok), 0.0, FORBIDDEN)
    trans = torch.randint(-1, 2, (K, K), generator=g).float() + torch.where(torch.as_tensor(trans_ok), 0.0, FORBIDDEN)
    end = torch.randint(-1, 2, (K,), generator=g).float()
    lengths = torch.randint(1, T + 1, (B,), generator=g)
    lengths[0] = T
    mask = torch.arange(T).unsqueeze(0) < lengths.unsqueeze(1)
    assert np.array_equal(network.viterbi(scores, mask, start, trans, end), old_viterbi(scores, mask, start, trans, end))
    real = torch.randn(B, T, K, generator=g) * 3
    assert np.array_equal(network.viterbi(real, mask, start, trans, end), old_viterbi(real, mask, start, trans, end))


def test_marginals_agree_with_the_reference_and_are_closer_to_exact():
    from ensemble_deid.taggers.neural.network import FORBIDDEN, bio_constraints

    tags = ["O"] + [f"{p}-{label}" for label in "ABC" for p in "BI"]
    K, B, T = len(tags), 5, 200
    g = torch.Generator().manual_seed(0)
    scores = torch.randn(B, T, K, generator=g) * 4 + 6  # long pieces: alpha grows into the thousands
    start_ok, trans_ok = bio_constraints(tags)
    start = torch.randn(K, generator=g) + torch.where(torch.as_tensor(start_ok), 0.0, FORBIDDEN)
    trans = torch.randn(K, K, generator=g) + torch.where(torch.as_tensor(trans_ok), 0.0, FORBIDDEN)
    end = torch.randn(K, generator=g)
    lengths = torch.tensor([T, 150, 1, 77, 199])
    mask = torch.arange(T).unsqueeze(0) < lengths.unsqueeze(1)
    new = network.crf_marginals_by_products(scores, mask, start, trans, end)
    old = old_crf_marginals(scores, mask, start, trans, end)
    exact = old_crf_marginals(*(x.double() for x in (scores, mask, start, trans, end)[:1]), mask,
                              start.double(), trans.double(), end.double())
    assert new.dtype == torch.float32
    valid = mask.unsqueeze(2)
    assert float(((new - old).abs() * valid).max()) < CONFIDENCE_TOLERANCE
    assert float(((new.double() - exact).abs() * valid).max()) < 1e-6
    assert float(((new.double() - exact).abs() * valid).max()) <= float(((old.double() - exact).abs() * valid).max())
    assert torch.allclose(new.sum(2)[mask], torch.ones(int(mask.sum())), atol=1e-5)
    # the stacked-lstm ensemble thresholds crf_marginals: kept bit for bit
    assert torch.equal(network.crf_marginals(scores, mask, start, trans, end), old)


def _old_path(monkeypatch):
    monkeypatch.setattr(training, "encode_documents", old_encode_documents)
    monkeypatch.setattr(network, "viterbi", old_viterbi)
    monkeypatch.setattr(network, "crf_marginals_by_products", old_crf_marginals)
    monkeypatch.setattr(network.BiLSTM, "forward", old_bilstm_forward)


def test_member_predictions_match_the_old_path(member, docs, monkeypatch):
    test = docs[12:]
    new_tags = member.predict_tags(test)
    new_full = member.predict(test)
    with monkeypatch.context() as m:
        _old_path(m)
        old_tags = member.predict_tags(test)
        old_full = member.predict(test)
    assert [p.tags for p in new_tags] == [p.tags for p in old_tags]
    assert [p.tags for p in new_full] == [p.tags for p in old_full]
    for a, b in zip(new_full, old_full):
        if member.use_crf:
            assert np.abs(a.confidences - b.confidences).max(initial=0.0) < CONFIDENCE_TOLERANCE
        else:  # softmax: untouched arithmetic
            assert np.array_equal(a.confidences, b.confidences)
    assert any(t != "O" for p in new_tags for t in p.tags)  # the model tags something: the comparison is not vacuous
