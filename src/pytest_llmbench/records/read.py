"""Reading results lines by kind, typed, and across schema versions: the reader's half of ``kinds.py``.

:func:`of_kind` is the one way to take the lines of one kind out of a folder's records (``read_folder(…)
.records``, ``iter_records``): ``of_kind(records, "scenario")`` is a ``list[ScenarioRecord]`` to mypy, so a
reader that misspells a field, or reads one the kind does not have, is caught before it runs. The lines are
the dicts as read (no copy, no check): a folder written by an older version of the package may lack a field
added since as ``NotRequired``, which readers read with ``.get``.

:func:`read_line` is what ``records/results.py`` ``iter_records`` (behind ``read_folder`` and
``load_results``) does to every line it reads, by its ``record_version`` (``kinds.VERSION``):

* none: a line written before versions were stamped (the committed experiments' data, users' stores) is
  version 1;
* older than this code's: brought up one version at a time by the kind's upgrade steps (:data:`UPGRADES`,
  the seam for a changed kind; none is needed yet);
* newer (a folder written by a later pytest-llmbench): read as is, with one :class:`NewerRecordWarning` per
  file and kind naming the file and line; older code reading newer data must not crash, and a field it
  reads with ``.get`` and does not find reads as absent.
"""

import warnings
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Literal, overload

from pytest_llmbench.records.kinds import (
    KINDS,
    VERSION,
    ArmStartRecord,
    ArmStartRetryRecord,
    BisectRecord,
    BisectStepRecord,
    ChangePointRecord,
    CheckRecord,
    ComparisonBlockRecord,
    ComparisonBudgetRecord,
    ComparisonPlanRecord,
    ComparisonRecord,
    ComparisonSetEffectRecord,
    ComparisonSuiteRecord,
    ComparisonUnitPlanRecord,
    DecisionsRecord,
    EndOfTestRecord,
    FactsRecord,
    GateBudgetRecord,
    ScenarioRecord,
    ServerRecord,
    SessionErrorRecord,
    SessionRecord,
    SessionStartRecord,
    VerdictRecord,
)

#: (kind, version) → the step that turns a line of that version into one of the next. None yet: the first
#: change to a declared kind that is not a new ``NotRequired`` field adds its step here and bumps its version.
UPGRADES: dict[tuple[str, int], Callable[[dict[str, Any]], dict[str, Any]]] = {}


class NewerRecordWarning(UserWarning):
    """A results line has a schema version newer than this pytest-llmbench knows; it was read as is."""


def version_of(record: Mapping[str, Any]) -> int:
    """A line's schema version: its ``record_version``, 1 where it has none (written before versions)."""
    v = record.get(VERSION)
    return v if isinstance(v, int) and not isinstance(v, bool) and v >= 1 else 1


def read_line(record: dict[str, Any], where: str, warned: set[str] | None = None) -> dict[str, Any]:
    """``record`` as this code reads it (see the module docstring); ``where`` is its ``file:line``, named by
    the warning for a newer line. ``warned`` collects the ``file`` + kind pairs already warned about, so a
    file of thousands of newer lines warns once per kind."""
    kind = record.get("record")
    if not isinstance(kind, str) or (declared := KINDS.get(kind)) is None:
        return record  # a kind of a plugin or an eval: not ours to version
    v = version_of(record)
    if v > declared.version:
        key = f"{where.rpartition(':')[0]}\0{kind}"
        if warned is None or key not in warned:
            if warned is not None:
                warned.add(key)
            warnings.warn(
                f"{where}: a {kind!r} line of record_version {v}, newer than the {declared.version} this "
                "pytest-llmbench reads; read as is (a field it does not know is ignored, one it misses reads as "
                "absent); update pytest-llmbench to read it fully",
                NewerRecordWarning,
                stacklevel=2,
            )
        return record
    while v < declared.version:
        record = {**UPGRADES[kind, v](record), VERSION: v + 1}
        v += 1
    return record


