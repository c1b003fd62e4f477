"""The pure judge: a baseline entry and an observation in, a verdict out — no files, no pytest.

Everything here is a function of its arguments so the simulation (experiments/stats/simulate_gates.py) and
the tests call exactly what ``bench.check`` calls.
"""

from __future__ import annotations

from dataclasses import replace

from pytest_llmbench.gate.metric import resolve_direction
from pytest_llmbench.gate.noise import Binomial, McNemar, NoiseModel, PairedT, Relative, StdErr
from pytest_llmbench.gate.types import BaselineEntry, Direction, Observation, Verdict, fmt_p
from pytest_llmbench.gate.verdict import judge as beyond

DEFAULT_RELATIVE = 0.05


def default_noise(obs: Observation) -> NoiseModel:
    """Per-sample values → StdErr(k=2); a whole count with n → Binomial; a single number → Relative(5%).

    With ``cases=`` the paired versions — a whole count with n → McNemar, otherwise PairedT — which pair
    when the baseline's sidecar holds the same cases and otherwise fall back to Binomial / StdErr (Welch),
    their rule text starting with ``unpaired (why)``.
    """
    if obs.cases:
        return McNemar() if obs.n is not None and obs.samples == 0 and float(obs.value).is_integer() else PairedT()
    if obs.samples > 1 or obs.se is not None:
        return StdErr()
    if obs.n is not None and float(obs.value).is_integer():
        return Binomial()
    return Relative(DEFAULT_RELATIVE)


def family_of(test_key: str, hardware_bound: bool, family: str | None = None) -> str:
    """Which error budget a gate counts against: explicit, else timing for hardware-bound metrics,
    decisions for the decision benches (by test file), quality for the rest."""
    if family is not None:
        return family
    if hardware_bound:
        return "timing"
    path = test_key.split("::", 1)[0]
    return "decisions" if "decision" in path.rsplit("/", 1)[-1] else "quality"


def direction_for(
    metric: str, direction: str | None, entry: BaselineEntry | None, *, overwrite: bool = False
) -> Direction:
    """The stored direction is the reviewed record and wins over the one read from the metric's name; an
    explicit ``direction=`` that contradicts it is an error unless the run re-records (``overwrite``)."""
    if entry is None:
        return resolve_direction(metric, direction)
    if direction is None:
        return entry.direction
    explicit = resolve_direction(metric, direction)
    if explicit != entry.direction and not overwrite:
        raise ValueError(
            f"direction={explicit!r} contradicts the baseline's direction {entry.direction!r}; "
            f"re-record it with --update-baselines=all if the direction really changed"
        )
    return explicit


def judge(
    entry: BaselineEntry | None,
    obs: Observation,
    model: NoiseModel,
    direction: Direction,
    *,
    threshold: float | None = None,
    missing: str = "no baseline",
) -> Verdict:
    """The model's verdict, then the suite's budget: a band exceeded with ``p > threshold`` is not a
    regression of this test (the gate's share of the family's alpha was not spent)."""
    if entry is None:
        return Verdict(
            metric="",
            observed=obs.value,
            baseline=None,
            tolerance=None,
            rule=missing,
            status="new",
            direction=direction,
            noise=model.describe(),
        )
    v = model.verdict(entry, obs, direction)
    if threshold is None or v.p_value is None or v.status != "REGRESSED":
        return v
    if v.p_value <= threshold:
        return replace(v, rule=f"{v.rule}; p={fmt_p(v.p_value)} ≤ budget {fmt_p(threshold)}")
    return replace(
        v,
        status="pass",
        rule=f"{v.rule}; beyond the band but p={fmt_p(v.p_value)} > budget "
        f"{fmt_p(threshold)}: within the suite's error budget",
    )


def beyond_band(v: Verdict) -> bool:
    """Whether the model's own band was exceeded (recomputed from the row, so it survives xdist)."""
    if v.baseline is None or v.tolerance is None:
        return False
    return beyond(v.baseline, v.observed, v.tolerance, v.direction) == "REGRESSED"
