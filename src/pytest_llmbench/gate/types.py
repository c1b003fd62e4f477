"""The gate's plain data: what was observed, what is stored, what was decided — no I/O, no registry.

Every other gate module imports these; this module imports none of them, so the import graph of gate/
runs one way (tests/gate/test_import_graph.py keeps it so): types → files → verdict, metric → noise
models → noise registry → baselines, cases → store → session.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from numbers import Real
from typing import Any, Literal

import numpy as np
from scipy import stats

Direction = Literal["higher", "lower"]
Status = Literal["pass", "REGRESSED", "improved", "new", "learning", "not comparable"]

STATUSES: tuple[Status, ...] = ("REGRESSED", "improved", "not comparable", "learning", "new", "pass")  # table order
#: What a run judged: the other statuses say why a check was *not* compared, and never fail a test.
JUDGED: tuple[Status, ...] = ("REGRESSED", "improved", "pass")


@dataclass(frozen=True)
class Check:
    """One ``bench.check`` call as the checkers see it (hookspec ``pytest_llmbench_check``): what was
    observed and how the test asked it to be judged. Fields a checker does not use, it ignores."""

    metric: str
    observed: float | Sequence[float] | None = None
    noise: Any = None  # a NoiseModel (gate/noise): the stored gate's, and the paired case models'
    n: int | None = None
    direction: str | None = None
    hardware_bound: bool | None = None
    se: float | None = None
    family: str | None = None
    reference: float | None = None
    cases: Mapping[str, float] | None = None
    reference_cases: Mapping[str, float] | None = None
    detect: float | str | None = None  # a comparison's own sizes (compare/margins.py)
    ignore: float | str | None = None

    def sizes(self) -> dict[str, float | str]:
        """The sizes given (``detect``/``ignore``), for a comparison's check."""
        return {k: v for k, v in (("detect", self.detect), ("ignore", self.ignore)) if v is not None}


@dataclass(frozen=True)
class Verdict:
    """One row of the verdict table; also written to results.jsonl and the JUnit XML."""

    metric: str
    observed: float
    baseline: float | None
    tolerance: float | None
    rule: str
    status: Status
    direction: Direction
    noise: str
    config: str = ""
    test_key: str = ""
    runner: str | None = None  # the runner profile for hardware-bound metrics, None when shared
    p_value: float | None = None  # one-sided, from the rule's own test; None for fixed bands (Relative, Spread)
    q_value: float | None = None  # p adjusted across the family's gates at session end (Holm)
    paired: bool = False  # judged case by case against the baseline's own cases
    family: str = ""  # the error budget it counts against: timing / quality / decisions
    recorded: bool = False  # judged while recording (--update-baselines=all): shown, never failing

    @property
    def delta(self) -> float | None:
        return None if self.baseline is None else self.observed - self.baseline

    @property
    def delta_pct(self) -> float | None:
        if self.baseline is None or self.baseline == 0:
            return None
        return 100.0 * (self.observed - self.baseline) / abs(self.baseline)

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["delta"] = self.delta
        d["delta_pct"] = self.delta_pct
        return d

    def message(self) -> str:
        """What a failing (or reported) check says: metric, both values, tolerance and the rule."""
        where = f"[config {self.config}, test {self.test_key}" + (f", runner {self.runner}]" if self.runner else "]")
        if self.status == "not comparable":
            return f"{self.metric}: {fmt(self.observed)} not comparable: {self.rule} {where}"
        if self.status == "learning":
            return f"{self.metric}: {fmt(self.observed)} learning its spread: {self.rule} {where}"
        if self.baseline is None:
            return f"{self.metric}: {fmt(self.observed)} has no baseline ({self.rule}) {where}"
        head = {
            "REGRESSED": "REGRESSED",
            "improved": "improved — consider --update-baselines",
            "pass": "within noise",
        }[self.status]
        pct = "" if self.delta_pct is None else f", {self.delta_pct:+.1f}%"
        if self.p_value is not None:
            pct += f"; p={fmt_p(self.p_value)}" + ("" if self.q_value is None else f", q={fmt_p(self.q_value)}")
        worse = "lower" if self.direction == "higher" else "higher"
        return (
            f"{self.metric} {head}: observed {fmt(self.observed)} vs baseline {fmt(self.baseline)} "
            f"(delta {fmt(self.delta, sign=True)}{pct}; tolerance {fmt(self.tolerance)}, {self.direction} is "
            f"better, so {worse} beyond the tolerance fails) — rule: {self.rule} {where}"
        )


def fmt(x: float | None, *, sign: bool = False, digits: int = 4) -> str:
    """Numbers as people read them in a table: 4 significant digits, no float noise."""
    if x is None:
        return "-"
    if isinstance(x, float) and not math.isfinite(x):
        return str(x)
    spec = "+" if sign else ""
    if abs(x) >= 10**digits:
        return f"{x:{spec}.0f}"
    return f"{x:{spec}.{digits}g}"


