"""Corpora: documents, their common tokenization and BIO tags, and where they come from.

- ``document``: ``Document``/``Annotation`` and the i2b2 category scheme;
- ``tokenize``: the one tokenization every tagger and the cache share;
- ``bio``: BIO tags on those tokens (gold tags, decoding spans);
- ``labelmap``: mapping foreign labels (MEDDOCAN, BRAT, tools) onto i2b2 ones;
- ``folds``: patient-grouped cross-validation folds;
- ``fingerprint``: content fingerprints that key the prediction cache;
- ``formats``: reading and writing i2b2-style XML and BRAT folders;
- ``workspace``: the registry of named corpora in a workspace folder;
- ``synth``: the embedded synthetic 2014-like and 2016-like corpora.

Nothing here imports from the layers above (taggers, experiment, ensemble,
studies, cli).
"""
