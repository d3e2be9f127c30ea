"""``lstm-l``: BiLSTM with a softmax output layer (no CRF), the Lample et
al. (2016) settings used in [KIM20 Table 3]: plain SGD on sentences as in
the original (the loss summed over the sentences of a batch, gradient norm
clipped at 5); dimensions [LIU17 Table 3]: characters 25, character BiLSTM
25, words 100, word BiLSTM 100, dropout 0.5. Batches of 64 sentences at
learning rate 0.2: the paper's 0.05 on batches of 16, scaled with the batch
(the clipped step is the same size, four times fewer of them), 1.7x the
tokens per CPU second. At most 30 epochs: early stopping on a tenth of
the training notes (whole patients) chooses how many, then the model is
trained again on every note for that many (``validation_fraction=0.1,
refit=True``, the base class's defaults). The published MEDDOCAN member
(version 2) is ``epochs=16, validation_fraction=0``: 16 epochs on every
note, a number settled by dev F1.
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
    description = "BiLSTM + softmax, Lample et al. 2016 settings (SGD on sentences, batches of 64; epochs by early stopping) [KIM20]"
    use_crf = False

    defaults = {"lr": 0.2, "batch_size": 64, "optimizer": "sgd", "context": "sentence"}