def fmt_p(p: float | None) -> str:
    """p-values as people compare them with a threshold: 2 significant digits, '<1e-6' at the floor."""
    if p is None:
        return "-"
    return "<1e-6" if p < 1e-6 else f"{p:.2g}"


HISTORY_LEN = 10  # accepted values kept per entry: enough for a learned spread, short enough to review


@dataclass(frozen=True)
class BaselineEntry:
    """``value`` is the last accepted measurement; ``history`` the last accepted values, oldest first
    (it includes ``value``); ``noise`` the noise model the entry was written with (name + params)."""

    value: float
    direction: Direction
    noise: dict[str, Any]
    n: int | None = None
    se: float | None = None
    spread: float | None = None
    history: tuple[float, ...] = ()
    provenance: dict[str, Any] = field(default_factory=dict)
    cases: Mapping[str, float] | None = None  # per-case values keyed by case id (paired gates)

    @property
    def accepted(self) -> tuple[float, ...]:
        """The accepted values to learn a spread from (an entry without history has its value)."""
        return self.history or (self.value,)


@dataclass(frozen=True)
class Observation:
    """A measured value with what is known about its noise: SE and n from per-sample values, or a count."""

    value: float
    se: float | None = None
    n: int | None = None
    samples: int = 0  # how many per-sample values the value was computed from (0: a single number)
    cases: Mapping[str, float] | None = None  # per-case values keyed by case id (paired gates)

    @classmethod
    def of(
        cls, observed: object = None, *, n: object = None, se: object = None, cases: Mapping[str, object] | None = None
    ) -> Observation:
        """A number, a sequence of per-sample values (mean, SE, n from them), or a count ``k`` with ``n``.

        ``se`` and ``n`` are checked here, not where they are used: a NaN or negative SE would make the
        tolerance NaN or negative, and a NaN tolerance passes anything. ``cases`` ({case id: value},
        finite values) rides along for the paired noise models; with ``observed=None`` the case values
        are the per-sample values.
        """
        se_f = check_se(se, "se=")
        n_i = check_n(n, "n=")
        if cases is not None:
            checked = clean_cases(cases)
            base = cls.of(list(checked.values()) if observed is None else observed, n=n_i, se=se_f)
            return replace(base, cases=checked)
        if observed is None:
            raise TypeError("observed is None: pass a value, per-sample values, or cases={case id: value}")
        if isinstance(observed, bool | str | bytes):
            raise TypeError(f"observed must be a number or a sequence of numbers, not {type(observed).__name__}")
        if isinstance(observed, Real | np.number):
            value = float(observed)
            if not math.isfinite(value):
                raise ValueError(f"observed value is {value}")
            return cls(value=value, se=se_f, n=n_i)
        if isinstance(observed, Sequence | np.ndarray):
            arr = np.asarray(observed, dtype=float).ravel()
            if arr.size == 0:
                raise ValueError("observed is an empty sequence: nothing was measured")
            if not np.all(np.isfinite(arr)):
                raise ValueError(f"observed values contain {int(np.sum(~np.isfinite(arr)))} non-finite entries")
            sem = float(stats.sem(arr)) if arr.size > 1 else None
            return cls(
                value=float(np.mean(arr)),
                se=sem if se_f is None else se_f,
                n=int(arr.size) if n_i is None else n_i,
                samples=int(arr.size),
            )
        raise TypeError(f"observed must be a number or a sequence of numbers, not {type(observed).__name__}")


def check_se(se: object, what: str) -> float | None:
    """A standard error is a finite number >= 0 (or absent); anything else is an error naming ``what``."""
    if se is None:
        return None
    if isinstance(se, bool) or not isinstance(se, Real | np.number):
        raise TypeError(f"{what} must be a number, not {type(se).__name__} ({se!r})")
    f = float(se)
    if not math.isfinite(f) or f < 0:
        raise ValueError(f"{what} must be a finite number >= 0, got {f}")
    return f


def check_n(n: object, what: str) -> int | None:
    """A sample size is a whole number >= 1 (or absent)."""
    if n is None:
        return None
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or int(n) < 1:
        raise ValueError(f"{what} must be a whole number >= 1, got {n!r}")
    return int(n)


def clean_cases(cases: Mapping[Any, Any]) -> dict[str, float]:
    """``{case id: value}`` checked and sorted by id: ids are non-empty strings, values finite numbers
    (a bool counts as 0/1, for pass/fail sets)."""
    if not isinstance(cases, Mapping):
        raise TypeError(f"cases must map case id → value, not {type(cases).__name__}")
    if not cases:
        raise ValueError("cases is empty: nothing was measured")
    out: dict[str, float] = {}
    for cid, v in cases.items():
        if not isinstance(cid, str) or not cid:
            raise TypeError(f"case ids must be non-empty strings, got {cid!r}")
        if not isinstance(v, bool | Real | np.number) or not math.isfinite(float(v)):
            raise ValueError(f"case {cid!r}: value must be a finite number, got {v!r}")
        out[cid] = float(v)
    return dict(sorted(out.items()))
