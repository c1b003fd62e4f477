"""The baseline store: the folder of files, and what ``--update-baselines`` does to an entry.

Swappable (syrupy's model): the session talks to a store through ``file``, ``path_for``, ``cases``,
``validate`` and ``write``; a team keeping baselines elsewhere passes its own object with these methods to
``GateSession(config, store=...)``.

Update semantics, entry by entry (``mode`` is the ``--update-baselines`` value):

- ``all`` (recording, also what ``--llmbench-record N`` does): the new value is appended to ``history``
  (the last HISTORY_LEN kept), which History learns from. A value the check judged REGRESSED is appended
  like any other: recording is the user's decision, and N recorded runs leave N values;
- ``new``: only entries with no baseline, or still learning (fewer values than their model judges from),
  get the value — how a runner's first runs record themselves (``docs/fleet``: the CI cache keeps them);
- ``accept`` (a job that accepts nightlies automatically): as ``all``, except that a REGRESSED value
  restarts the history (a level change must not widen every later tolerance by mixing two levels) and the
  run fails, saying which values it wrote, so the change is reviewed rather than absorbed;
- always: an entry marked ``refresh: true`` (a published figure, one run) is replaced, and so is a timing
  entry recorded on another machine (``provenance.machine``, gate/machine.py): its history restarts at the
  new value, so History never learns a spread from numbers this machine did not measure;
- a measurement with per-case values writes them to the entry's sidecar (``gate/cases.py``), one without
  removes a sidecar left from before (stale cases would pair with the wrong run).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_llmbench.gate import cases as case_files
from pytest_llmbench.gate.baselines import BaselineFile, BaselineFileError, Key, config_filename, dumps, load
from pytest_llmbench.gate.files import write_atomic
from pytest_llmbench.gate.machine import differences
from pytest_llmbench.gate.noise import noise_from_dict
from pytest_llmbench.gate.types import HISTORY_LEN, BaselineEntry, Direction


@dataclass(frozen=True)
class Measurement:
    """What ``--update-baselines`` writes for one check; plain data so it crosses from xdist workers."""

    config: str
    runner: str | None
    test_key: str
    metric: str
    value: float
    direction: Direction
    noise: dict[str, Any]
    n: int | None
    se: float | None
    provenance: dict[str, Any]
    status: str = "pass"  # the verdict's status (suite level once the session adjusted it)
    cases: dict[str, float] | None = None  # per-case values for the entry's sidecar (paired gates)
    nodeid: str = ""  # the test that measured it (one per server start under --llmbench-record)

    @property
    def key(self) -> tuple[str, str | None, str, str]:
        return (self.config, self.runner, self.test_key, self.metric)


@dataclass(frozen=True)
class Written:
    path: Path
    entries: int
    values: int = 0  # values added (more than entries when --llmbench-record N recorded N starts)
    regressed: tuple[str, ...] = ()  # "test metric" of REGRESSED values written (update=accept)


class BaselineStore:
    """The baselines folder; reads each config's file once per process."""

    def __init__(self, directory: Path) -> None:
        self.dir = Path(directory)
        self._files: dict[str, BaselineFile | BaselineFileError] = {}

    def path_for(self, config: str) -> Path:
        return self.dir / config_filename(config)

    def file(self, config: str) -> BaselineFile:
        """The config's baselines (empty when there is no file); raises BaselineFileError every time."""
        got = self._files.get(config)
        if got is None:
            try:
                got = load(self.path_for(config), config)
            except BaselineFileError as e:
                got = e
            self._files[config] = got
        if isinstance(got, BaselineFileError):
            raise got
        return got

    def cases(self, config: str, runner: str | None, test_key: str, metric: str) -> dict[str, float] | None:
        """The per-case values of one entry (its sidecar), None when it has none; raises CasesFileError."""
        path = case_files.sidecar_path(self.path_for(config), runner, test_key, metric)
        return case_files.read_cases(path, test_key=test_key, metric=metric)

    def validate(self) -> list[Exception]:
        """Read every file in the folder (sidecars included), before any server starts; noise models a
        conftest has yet to define are allowed here (they are checked when used)."""
        errors: list[Exception] = []
        if self.dir.is_dir():
            for path in sorted(self.dir.glob("*.yaml")):
                try:
                    load(path, path.stem, known_noise=False)
                except BaselineFileError as e:
                    errors.append(e)
            for path in sorted(self.dir.glob(f"*{case_files.SUFFIX}/**/*.jsonl")):
                try:
                    case_files.read_cases(path)
                except case_files.CasesFileError as e:
                    errors.append(e)
        return errors

    def files(self) -> list[BaselineFile]:
        out = []
        if self.dir.is_dir():
            for path in sorted(self.dir.glob("*.yaml")):
                try:
                    out.append(load(path, path.stem, known_noise=False))
                except BaselineFileError:
                    continue  # reported at session start
        return out

    def write(self, measurements: list[Measurement], mode: str) -> tuple[list[Written], list[str]]:
        """Merge measurements (in run order; several per entry under --llmbench-record) into each config's
        file, read fresh from disk; atomic. ``mode``: all|new|accept (the module docstring)."""
        by_config: dict[str, list[Measurement]] = {}
        for m in measurements:
            by_config.setdefault(m.config, []).append(m)
        written, errors = [], []
        for config_name in sorted(by_config):
            path = self.path_for(config_name)
            try:
                bf = load(path, config_name, known_noise=False)
            except BaselineFileError as e:
                errors.append(str(e))
                continue
            changed, regressed, keys = 0, [], set()
            for m in by_config[config_name]:
                old = bf.get(m.runner, m.test_key, m.metric)
                if mode == "new" and old is not None and learned(old) and not machine_changed(old, m):
                    continue
                try:  # the sidecar first: a corrupt one stops this entry, not the file
                    case_files.save(path, m.runner, m.test_key, m.metric, m.cases)
                except case_files.CasesFileError as e:
                    errors.append(str(e))
                    continue
                bf.put(m.runner, m.test_key, m.metric, updated(old, m, mode))
                changed += 1
                keys.add((m.runner, m.test_key, m.metric))
                if m.status == "REGRESSED" and mode == "accept":
                    regressed.append(f"{m.test_key} {m.metric}")
            if changed:
                write_atomic(path, dumps(bf))
                written.append(Written(path, len(keys), changed, tuple(regressed)))
            self._files.pop(config_name, None)
        return written, errors


