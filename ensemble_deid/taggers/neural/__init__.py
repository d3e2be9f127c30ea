"""Neural taggers: character + word BiLSTM with a CRF or softmax output
[LAMPLE16, LIU17, KIM20]. Import ``ensemble_deid.taggers.neural.base`` for the
``NeuralTagger`` base class; torch loads only when a model is fitted or used.
"""