@overload
def of_kind(records: Iterable[Mapping[str, Any]], kind: Literal["session_start"]) -> list[SessionStartRecord]: ...
@overload
def of_kind(records: Iterable[Mapping[str, Any]], kind: Literal["session"]) -> list[SessionRecord]: ...
@overload
def of_kind(records: Iterable[Mapping[str, Any]], kind: Literal["session_error"]) -> list[SessionErrorRecord]: ...
@overload
def of_kind(records: Iterable[Mapping[str, Any]], kind: Literal["server"]) -> list[ServerRecord]: ...
@overload
def of_kind(records: Iterable[Mapping[str, Any]], kind: Literal["facts"]) -> list[FactsRecord]: ...
@overload
def of_kind(records: Iterable[Mapping[str, Any]], kind: Literal["scenario"]) -> list[ScenarioRecord]: ...
@overload
def of_kind(records: Iterable[Mapping[str, Any]], kind: Literal["test"]) -> list[EndOfTestRecord]: ...
@overload
def of_kind(records: Iterable[Mapping[str, Any]], kind: Literal["decisions"]) -> list[DecisionsRecord]: ...
@overload
def of_kind(records: Iterable[Mapping[str, Any]], kind: Literal["check"]) -> list[CheckRecord]: ...
@overload
def of_kind(records: Iterable[Mapping[str, Any]], kind: Literal["verdict"]) -> list[VerdictRecord]: ...
@overload
def of_kind(records: Iterable[Mapping[str, Any]], kind: Literal["gate_budget"]) -> list[GateBudgetRecord]: ...
@overload
def of_kind(records: Iterable[Mapping[str, Any]], kind: Literal["comparison_block"]) -> list[ComparisonBlockRecord]: ...
@overload
def of_kind(
    records: Iterable[Mapping[str, Any]], kind: Literal["comparison_unit_plan"]
) -> list[ComparisonUnitPlanRecord]: ...
@overload
def of_kind(records: Iterable[Mapping[str, Any]], kind: Literal["comparison_plan"]) -> list[ComparisonPlanRecord]: ...
@overload
def of_kind(records: Iterable[Mapping[str, Any]], kind: Literal["comparison"]) -> list[ComparisonRecord]: ...
@overload
def of_kind(
    records: Iterable[Mapping[str, Any]], kind: Literal["comparison_set_effect"]
) -> list[ComparisonSetEffectRecord]: ...
@overload
def of_kind(records: Iterable[Mapping[str, Any]], kind: Literal["arm_start"]) -> list[ArmStartRecord]: ...
@overload
def of_kind(records: Iterable[Mapping[str, Any]], kind: Literal["arm_start_retry"]) -> list[ArmStartRetryRecord]: ...
@overload
def of_kind(
    records: Iterable[Mapping[str, Any]], kind: Literal["comparison_budget"]
) -> list[ComparisonBudgetRecord]: ...
@overload
def of_kind(records: Iterable[Mapping[str, Any]], kind: Literal["comparison_suite"]) -> list[ComparisonSuiteRecord]: ...
@overload
def of_kind(records: Iterable[Mapping[str, Any]], kind: Literal["bisect_step"]) -> list[BisectStepRecord]: ...
@overload
def of_kind(records: Iterable[Mapping[str, Any]], kind: Literal["bisect"]) -> list[BisectRecord]: ...
@overload
def of_kind(records: Iterable[Mapping[str, Any]], kind: Literal["change_point"]) -> list[ChangePointRecord]: ...
@overload
def of_kind(records: Iterable[Mapping[str, Any]], kind: str) -> list[Any]: ...
def of_kind(records: Iterable[Mapping[str, Any]], kind: str) -> list[Any]:
    """The records of one kind, in the order given. A declared kind types as its schema (records/kinds.py);
    any other (an eval's own, a plugin's) as plain dicts."""
    return [r for r in records if r.get("record") == kind]


__all__ = ["UPGRADES", "NewerRecordWarning", "of_kind", "read_line", "version_of"]
