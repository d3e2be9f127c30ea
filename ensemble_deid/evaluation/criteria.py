"""The matching criteria: which key each tag becomes, by name.

A criterion is a matching rule (token, strict, relaxed, or a SemEval-2013
scheme) plus two switches: ``hipaa`` filters gold and system tags to the Safe
Harbor types before matching, and ``binary`` drops the names and types from the
keys. The ten official criteria are those of [LIU17 Table 6].
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from ..errors import did_you_mean

MATCHES = ("token", "strict", "relaxed", "semeval")
SEMEVAL_SCHEMES = ("strict", "exact", "partial", "type")


@dataclass(frozen=True)
class Criterion:
    name: str
    match: str  # token | strict | relaxed | semeval
    hipaa: bool = False
    binary: bool = False
    scheme: str | None = None  # SemEval scheme

    @property
    def labelled(self) -> bool:
        """Whether keys carry names and types (so per-category breakdowns exist)."""
        return not self.binary and self.match != "semeval"

    def __str__(self) -> str:
        return self.name


def _make(match: str, hipaa: bool, binary: bool) -> Criterion:
    name = "_".join(p for p, on in (("hipaa", hipaa), ("binary", binary)) if on) + ("_" if hipaa or binary else "") + match
    return Criterion(name, match, hipaa, binary)


CRITERIA: dict[str, Criterion] = {}
for _hipaa in (False, True):
    for _binary in (False, True):
        for _match in ("token", "strict", "relaxed"):
            _c = _make(_match, _hipaa, _binary)
            CRITERIA[_c.name] = _c
for _scheme in SEMEVAL_SCHEMES:
    CRITERIA[f"semeval_{_scheme}"] = Criterion(f"semeval_{_scheme}", "semeval", scheme=_scheme)

# The ten of [LIU17 Table 6], in its order; "strict" is the primary one.
OFFICIAL = (
    "token", "strict", "relaxed", "binary_token", "binary_strict",
    "hipaa_token", "hipaa_strict", "hipaa_relaxed", "hipaa_binary_token", "hipaa_binary_strict",
)
SEMEVAL = tuple(f"semeval_{s}" for s in SEMEVAL_SCHEMES)
ALL = OFFICIAL + SEMEVAL
# Not in the official set but well defined: binary_relaxed, hipaa_binary_relaxed.
PRIMARY = "strict"


def get_criterion(name: str | Criterion) -> Criterion:
    if isinstance(name, Criterion):
        return name
    key = name.strip().lower().replace("-", "_")
    try:
        return CRITERIA[key]
    except KeyError:
        raise ValueError(f"unknown criterion {name!r}{did_you_mean(key, CRITERIA)}; known: {', '.join(CRITERIA)}") from None


def parse_criteria(names: str | Iterable[str | Criterion]) -> tuple[Criterion, ...]:
    """Criteria from names; ``"all"``, ``"official"`` and ``"semeval"`` name groups.
    A comma-separated string is accepted. Order kept, duplicates dropped."""
    if isinstance(names, str):
        names = [n for n in names.split(",") if n.strip()]
    out: list[Criterion] = []
    for name in names:
        if isinstance(name, str) and name.strip().lower() in ("all", "official", "semeval"):
            group = {"all": ALL, "official": OFFICIAL, "semeval": SEMEVAL}[name.strip().lower()]
            out.extend(CRITERIA[g] for g in group)
        else:
            out.append(get_criterion(name))
    seen: set[str] = set()
    unique = [c for c in out if not (c.name in seen or seen.add(c.name))]
    if not unique:
        raise ValueError("no criteria selected")
    return tuple(unique)
