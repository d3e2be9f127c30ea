"""``lstm-crf-l``: BiLSTM-CRF with the settings of Lample et al. (2016) as
used in [KIM20 Table 3]: learning rate 0.005; dimensions
[LIU17 Table 3]: characters 25, character BiLSTM 25, words 100, word BiLSTM
100 (per direction), dropout 0.5. Adam with that learning rate (plain SGD
at 0.005 learns too slowly for a CPU budget), whole notes as sequences, and a
small token shape embedding (casing, glued to the previous token), batches
of 16, and at most 30 epochs: early stopping on a tenth of the training
notes (whole patients) chooses the epoch inside each training run, then the
model learns from every note for that many epochs (``validation_fraction=0.1,
refit=True``), so no test split chooses it. The published MEDDOCAN member
(version 2) is ``epochs=12, validation_fraction=0``: 12 epochs on every
note, settled by dev F1 (docs/neural-taggers.md).

    tagger = LstmCrfLTagger().fit(train_docs)      # epochs chosen on held-out training notes
    tagger.predict(test_docs)                      # confidences: CRF marginals
    tagger.predict_marginals(test_docs)            # (n_tokens, len(tagger.tags_)) each

See ``ensemble_deid.taggers.neural.base.NeuralTagger`` for the parameters and
``docs/neural-taggers.md`` for the measured figures.
"""
from __future__ import annotations

from ensemble_deid.taggers.neural.base import NeuralTagger


class LstmCrfLTagger(NeuralTagger):
    name = "lstm-crf-l"
    version = "2"
    description = "BiLSTM-CRF, Lample et al. 2016 settings (lr 0.005, batches of 16; epochs by early stopping) [KIM20]"
    use_crf = True

    # The base class's defaults are this adapter's.
    defaults = {}
