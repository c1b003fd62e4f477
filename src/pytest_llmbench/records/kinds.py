"""Every kind of results line, declared once: its fields and their types (a ``TypedDict``), and its schema
version (:data:`KINDS`).

A results line is a JSON object whose ``"record"`` names its kind. Each kind the package writes is declared
here, with who writes it and why it exists; mypy checks the writers that build one and the readers that take
them through :func:`~pytest_llmbench.records.read.of_kind`. ``Required`` fields are the ones every writer
sets; ``NotRequired`` ones are set by some writers only (a compared arm's server has a ``role``, a comparison
its ``ratio`` or its ``difference``). A record may carry fields beyond these (an eval's ``extra``, the
pilot's spreads): a schema says what a line has at least.

**The version.** Each kind has a schema version, an int from 1, and the writer stamps it on every line as
``"record_version"`` (:data:`VERSION`). It goes up when a field changes meaning, type, or stops being
written, never for a field added as ``NotRequired``; a reader brings an older line up with the kind's
upgrade step (``records/read.py``). A line without one (written before versions were stamped) is version 1.

**Undeclared kinds pass through.** ``bench.emit`` and the ``pytest_llmbench_record`` hook are documented
seams: a conftest's or a plugin's eval writes ``{"record": "my_eval", …}`` (docs/ARCHITECTURE.md, "a new
eval"; tests/test_hookspec.py), and so do the benches' eval kinds (``accept_length``, ``bfcl``, …, built by
``evals/record.py``'s ``write_eval``). Those kinds are theirs: such a line is written as given, with no
version and no check, and read back as any other line. A kind declared here is checked on every write: a
required field missing is a :class:`RecordSchemaWarning` naming the kind and the field, and the line is
written all the same (a measurement is never lost to a bookkeeping bug); the project's own tests turn the
warning into an error (tests/conftest.py), so a bug in our own writer fails its test.

Written without ``from __future__ import annotations``: ``TypedDict`` reads ``Required``/``NotRequired``
from the evaluated annotations (Python 3.11 cannot see them in a string), and :data:`KINDS` checks lines
with ``__required_keys__``. The schemas of a comparison session are in ``compare_kinds.py`` and the fields
common to every line in ``base.py``, re-exported here; the three import nothing else of the package
(tests/test_import_graph.py). Reading by kind: ``records/read.py`` (:func:`~.read.of_kind`).
"""

import warnings
from collections.abc import Mapping
from typing import Any, Literal, NamedTuple, NotRequired, TypedDict

from pytest_llmbench.records.base import VERSION, BenchLine, Json, Line
from pytest_llmbench.records.compare_kinds import (
    ArmStartRecord,
    ArmStartRetryRecord,
    ComparisonBlockRecord,
    ComparisonBudgetRecord,
    ComparisonPlanRecord,
    ComparisonRecord,
    ComparisonSetEffectRecord,
    ComparisonSuiteRecord,
    ComparisonUnitPlanRecord,
)


class RecordSchemaWarning(UserWarning):
    """A record of a declared kind lacks a required field (a bug in the code that built it)."""


# --- a session and its servers --------------------------------------------------------------------------


class SessionStartRecord(Line):
    """The first test that starts a server writes it (report/session.py), so a session whose every server
    failed still has a record of its start."""

    record: Literal["session_start"]
    pid: int
    argv: list[str]
    time: str


class SessionRecord(Line):
    """The session's end (report/session.py): pytest's outcome and the one verdict the headline says."""

    record: Literal["session"]
    pytest_exit_status: int
    tests: dict[str, int]  # passed, failed
    failed: list[str]
    problems: list[str]
    signals: list[str]
    verdict: str
    exit_status: int
    headline: str


class SessionErrorRecord(Line):
    """Something failed outside any test (the baselines' write in gate/session.py, the report in
    report/session.py); the session verdict counts it."""

    record: Literal["session_error"]
    source: str
    message: str


class ServerRecord(Line):
    """A server started (records/results.py ``server_line``): what it runs and how, secrets masked; a
    compared arm's server (compare/servers.py) adds its ``role``."""

    record: Literal["server"]
    config: str
    engine: str
    launcher: str
    model: str
    server_args: list[str]
    env: dict[str, str]
    startup_s: float
    server_info: Json
    build: Json
    gpu_ids: list[str]
    pids: list[int]
    time: str
    role: NotRequired[str]  # "reference" / "candidate" for a compared arm


