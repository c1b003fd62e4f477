"""Many results folders (one per night) → one series per (runner profile, config, test, metric, kind).

Two kinds of series. ``value``: a night's value of a metric is what its gate judged: the ``observed`` of its
verdict record (stored baselines), or the ``candidate`` of its comparison record (an in-session comparison,
whose verdict and ratio ride along to be drawn over the trend). ``ratio``: on a night that compared tonight's
build with a pinned reference in one session, the comparison's ratio candidate/reference with its SE, the
night's own noise: what the two arms shared that night (the host, its load, the VM's level) cancels, so this
series is the quieter one (docs/HISTORY.md). Each point carries the build it measured, from the provenance
the session wrote, so a change point names the last good and first bad build a bisect would take; a ratio
point also carries its reference's build, and a re-pinned reference starts a new segment.
"""

from __future__ import annotations

import glob
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

from pytest_llmbench.errors import LlmbenchError
from pytest_llmbench.records.bench_serving import is_bench_serving
from pytest_llmbench.records.folder import ResultsFolder, read_folder
from pytest_llmbench.records.kinds import CheckRecord, VerdictRecord
from pytest_llmbench.records.read import of_kind

#: server_info / resources.json keys that name the build, most specific first (a distinguishing id or
#: digest where the engine adapter records one; llama.cpp's own build_info otherwise)
BUILD_KEYS = ("build_id", "build_digest", "digest", "image_digest", "version", "build_commit", "build_info")


class HistoryError(LlmbenchError):
    """The history inputs cannot be read; the message names the path or pattern."""


#: the series kinds: a night's own value, or its in-session ratio to a pinned reference build
VALUE, RATIO = "value", "ratio"


@dataclass(frozen=True, order=True)
class SeriesKey:
    runner: str
    config: str
    test: str
    metric: str
    kind: str = VALUE

    def label(self) -> str:
        metric = f"{self.metric} / reference" if self.kind == RATIO else self.metric
        return f"{self.config} · {self.test} · {metric} ({self.runner})"


@dataclass(frozen=True)
class Point:
    """One night's value of one series and where it came from."""

    night: str  # the results folder's name
    time: str  # ISO time the session started (its first record)
    value: float
    build: str  # the build identity of the config's server that night
    setup: str  # its server arguments, space-joined: a changed flag is a change a bisect cannot see
    status: str | None = None  # the stored gate's verdict that night (pass, REGRESSED, …)
    comparison: str | None = None  # the in-session comparison's verdict (regressed, equivalent, …)
    comparison_ratio: float | None = None
    reference: str | None = None  # a ratio point's reference build: a new one is a new segment
    se: float | None = None  # a ratio point's standard error on the log scale (the comparison's)


@dataclass
class Series:
    key: SeriesKey
    direction: str  # "higher" or "lower" is better
    points: list[Point] = field(default_factory=list)

    @property
    def values(self) -> list[float]:
        return [p.value for p in self.points]


@dataclass(frozen=True)
class Night:
    name: str
    time: str
    folder: ResultsFolder


def expand(patterns: Sequence[str | Path]) -> list[Path]:
    """Folders named or matched by each pattern (shell globs, for a CI job's artifact folders)."""
    out: dict[Path, None] = {}
    for pattern in patterns:
        text = str(pattern)
        matched = sorted(glob.glob(text)) if glob.has_magic(text) else [text]
        if not matched:
            raise HistoryError(f"{text}: no results folder matches")
        for m in matched:
            if Path(m).is_dir() or is_bench_serving(Path(m)):  # a bench_serving JSONL file is one night
                out.setdefault(Path(m), None)
            elif not glob.has_magic(text):
                raise HistoryError(f"{m}: not a folder (expected a results folder with results.jsonl)")
    return list(out)


def read_nights(folders: Iterable[Path]) -> list[Night]:
    """Each folder read once (records/folder.py), ordered by when its session ran (then by name)."""
    nights = []
    for path in folders:
        folder = read_folder(path)
        times = [str(r["time"]) for r in folder.records if r.get("time")]
        nights.append(Night(path.name, min(times) if times else "", folder))
    return sorted(nights, key=lambda n: (n.time, n.name))


def _runner(folder: ResultsFolder) -> str:
    for r in folder.records:
        origin = r.get("origin")
        if isinstance(origin, dict) and origin.get("profile"):
            return str(origin["profile"])
    for v in of_kind(folder.records, "verdict") + of_kind(folder.records, "check"):
        if v.get("runner"):
            return str(v["runner"])
    return "unknown"


def build_of(info: dict[str, Any]) -> str | None:
    for key in BUILD_KEYS:
        if info.get(key):
            return str(info[key])
    return None


