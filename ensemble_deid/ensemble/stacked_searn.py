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

import re
import shlex

import numpy as np

from .tokens import TokenMetaLearner, TokenTable
from ..taggers.constraints import MAX_COUNT, MAX_RATE, Check, Interval
from ..taggers.linear import KeepsVowpalModel, vw_model_bytes


# The options a user may add: search and learning ones. An option that reads
# or writes files, opens a port or sets what a parameter sets (bits, passes,
# seed) is refused before VW ever sees it; the rest are tried on a tiny VW.
_USER_VW_OPTION = re.compile(
    r"--(search_[a-z_]+|loss_function|power_t|initial_t|decay_learning_rate|l1|l2|adaptive|normalized|invariant|"
    r"sgd|noconstant|quadratic|cubic|interactions|ngram|skips|ftrl|ftrl_alpha|ftrl_beta|coin|pistol)|-q")


# VW options the method sets from its own parameters (see _workspace): set
# again in vw_options, VW would use one of the two values without saying which.
# StackedSearn.check_params refuses them naming the parameter to set instead.
OWN_VW_OPTIONS = {"--search": None, "--search_task": None, "--search_history_length": "history",
                  "-b": "bits", "--bit_precision": "bits", "-l": "learning_rate", "--learning_rate": "learning_rate",
                  "--random_seed": "random_state", "--passes": "passes"}


def vw_options_usable(options: str) -> bool:
    """Whether Vowpal Wabbit accepts ``options`` next to this learner's own."""
    if not isinstance(options, str):
        return False
    if any(token.split("=", 1)[0] in OWN_VW_OPTIONS for token in options.split()):
        return True  # refused by check_params (run next), which names the parameter to set instead
    for token in options.split():
        if token.startswith("-") and not _USER_VW_OPTION.fullmatch(token):
            try:
                float(token)  # a negative value, not an option
            except ValueError:
                return False
    if not options.strip():
        return True
    from vowpalwabbit import Workspace

    try:
        Workspace(f"--search 2 --search_task sequence -b 2 --quiet {options}").finish()
    except Exception:  # VW's RuntimeError for an unknown option or value
        return False
    return True


class StackedSEARN(KeepsVowpalModel, TokenMetaLearner):
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
    vw_model_field = "vw_"
    description = "token-level Vowpal Wabbit learning-to-search over members' tags (+-2 window, tag trigrams)"

    _parameter_constraints = {
        "passes": [Interval(int, 1, MAX_COUNT)], "learning_rate": [Interval(float, 0, MAX_RATE, closed="right")],
        "window": [Interval(int, 0, 50)], "history": [Interval(int, 0, 50)], "bits": [Interval(int, 1, 30)],
        "max_length": [Interval(int, 1, MAX_COUNT)],
        "vw_options": [Check(vw_options_usable, "Vowpal Wabbit search or learning options it accepts, e.g. "
                                                "'--search_rollin policy' (no file, port, -b, --passes or seed options: "
                                                "those have their own parameters or are not allowed)")],
    }

    def __init__(self, passes=20, learning_rate=0.025, window=2, history=2, bits=22, max_length=50, vw_options="",
                 random_state=0):
        self._store_params(locals())

    def check_params(self) -> None:
        try:
            words = shlex.split(self.vw_options)
        except ValueError as exc:
            raise ValueError(f"{self.name}: vw_options {self.vw_options!r}: {exc}") from None
        for word in words:
            option = word.split("=", 1)[0]
            if option in OWN_VW_OPTIONS:
                owner = OWN_VW_OPTIONS[option]
                raise ValueError(f"{self.name}: vw_options sets {option}, which the method sets itself"
                                 + (f" from its parameter {owner} (set that instead)" if owner else ""))

    def _features(self, table: TokenTable) -> list[list[str]]:
        """Per document, the feature string of every token. Each (offset,
        member) column is looked up in a table of its strings by input id,
        and a token's columns are joined once: numpy's per-column string
        concatenation took 40 times longer."""
        index = self._input_index(table, self.input_tags_, len(self.input_tags_))
        w, m = int(self.window), table.n_members
        ids = range(-1, len(self.input_tags_) + 1)  # -1: beyond the document edge; the last: unknown
        names = {(off, j): np.array([f"m{j}@{off}={i}" for i in ids], dtype=object)
                 for off in range(-w, w + 1) for j in range(m)}
        out = []
        for doc_ids in table.member_ids:
            n = len(doc_ids)
            padded = np.full((n + 2 * w, m), -1, dtype=np.int64)
            if n:
                padded[w:w + n] = index[doc_ids]
            padded += 1  # row 0 of each lookup table is the edge
            cols = [names[off, j][padded[w + off:w + off + n, j]].tolist()
                    for off in range(-w, w + 1) for j in range(m)]
            out.append([" ".join(token) for token in zip(*cols)] if cols else [""] * n)
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
            examples.append([f"{y} | {f}" for y, f in zip(labels.tolist(), feats[d][a:b])])
        vw = self._workspace(len(self.tags_))
        try:
            for _ in range(int(self.passes)):
                for ex in examples:
                    vw.learn(ex)
            # Kept as VW's model file (what a bundle stores); prediction loads it once (VowpalModel).
            self.vw_ = vw_model_bytes(vw)
        finally:
            vw.finish()

    def _predict_native(self, table: TokenTable) -> list[np.ndarray]:
        feats = self._features(table)
        out = [np.zeros(len(d.tokens), dtype=np.int64) for d in table.documents]
        sequences = table.sequences(int(self.max_length))
        model = self.loaded_vw_model(self.vw_) if sequences else None  # loaded once, kept for the next batches
        for d, a, b in sequences:
            out[d][a:b] = [max(y - 1, 0) for y in model.sequence_labels([f"| {f}" for f in feats[d][a:b]])]
        return out
