"""The records a comparison session writes (compare/records.py, compare/suite.py, compare/servers.py),
declared: the comparison's half of records/kinds.py, apart to keep each module one screenful of schemas.

No ``from __future__ import annotations``: ``TypedDict`` reads ``NotRequired`` from evaluated annotations.
"""

from typing import Any, Literal, NotRequired

from pytest_llmbench.records.base import Json, Line


class _ComparisonHead(Line):
    """What each record of one compared scenario starts with (compare/records.py ``_head``): the test's
    names are its own (``nodeid`` for ``test``), so a line is whole before ``Bench.emit`` stamps it."""

    compare_session: str
    config: str
    nodeid: str
    test_key: str
    scenario: str | None
    test: NotRequired[str]  # Bench.emit's stamp (the node id again)


class ComparisonBlockRecord(_ComparisonHead):
    """One arm's block of one round, as played: its metrics, where and in which order it ran."""

    record: Literal["comparison_block"]
    round: int
    unit: int
    wall_s: float
    role: str
    first_in_round: str
    started_first: str | None
    devices: list[str] | None
    arm: str
    notes: list[str]
    warmup: bool
    prompt_ids: list[Any]
    metrics: dict[str, float]
    capacity: Any
    host_load: Json | None
    telemetry: Json | None


class ComparisonUnitPlanRecord(_ComparisonHead):
    """What the first timed pair decided: the unit of rounds, the pilot, the table printed."""

    record: Literal["comparison_unit_plan"]
    metric: str
    unit_rounds: int
    units: int
    pilot_units: int
    predicted_s: float
    detectable: float | None
    power: float | None
    reached: bool
    start_s: float
    round_s: float
    warmup_s: float
    prior_sd_between: float | None
    prior_sd_within: float | None
    budget_s: float | None
    session_budget_s: float | None
    table: list[str]


class ComparisonPlanRecord(_ComparisonHead):
    """What the pilot planned: the rounds, the binding metric, the spreads (the pilot's nested-model SDs
    ride along as further fields)."""

    record: Literal["comparison_plan"]
    rounds: int
    needed: int
    limit: int
    pilot: int
    unit_rounds: int
    units: int
    predicted_s: float
    seconds_per_round: float
    underpowered: bool
    reason: str
    needs: list[Json]


class ComparisonRecord(_ComparisonHead):
    """One metric's verdict, reference against candidate, with why its rounds stopped; the session verdict,
    the report's comparison table and history read it."""

    record: Literal["comparison"]
    metric: str
    reference: Any
    candidate: Any
    ratio: NotRequired[float | None]  # a ratio comparison's estimate
    difference: NotRequired[float | None]  # a difference comparison's estimate
    ci_low: float | None
    ci_high: float | None
    confidence: float
    verdict: str
    p_value: float | None
    p_equivalent: float | None
    alpha: float | None
    n: int
    method: str
    ignore: float
    detect: float
    kind: str  # "ratio" or "difference": which of the two estimates it has
    higher_is_better: bool
    rules_out: Any
    detectable: float | None
    se: float | None
    df: float | None
    statistic: float | None
    family: str
    rounds: int
    prompts: int
    stop: str
    stop_reason: str
    planned_rounds: int | None
    needed_rounds: int | None
    underpowered: bool
    elapsed_s: float | None
    budget_s: float | None
    max_rounds: int
    reference_arm: str
    candidate_arm: str
    strict: bool
    q_value: NotRequired[float | None]  # joined in by readers from comparison_suite (records/verdict.py)
    suite_verdict: NotRequired[str | None]


class ComparisonSetEffectRecord(_ComparisonHead):
    """A disjoint placement's set effect (compare/placement.py); None where too few units had both halves."""

    record: Literal["comparison_set_effect"]
    placement: str
    sets: list[list[str]]
    device_kind: str
    set_effect: Json | None


class ArmStartRecord(Line):
    """One server start of a compared arm, timed: what the planner's start cost and the dry run read."""

    record: Literal["arm_start"]
    compare_session: str
    config: str
    role: str
    label: str
    startup_s: float
    unit: int | None
    devices: list[str] | None
    host_rss_bytes: int | None
    gpu_memory_gb: float | None
    build_info: Any


class ArmStartRetryRecord(Line):
    """An arm's server failed to start once and was started again (compare/servers.py)."""

    record: Literal["arm_start_retry"]
    compare_session: str
    config: str
    role: str
    label: str
    error: str


class ComparisonBudgetRecord(Line):
    """Holm across the session's comparisons (compare/records.py ``budget``), at session end."""

    record: Literal["comparison_budget"]
    compare_session: str
    method: str
    alphas: dict[str, float] | None
    per_comparison_alpha: dict[str, float]
    comparisons: int
    q_values: list[Json]
    suite_regressed: list[Json]


class ComparisonSuiteRecord(Line):
    """One adjusted comparison's q and verdict after the suite's Holm step (compare/suite.py)."""

    record: Literal["comparison_suite"]
    compare_session: str
    config: str | None
    nodeid: str | None
    scenario: str | None
    metric: str | None
    family: str | None
    q_value: float | None
    suite_verdict: str | None
    regressed_at_suite_level: bool
