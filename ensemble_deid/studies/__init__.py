"""Studies: what a paper reports, built from the cache.

- ``summary``: scoring cached predictions and end-of-run tables;
- ``comparison`` and ``significance``: scores and paired tests (Holm);
- ``crosscorpus`` and ``study``: the cross-corpus design of [KIM20] section 5;
- ``report``, ``table`` and ``plots``: result tables (Markdown, CSV, LaTeX,
  terminal) and figures.

It sits above ensemble and below cli.
"""
