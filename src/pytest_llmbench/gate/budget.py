"""One error budget per suite: a stated alpha per family of gates, Holm's step-down across each family.

How a test's pass/fail and the suite's adjustment fit together (a test ends before the suite's other
p-values exist):

- Up front, after collection, the gate counts the baseline entries with a p-value that the selected
  tests can check, per family (``m``). A check regresses its test when the noise model's band is
  exceeded *and* ``p <= alpha / m`` — Bonferroni, known before any test runs, so a test's verdict never
  waits for another test.
- At session end (the xdist controller, once every worker's verdicts are in) each family's p-values
  get Holm's adjusted ``q``. Holm's first step is that same ``alpha / m`` (or looser: fewer gates ran
  than were counted), so every test that failed is also REGRESSED at suite level; a gate whose ``q``
  reaches ``alpha`` only with Holm's later, looser steps is REGRESSED at suite level too — its test
  had passed, so the session fails and the summary names it.

**One budget for stored checks and comparisons.** A session that compares two builds can also judge checks
against stored baselines (a BFCL score beside the comparisons of its timing; a per-case comparison beside a
stored quality gate). Each used to take its family's whole alpha: counted apart, Bonferroni over each count,
Holm over each set, so a family with both could spend 2·alpha. Now both draw on one :class:`Budget`: the
comparisons counted up front are added to the gates counted (``compared``), every per-test level is alpha
over the sum, and at session end Holm runs once per family over the p-values of both (each side registers
its own in ``sources``; :meth:`Budget.joint_q` gives each its q from the one pass). A comparison whose alpha
is fixed by the user (``--llmbench-compare-alpha``) stays outside: its level is what the user set.

Holm rather than Benjamini–Hochberg: a clean run must stay clean (one false REGRESSED blocks a merge),
which is family-wise error, and the simulation in experiments/stats/simulate_gates.out.md shows the two give
the same power at the suites' sizes where real regressions are few.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

FAMILIES = ("timing", "quality", "decisions")
# 0.05 for the whole suite, by the union bound across families: a clean run fails at most 5% of the time.
DEFAULT_ALPHA = "timing=0.02,quality=0.02,decisions=0.01"


def parse_alpha(spec: str | None) -> dict[str, float] | None:
    """``0.05`` (each family), ``timing=0.02,quality=0.02,decisions=0.01``, or ``off`` (no budget)."""
    spec = (spec or DEFAULT_ALPHA).strip()
    if spec.lower() == "off":
        return None
    try:
        if "=" not in spec:
            alphas = dict.fromkeys(FAMILIES, float(spec))
        else:
            alphas = {}
            for part in spec.split(","):
                fam, _, value = part.partition("=")
                fam = fam.strip()
                if fam not in FAMILIES:
                    raise ValueError(f"unknown family {fam!r} (families: {', '.join(FAMILIES)})")
                alphas[fam] = float(value)
            missing = set(FAMILIES) - set(alphas)
            if missing:
                raise ValueError(f"no alpha for {', '.join(sorted(missing))}")
    except ValueError as e:
        raise ValueError(f"--gate-alpha {spec!r}: {e}") from None
    bad = {f: a for f, a in alphas.items() if not 0 < a < 1}
    if bad:
        raise ValueError(f"--gate-alpha {spec!r}: each alpha must be between 0 and 1, got {bad}")
    return alphas


def holm(p_values: Iterable[float]) -> list[float]:
    """Holm's adjusted p-values (step-down, family-wise error), in the order given."""
    p = np.asarray(list(p_values), dtype=float)
    m = p.size
    if m == 0:
        return []
    order = np.argsort(p, kind="stable")
    stepped = np.maximum.accumulate((m - np.arange(m)) * p[order])
    q = np.empty(m)
    q[order] = np.minimum(stepped, 1.0)
    return q.tolist()


#: The raw p-values per family a judge made this session (read at session end, after every test).
PValues = Callable[[], Mapping[str, Sequence[float]]]


@dataclass
class Budget:
    """The alphas and, per family, how many judgements with a p-value this run may make (counted up front):
    stored-baseline gates (``counts``) and, in a comparison session, comparisons (``compared``)."""

    alphas: Mapping[str, float]
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(FAMILIES, 0))
    compared: dict[str, int] = field(default_factory=lambda: dict.fromkeys(FAMILIES, 0))
    #: Who judges against this budget ("gate", "comparisons") and how to read their p-values at the end.
    sources: dict[str, PValues] = field(default_factory=dict)

    def counted(self, family: str) -> int:
        return self.counts.get(family, 0) + self.compared.get(family, 0)

    def threshold(self, family: str) -> float:
        """The per-test level: Bonferroni over everything counted in the family before any test ran."""
        return self.alphas[family] / max(self.counted(family), 1)

    def joint_q(self, family: str, source: str, p_values: Sequence[float]) -> list[float]:
        """Holm's q for ``source``'s ``p_values`` (in order) from one pass over the family's p-values of
        every source: a stored check and a comparison of one family share its alpha."""
        others = [float(p) for name, read in self.sources.items() if name != source for p in read().get(family, ())]
        return holm([*p_values, *others])[: len(p_values)]

    def describe(self) -> str:
        parts = []
        for f in FAMILIES:
            compared = f" + {self.compared[f]} comparisons" if self.compared.get(f) else ""
            parts.append(f"{f} α={self.alphas[f]:g}/{self.counts.get(f, 0)} gates{compared}")
        return "error budget (Holm per family): " + ", ".join(parts)