class FactsRecord(Line):
    """What a server used (fixtures.py, ``facts_line``), for folders without its resources.json."""

    record: Literal["facts"]
    config: str
    facts: Json
    time: str


# --- what a test measured --------------------------------------------------------------------------------


class ScenarioRecord(BenchLine):
    """One scenario's run (``scenario_line``, from ``bench.run``): parameters, metrics under sglang
    bench_serving's names, every request's timings; what the tables, plots and ``load_results`` read."""

    record: Literal["scenario"]
    scenario: str
    scenario_params: Json
    engine: str | None
    model: str | None
    server_args: list[str]
    server_info: Json
    backend: str | None
    dataset_name: str
    max_concurrency: int
    random_input_len: int | None
    random_output_len: int | None
    num_prompts: int
    notes: list[str]
    errors: list[str]
    metrics: Json
    time: str
    host_load: Json | None
    telemetry: Json | None
    requests: list[Json]
    source: NotRequired[str]  # file:line of a bench_serving line read as a scenario (bench_serving.py)


class EndOfTestRecord(BenchLine):
    """A test's end (fixtures.py, ``end_of_test_line``): every value it recorded, long lists left out."""

    record: Literal["test"]
    time: str
    measurements: Json


class DecisionsRecord(BenchLine):
    """One decision eval's run (evals/decisions/results.py ``save_run``): its answers file and metrics; an
    eval adds its own fields."""

    record: Literal["decisions"]
    dataset: str
    answers: str
    metrics: Json


# --- the stored-baseline gate (gate/session.py) ----------------------------------------------------------


class _Judged(TypedDict):
    """A ``gate.types.Verdict`` as ``as_dict`` writes it (with the node id; config and test key apart)."""

    nodeid: str
    metric: str
    observed: float
    baseline: float | None
    tolerance: float | None
    rule: str
    status: str
    direction: str
    noise: str
    runner: str | None
    p_value: float | None
    q_value: float | None
    paired: bool
    family: str
    recorded: bool
    delta: float | None
    delta_pct: float | None


class CheckRecord(BenchLine, _Judged):
    """One ``bench.check`` as it was judged (written at once, so a crash keeps it); q comes at the end."""

    record: Literal["check"]
    message: str


class VerdictRecord(Line, _Judged):
    """A check's final verdict, after the session's Holm step: what the gate's headline reads."""

    record: Literal["verdict"]
    config: str
    test_key: str


class GateBudgetRecord(Line):
    """The gate's error budget at session end: Holm's alphas per family, what was counted and judged."""

    record: Literal["gate_budget"]
    method: str
    alphas: dict[str, float]
    counted: dict[str, int]
    judged: dict[str, int]
    compared: NotRequired[dict[str, int]]  # a comparison session's comparisons counted in the shared budget


# --- above one session: bisect (bisect/record.py) and history (history/analysis.py) ---------------------


class BisectStepRecord(Line):
    """One bisect step as it finished (an interrupted bisect keeps them; ``--resume`` replays them)."""

    record: Literal["bisect_step"]
    step: int
    kind: str
    attempt: int
    reference: str
    candidate: str
    reference_index: int
    candidate_index: int
    outcome: str
    units: int | None
    z: float | None
    session_outcome: str | None
    skipped: str | None
    reason: str | None
    metric: NotRequired[str | None]  # the shown comparison's fields, flat (bisect/record.py SHOWN)
    test_key: NotRequired[str | None]
    verdict: NotRequired[str | None]
    ratio: NotRequired[float | None]
    difference: NotRequired[float | None]
    ci_low: NotRequired[float | None]
    ci_high: NotRequired[float | None]
    se: NotRequired[float | None]
    higher_is_better: NotRequired[bool | None]
    comparisons: list[Json]
    gpu_s: float
    session_s: float | None
    build_s: float | None
    results_dir: str | None
    replayed_from: str | None


class BisectRecord(Line):
    """A bisect's result: the first bad build (or why none), every build and step, what a resume needs."""

    record: Literal["bisect"]
    status: str
    message: str
    good: str
    bad: str
    last_good: str
    first_bad: str
    culprit: str | None
    to_go_on: list[str]
    builds: list[Json]
    steps: list[Json]
    comparisons: int
    gpu_s: float
    budget_s: float | None
    metric: str
    pytest_args: list[str]
    command: str
    time: str


