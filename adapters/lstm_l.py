"""``lstm-l``: BiLSTM with a softmax output layer (no CRF), the Lample et
al. (2016) settings used in [KIM20 Table 3]: learning rate 0.05, plain SGD
on sentences as in the original (the loss summed over the
sentences of a batch, gradient norm clipped at 5); dimensions [LIU17 Table
3]: characters 25, character BiLSTM 25, words 100, word BiLSTM 100, dropout
0.5. 22 epochs on every training note (the epoch early stopping chose at
version 1, whose "at most 100 epochs" with a held-out part is
``epochs=100, validation_fraction=0.1, refit=True``). Tags are chosen token by token, so the output may hold an ``I-`` after
``O`` (decoding repairs it into a span start).

    tagger = LstmLTagger().fit(train_docs)
    tagger.predict(test_docs)                      # confidences: softmax probabilities

See ``ensemble_deid.taggers.neural.base.NeuralTagger`` for the parameters.
"""
from __future__ import annotations

from ensemble_deid.taggers.neural.base import NeuralTagger


class LstmLTagger(NeuralTagger):
    name = "lstm-l"
    version = "2"
    description = "BiLSTM + softmax, Lample et al. 2016 settings (SGD lr 0.05; 22 epochs) [KIM20]"
    use_crf = False

    defaults = {"epochs": 22, "lr": 0.05, "optimizer": "sgd", "context": "sentence"}
