"""``lstm-crf-l``: BiLSTM-CRF with the settings of Lample et al. (2016) as
used in [KIM20 Table 3]: learning rate 0.005, at most 100 epochs; dimensions
[LIU17 Table 3]: characters 25, character BiLSTM 25, words 100, word BiLSTM
100 (per direction), dropout 0.5. Adam with that learning rate (plain SGD
at 0.005 learns too slowly for a CPU budget), whole notes as sequences, and a
small token shape embedding (casing, glued to the previous token): the
choices measured in docs/neural-taggers.md.

    tagger = LstmCrfLTagger().fit(train_docs)      # early stopping on 10% held out
    tagger.predict(test_docs)                      # confidences: CRF marginals
    tagger.predict_marginals(test_docs)            # (n_tokens, len(tagger.tags_)) each

See ``ensemble_deid.taggers.neural.base.NeuralTagger`` for the parameters and
``docs/neural-taggers.md`` for the measured figures.
"""
from __future__ import annotations

from ensemble_deid.taggers.neural.base import NeuralTagger


class LstmCrfLTagger(NeuralTagger):
    name = "lstm-crf-l"
    version = "1"
    description = "BiLSTM-CRF, Lample et al. 2016 settings (lr 0.005, <= 100 epochs) [KIM20]"
    use_crf = True

    def __init__(
        self,
        epochs: int = 100,
        patience: int = 8,
        batch_size: int = 4,
        lr: float = 0.005,
        optimizer: str = "adam",
        lr_decay: float = 0.05,
        anneal: float = 0.5,
        anneal_patience: int = 3,
        ema_decay: float = 0.99,
        clip: float = 5.0,
        dropout: float = 0.5,
        output_dropout: bool = True,
        bio_constraints: bool = True,
        char_dim: int = 25,
        char_lstm_dim: int = 25,
        word_dim: int = 100,
        word_lstm_dim: int = 100,
        shape_dim: int = 10,
        embeddings_path: str | None = None,
        corpus_vectors: bool = True,
        unk_prob: float = 0.5,
        context: str = "document",
        max_length: int = 200,
        device: str = "auto",
        random_state: int = 0,
        validation_fraction: float = 0.1,
        refit: bool = True,
        num_threads: int | None = 1,
        verbose: bool = False,
    ):
        params = dict(locals())
        del params["self"], params["__class__"]
        super().__init__(**params)