class ChangePointRecord(TypedDict):
    """A change point of a history series (history/analysis.py ``Finding.as_record``): the nights around it,
    the step's size and build range. Written to the history's findings file, not results.jsonl, so it has
    none of a results line's common fields."""

    record: Literal["change_point"]
    runner: str | None
    config: str
    test_key: str
    metric: str
    kind: str
    reference: Any
    direction: str
    worse: bool
    first_night: str
    last_night_before: str
    before: float
    after: float
    ratio: float | None
    ci_low: float | None
    ci_high: float | None
    p_value: float | None
    good_build: str | None
    bad_build: str | None
    setup_before: str
    setup_after: str
    setup_change: str
    nights_after: int
    family: str
    new: NotRequired[bool]  # cli/history.py: not seen in the last run's findings


# --- the registry ----------------------------------------------------------------------------------------


class Kind(NamedTuple):
    """A declared kind: its schema version and its ``TypedDict``."""

    version: int
    schema: type


#: Every kind the package writes: name → (version, schema). A new kind is declared here (a test scans the
#: source for kinds written and not declared); a changed one gets the next version and an upgrade step.
KINDS: Mapping[str, Kind] = {
    "session_start": Kind(1, SessionStartRecord),
    "session": Kind(1, SessionRecord),
    "session_error": Kind(1, SessionErrorRecord),
    "server": Kind(1, ServerRecord),
    "facts": Kind(1, FactsRecord),
    "scenario": Kind(1, ScenarioRecord),
    "test": Kind(1, EndOfTestRecord),
    "decisions": Kind(1, DecisionsRecord),
    "check": Kind(1, CheckRecord),
    "verdict": Kind(1, VerdictRecord),
    "gate_budget": Kind(1, GateBudgetRecord),
    "comparison_block": Kind(1, ComparisonBlockRecord),
    "comparison_unit_plan": Kind(1, ComparisonUnitPlanRecord),
    "comparison_plan": Kind(1, ComparisonPlanRecord),
    "comparison": Kind(1, ComparisonRecord),
    "comparison_set_effect": Kind(1, ComparisonSetEffectRecord),
    "arm_start": Kind(1, ArmStartRecord),
    "arm_start_retry": Kind(1, ArmStartRetryRecord),
    "comparison_budget": Kind(1, ComparisonBudgetRecord),
    "comparison_suite": Kind(1, ComparisonSuiteRecord),
    "bisect_step": Kind(1, BisectStepRecord),
    "bisect": Kind(1, BisectRecord),
    "change_point": Kind(1, ChangePointRecord),
}


def stamped(record: Mapping[str, Any]) -> dict[str, Any]:
    """``record`` as the writer puts it on disk: a declared kind checked against its schema and stamped with
    its version; any other kind (a plugin's, an eval's own) as given.

    Warns (:class:`RecordSchemaWarning`) naming the kind and the required fields missing, and stamps it
    all the same: what was measured is written."""
    kind = record.get("record")
    declared = KINDS.get(kind) if isinstance(kind, str) else None
    if declared is None:
        return dict(record)
    missing = sorted(k for k in declared.schema.__required_keys__ if k not in record)  # type: ignore[attr-defined]
    if missing:
        warnings.warn(
            RecordSchemaWarning(
                f"a {kind!r} record lacks its required field {missing[0]!r}"
                + (f" (and {', '.join(map(repr, missing[1:]))})" if len(missing) > 1 else "")
                + f": see {declared.schema.__name__} in pytest_llmbench/records/kinds.py"
            ),
            stacklevel=3,
        )
    return {**record, VERSION: declared.version}


__all__ = [
    "KINDS",
    "VERSION",
    "ArmStartRecord",
    "ArmStartRetryRecord",
    "BenchLine",
    "BisectRecord",
    "BisectStepRecord",
    "ChangePointRecord",
    "CheckRecord",
    "ComparisonBlockRecord",
    "ComparisonBudgetRecord",
    "ComparisonPlanRecord",
    "ComparisonRecord",
    "ComparisonSetEffectRecord",
    "ComparisonSuiteRecord",
    "ComparisonUnitPlanRecord",
    "DecisionsRecord",
    "EndOfTestRecord",
    "FactsRecord",
    "GateBudgetRecord",
    "Json",
    "Kind",
    "Line",
    "RecordSchemaWarning",
    "ScenarioRecord",
    "ServerRecord",
    "SessionErrorRecord",
    "SessionRecord",
    "SessionStartRecord",
    "VerdictRecord",
    "stamped",
]