def learned(entry: BaselineEntry) -> bool:
    """Whether the entry's model judges from its history yet (History: enough starts recorded)."""
    try:
        return noise_from_dict(entry.noise).learned(entry.accepted)
    except ValueError:  # a model of the user's that this process never saw defined
        return True


def machine_changed(old: BaselineEntry, m: Measurement) -> bool:
    """A timing value from another machine than the entry's (or for an entry that records none)."""
    before, now = old.provenance.get("machine"), m.provenance.get("machine")
    if not before and not now:
        return False
    return differences(before, now or {}) is not None


def updated(old: BaselineEntry | None, m: Measurement, mode: str = "all") -> BaselineEntry:
    """The entry after accepting ``m``: see the module docstring for when the history restarts."""
    restart = (
        old is None
        or bool(old.provenance.get("refresh"))
        or machine_changed(old, m)
        or (mode == "accept" and m.status == "REGRESSED")
    )
    kept = () if restart or old is None else old.accepted
    history = (*kept, m.value)[-HISTORY_LEN:]
    try:
        spread = noise_from_dict(m.noise).stored_spread(history)
    except ValueError:  # a model of the user's that this process never saw defined: the spread is informative
        spread = None
    return BaselineEntry(
        value=m.value,
        direction=m.direction,
        noise=m.noise,
        n=m.n,
        se=m.se,
        spread=spread,
        history=history,
        provenance=m.provenance,
    )


__all__ = ["BaselineStore", "Key", "Measurement", "Written", "updated"]
