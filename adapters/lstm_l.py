"""``lstm-l``: BiLSTM with a softmax output layer (no CRF), the Lample et
al. (2016) settings used in [KIM20 Table 3]: learning rate 0.05, at most 100
epochs, plain SGD on sentences as in the original (the loss summed over the
sentences of a batch, gradient norm clipped at 5); dimensions [LIU17 Table
3]: characters 25, character BiLSTM 25, words 100, word BiLSTM 100, dropout
0.5. Tags are chosen token by token, so the output may hold an ``I-`` after
``O`` (decoding repairs it into a span start).

    tagger = LstmLTagger().fit(train_docs)
    tagger.predict(test_docs)                      # confidences: softmax probabilities

See ``ensemble_deid.taggers.neural.base.NeuralTagger`` for the parameters.
"""
from __future__ import annotations

from ensemble_deid.taggers.neural.base import NeuralTagger


class LstmLTagger(NeuralTagger):
    name = "lstm-l"
    version = "1"
    description = "BiLSTM + softmax, Lample et al. 2016 settings (SGD lr 0.05, <= 100 epochs) [KIM20]"
    use_crf = False

    def __init__(
        self,
        epochs: int = 100,
        patience: int = 8,
        batch_size: int = 16,
        lr: float = 0.05,
        optimizer: str = "sgd",
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
        context: str = "sentence",
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