def _launched(server: Mapping[str, Any]) -> str | None:
    """The launcher's identity of what ran (the "server" record's ``build``: package version, image digest
    or the binary's sha256), which tells two builds apart where llama.cpp's build_info says b0-unknown."""
    launched = server.get("build")
    if not isinstance(launched, dict) or not launched.get("build"):
        return None
    digest = launched.get("sha256")
    return f"{launched['build']} ({str(digest)[:12]})" if digest else str(launched["build"])


def _provenance(folder: ResultsFolder, config: str) -> tuple[str, str]:
    server = folder.server(config)
    info = server.get("server_info") or {}
    build = (
        build_of({k: v for k, v in info.items() if k != "build_info"})
        or _launched(server)
        or build_of(info)
        or build_of(folder.facts(config))
        or "unknown"
    )
    return build, " ".join(str(a) for a in server.get("server_args") or [])


def _log_se(r: Mapping[str, Any]) -> float | None:
    """A comparison's SE of its log ratio: its ``se``, else from its 95% interval (t with its df, else z)."""
    se = _number(r.get("se"))
    if se is not None and se > 0:
        return se
    low, high, df = _number(r.get("ci_low")), _number(r.get("ci_high")), _number(r.get("df"))
    if low is None or high is None or low <= 0 or high <= low:
        return None
    quantile = float(stats.t.ppf(0.975, df)) if df and df > 0 else float(stats.norm.ppf(0.975))
    return (math.log(high) - math.log(low)) / (2.0 * quantile)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


#: the gate's word for a value it could not judge (the host was busy): it measures the neighbours, not the build
NOT_COMPARABLE = "not comparable"


def _mean_of_starts(night: Night, records: Sequence[Mapping[str, Any]], build: str, setup: str) -> Point:
    """One night's point from its server starts of one test (``--llmbench-record N`` starts a config N times:
    design (b) of docs/HISTORY.md): the geometric mean, with SD/√k as its SE; one start is its own value.
    Starts the gate called not comparable are left out while any other start is left."""
    judged = [r for r in records if r.get("status") != NOT_COMPARABLE] or records
    values = [float(r["observed"]) for r in judged]
    status = judged[-1].get("status")
    if len(values) == 1 or any(v <= 0 for v in values):
        return Point(night.name, night.time, sum(values) / len(values), build, setup, status=status)
    logs = np.log(values)
    se = float(logs.std(ddof=1) / math.sqrt(len(logs)))
    return Point(night.name, night.time, float(math.exp(logs.mean())), build, setup, status=status, se=se)


def night_points(night: Night) -> dict[SeriesKey, tuple[str, Point]]:
    """This night's point of every series it measured, with the direction that is better."""
    folder, runner = night.folder, _runner(night.folder)
    out: dict[SeriesKey, tuple[str, Point]] = {}
    # the session-end verdicts; a crashed session left only its as-it-happens checks
    gated = of_kind(folder.records, "verdict") or of_kind(folder.records, "check")
    starts: dict[SeriesKey, list[VerdictRecord | CheckRecord]] = {}
    for r in gated:
        if _number(r.get("observed")) is None or not r.get("metric"):
            continue
        key = SeriesKey(
            str(r.get("runner") or runner), str(r.get("config") or ""), str(r.get("test_key")), str(r["metric"])
        )
        starts.setdefault(key, []).append(r)
    for key, records in starts.items():
        build, setup = _provenance(folder, key.config)
        out[key] = (str(records[-1].get("direction") or "higher"), _mean_of_starts(night, records, build, setup))
    for c in of_kind(folder.records, "comparison"):
        value = _number(c.get("candidate"))
        if value is None or not c.get("metric"):
            continue
        config = str(c.get("config") or "")
        key = SeriesKey(runner, config, str(c.get("test_key")), str(c["metric"]))
        build, setup = _provenance(folder, config)
        kind = str(c.get("kind") or "ratio")
        old = out.get(key)
        point = Point(
            night.name,
            night.time,
            value,
            build,
            setup,
            status=old[1].status if old else None,
            comparison=str(c.get("verdict")),
            comparison_ratio=_number(c.get(kind)) if kind == "ratio" else None,
        )
        direction = "higher" if c.get("higher_is_better", True) else "lower"
        out[key] = (direction, point)
        ratio = _number(c.get("ratio"))
        if kind == "ratio" and ratio is not None and ratio > 0:
            reference, _ = _provenance(folder, f"{config}.reference")
            if reference == "unknown":
                reference = str(c.get("reference_arm") or "unknown")
            out[replace(key, kind=RATIO)] = (
                direction,
                replace(point, value=ratio, reference=reference, se=_log_se(c)),
            )
    return out


def build_series(nights: Sequence[Night]) -> list[Series]:
    """Every series any night measured, points in night order, sorted by key."""
    series: dict[SeriesKey, Series] = {}
    for night in nights:
        for key, (direction, point) in night_points(night).items():
            series.setdefault(key, Series(key, direction)).points.append(point)
    return [series[k] for k in sorted(series)]
