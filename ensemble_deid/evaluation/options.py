"""Options of an evaluation: the official scorer's quirks and the policy for
gold documents that have no system output.

Every quirk of the official i2b2 2014 / N-GRID 2016 program is on by default,
so published figures reproduce; each can be switched off by name.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, replace

from ..errors import EnsembleDeidError

MISSING_POLICIES = ("error", "empty", "skip")


class EvaluationError(EnsembleDeidError):
    """Inputs that cannot be scored (messages name documents, never their text)."""


@dataclass(frozen=True)
class EvalOptions:
    """Quirk flags (``True`` = behave like the official program).

    hipaa_exclude_idnum
        The official HIPAA filter never keeps ID/IDNUM (its pattern carries a
        stray trailing space). ``False`` keeps IDNUM as Safe Harbor requires.
    hipaa_all_ages
        The official HIPAA filter keeps every AGE. ``False`` applies Safe
        Harbor: only ages over 89 (an AGE whose text has no digits is kept,
        since it cannot be ruled out).
    relaxed_many_to_one
        Official relaxed matching is set-based, not one-to-one: tags within 2
        characters of each other collapse, so one gold tag can absorb several
        system tags. ``False`` uses a one-to-one (maximum) matching instead.
    ascii_token_regex
        Official token criteria cut tags with ``[a-zA-Z0-9]+`` ("Zoë" gives
        "Zo"). ``False`` uses letters and digits of any script.
    missing
        Gold documents without system output: ``"error"`` (default) stops;
        ``"empty"`` scores them as an empty output (their gold tags count as
        false negatives); ``"skip"`` leaves them out like the official program.
        Both of the latter warn.
    """

    hipaa_exclude_idnum: bool = True
    hipaa_all_ages: bool = True
    relaxed_many_to_one: bool = True
    ascii_token_regex: bool = True
    missing: str = "error"

    def __post_init__(self) -> None:
        if self.missing not in MISSING_POLICIES:
            raise ValueError(f"missing must be one of {MISSING_POLICIES}, not {self.missing!r}")

    @classmethod
    def no_quirks(cls, **changes) -> "EvalOptions":
        """Every quirk switched off (true Safe Harbor HIPAA, one-to-one relaxed, Unicode tokens)."""
        base = cls(hipaa_exclude_idnum=False, hipaa_all_ages=False,
                   relaxed_many_to_one=False, ascii_token_regex=False)
        return replace(base, **changes)

    def to_dict(self) -> dict:
        return asdict(self)
