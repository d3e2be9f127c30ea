"""Stacked SEARN at token level [KIM20]: Vowpal Wabbit learning-to-search.

Each token is one search step of a sequence (a sentence). Its features are
the tags every member predicted for the token and for the ``window`` tokens
either side (``m{j}@{offset}={tag}``; positions past the document edge read
as a boundary tag); the search task conditions on the two previous predicted
tags (``--search_history_length 2``), which with the current tag gives tag
trigram features. Defaults follow [KIM20]: 20 passes, initial learning rate
0.025. Output tags are O plus the tags of the training gold.
"""
from __future__ import annotations

import numpy as np

from .tokens import TokenMetaLearner, TokenTable
from ..taggers.constraints import Interval


class StackedSEARN(TokenMetaLearner):
    """Learning-to-search (VW ``--search_task sequence``) over the members' tags.

    Parameters
    ----------
    passes : int
        Passes over the training sequences (20).
    learning_rate : float
        VW's initial learning rate ``-l`` (0.025).
    window : int
        Tokens either side whose member tags are features (2).
    history : int
        Previous predicted tags conditioned on (2: tag trigrams).
    bits : int
        Feature hash bits ``-b``.
    max_length : int
        Longer sentences are cut into sequences of this many tokens (search
        costs grow faster than linearly with a sequence's length).
    vw_options : str
        Extra VW options, e.g. ``"--search_rollin policy --search_rollout policy"``.
    random_state : int
        Seed of VW's ``--random_seed``.
    """

    name = "stacked-searn"
    description = "token-level Vowpal Wabbit learning-to-search over members' tags (+-2 window, tag trigrams)"

    _parameter_constraints = {
        "passes": [Interval(int, 1, None)], "learning_rate": [Interval(float, 0, None, closed="neither")],
        "window": [Interval(int, 0, None)], "history": [Interval(int, 0, None)], "bits": [Interval(int, 1, 30)],
        "max_length": [Interval(int, 1, None)], "vw_options": [str],
    }

    def __init__(self, passes=20, learning_rate=0.025, window=2, history=2, bits=22, max_length=50, vw_options="",
                 random_state=0):
        self.passes = passes
        self.learning_rate = learning_rate
        self.window = window
        self.history = history
        self.bits = bits
        self.max_length = max_length
        self.vw_options = vw_options
        self.random_state = random_state

    def _features(self, table: TokenTable) -> list[np.ndarray]:
        """Per document, an array of feature strings (one per token)."""
        index = self._input_index(table, self.input_tags_, len(self.input_tags_))
        out = []
        w = int(self.window)
        for ids in table.member_ids:
            mapped = index[ids] if ids.size else ids.astype(np.int64)
            n, m = mapped.shape
            padded = np.full((n + 2 * w, m), -1, dtype=np.int64)  # -1: beyond the document
            padded[w:w + n] = mapped
            cols = []
            for off in range(-w, w + 1):
                block = padded[w + off:w + off + n]
                for j in range(m):
                    cols.append(np.char.add(f"m{j}@{off}=", block[:, j].astype(str)))
            if cols:
                joined = cols[0]
                for c in cols[1:]:
                    joined = np.char.add(np.char.add(joined, " "), c)
            else:
                joined = np.full(n, "", dtype=str)
            out.append(joined)
        return out

    def _workspace(self, n_actions: int, test: bool = False):
        from vowpalwabbit import Workspace

        opts = (f"--search {n_actions} --search_task sequence --search_history_length {int(self.history)} "
                f"-b {int(self.bits)} -l {float(self.learning_rate)} --random_seed {int(self.random_state)} "
                f"--quiet {self.vw_options}")
        return Workspace(opts.strip())

    def _fit_prepared(self, table: TokenTable) -> None:
        self._output_tags(table)
        # Input vocabulary: every member tag seen in fit (others map to one "unknown" id).
        seen = set()
        for ids in table.member_ids:
            seen.update(np.unique(ids).tolist())
        self.input_tags_ = {table.vocab.tags[i]: k for k, i in enumerate(sorted(seen))}
        out_index = {t: k + 1 for k, t in enumerate(self.tags_)}  # VW actions are 1..K
        gold_map = np.array([out_index.get(t, 1) for t in table.vocab.tags], dtype=np.int64)
        feats = self._features(table)
        examples: list[list[str]] = []
        for d, a, b in table.sequences(int(self.max_length)):
            labels = gold_map[table.gold_ids[d][a:b]]
            examples.append([f"{y} | {f}" for y, f in zip(labels.tolist(), feats[d][a:b].tolist())])
        vw = self._workspace(len(self.tags_))
        for _ in range(int(self.passes)):
            for ex in examples:
                vw.learn(ex)
        self.vw_ = vw

    # Saving: VW's own model file; loading starts a VW on it (same options).
    def _fitted_state(self) -> dict:
        import tempfile
        from pathlib import Path

        state = super()._fitted_state()
        with tempfile.TemporaryDirectory(prefix="edeid-searn-") as tmp:
            path = Path(tmp) / "model.vw"
            state.pop("vw_").save(str(path))
            state["vw_"] = path.read_bytes()
        return state

    def _restore_state(self, state: dict) -> None:
        import tempfile
        from pathlib import Path

        from vowpalwabbit import Workspace

        state = dict(state)
        model = state.pop("vw_")
        super()._restore_state(state)
        with tempfile.TemporaryDirectory(prefix="edeid-searn-") as tmp:
            path = Path(tmp) / "model.vw"
            path.write_bytes(model)
            self.vw_ = Workspace(f"-i {path} --quiet")  # VW reads the model (and its options) at start

    def _predict_native(self, table: TokenTable) -> list[np.ndarray]:
        feats = self._features(table)
        out = [np.zeros(len(d.tokens), dtype=np.int64) for d in table.documents]
        vw = self.vw_
        for d, a, b in table.sequences(int(self.max_length)):
            exs = vw.parse([f"| {f}" for f in feats[d][a:b].tolist()])
            vw.predict(exs)
            out[d][a:b] = [max(e.get_multiclass_prediction() - 1, 0) for e in exs]
            vw.finish_example(exs)
        return out
