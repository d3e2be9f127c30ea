"""``lstm-crf-n``: BiLSTM-CRF with the NeuroNER settings used in [KIM20
Table 3]: learning rate 0.01 (the paper's ceiling of 80 epochs with early
stopping is ``epochs=80, validation_fraction=0.1, refit=True``); dimensions [LIU17 Table 3]:
characters 25, character BiLSTM 25, words 100, word BiLSTM 100 (per
direction), dropout 0.5. Adam, whole notes as sequences and the token
shape embedding, batches of 16 and the epochs chosen by early stopping on
held-out training notes, as in ``lstm-crf-l`` (see docs/neural-taggers.md).

    tagger = LstmCrfNTagger().fit(train_docs)      # epochs chosen on held-out training notes
    tagger.predict(test_docs)                      # confidences: CRF marginals
    tagger.predict_marginals(test_docs)            # (n_tokens, len(tagger.tags_)) each

See ``ensemble_deid.taggers.neural.base.NeuralTagger`` for the parameters.
"""
from __future__ import annotations

from ensemble_deid.taggers.neural.base import NeuralTagger


class LstmCrfNTagger(NeuralTagger):
    name = "lstm-crf-n"
    version = "2"
    description = "BiLSTM-CRF, NeuroNER settings (lr 0.01, batches of 16; epochs by early stopping) [KIM20]"
    use_crf = True

    defaults = {"lr": 0.01}
