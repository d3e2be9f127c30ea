"""``lstm-l``: BiLSTM with a softmax output layer (no CRF), the Lample et
al. (2016) settings used in [KIM20 Table 3]: plain SGD on sentences as in
the original (the loss summed over the sentences of a batch, gradient norm
clipped at 5); dimensions [LIU17 Table 3]: characters 25, character BiLSTM
25, words 100, word BiLSTM 100, dropout 0.5. Batches of 64 sentences at
learning rate 0.2: the paper's 0.05 on batches of 16, scaled with the batch
(the clipped step is the same size, four times fewer of them), 1.7x the
tokens per CPU second. 16 epochs on every training note. Version 1's "at
most 100 epochs" with a held-out part is ``epochs=100, batch_size=16,
lr=0.05, validation_fraction=0.1, refit=True``; the published MEDDOCAN
members before these defaults were ``batch_size=16, lr=0.05, epochs=10``.
Measured in docs/neural-taggers.md. Tags are chosen token by token, so the
output may hold an ``I-`` after ``O`` (decoding repairs it into a span start).

    tagger = LstmLTagger().fit(train_docs)
    tagger.predict(test_docs)                      # confidences: softmax probabilities

See ``ensemble_deid.taggers.neural.base.NeuralTagger`` for the parameters.
"""
from __future__ import annotations

from ensemble_deid.taggers.neural.base import NeuralTagger


class LstmLTagger(NeuralTagger):
    name = "lstm-l"
    version = "2"
    description = "BiLSTM + softmax, Lample et al. 2016 settings (SGD on sentences; 16 epochs, batches of 64) [KIM20]"
    use_crf = False

    defaults = {"epochs": 16, "lr": 0.2, "batch_size": 64, "optimizer": "sgd", "context": "sentence"}
