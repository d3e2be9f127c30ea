"""The experiment engine: running taggers through cross-validation into the
prediction cache.

- ``cache``: the checksummed prediction cache (out-of-fold and test parts);
- ``clusters``: connecting to a Dask scheduler or Ray head, within a short timeout;
- ``cv``: patient-grouped k-fold CV of tagger specs, resumable, in parallel;
- ``publish``: text-free, checksummed published folders of cache entries;
- ``shipping``: sending a corpus to parallel workers once per worker.

It sits above corpus and taggers and below ensemble, studies and cli.
"""
