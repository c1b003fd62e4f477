"""Results folders → series: the keys, the night order, each point's build and setup, and the comparison
verdicts riding along. The real nights are the campaign's (data/README.md); the edge cases are small
folders written here, each naming what it stands for."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from pytest_llmbench.history.series import RATIO, VALUE, HistoryError, SeriesKey, build_series, expand, read_nights

DATA = Path(__file__).parent / "data"


def _folder(root: Path, name: str, time: str, records: list[dict]) -> Path:
    path = root / name
    path.mkdir()
    lines = [json.dumps({"time": time, **r}) for r in records]
    (path / "results.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _server(build: dict, args: list[str]) -> dict:
    return {"record": "server", "config": "c", "server_info": build, "server_args": args}


def _verdict(value: float, status: str = "pass", runner: str | None = "cpu-x") -> dict:
    return {
        "record": "verdict",
        "config": "c",
        "test_key": "t.py::test[s]",
        "metric": "output_throughput",
        "observed": value,
        "direction": "higher",
        "status": status,
        "runner": runner,
    }


def test_nights_are_ordered_by_when_they_ran_not_by_name(tmp_path: Path) -> None:
    _folder(tmp_path, "b", "2026-12-01T00:00:00+00:00", [_server({"build_info": "b1"}, []), _verdict(10.0)])
    _folder(tmp_path, "a", "2026-12-02T00:00:00+00:00", [_server({"build_info": "b2"}, []), _verdict(9.0)])
    nights = read_nights(expand([str(tmp_path / "*")]))
    assert [n.name for n in nights] == ["b", "a"]
    [series] = build_series(nights)
    assert series.key == SeriesKey("cpu-x", "c", "t.py::test[s]", "output_throughput")
    assert series.values == [10.0, 9.0] and [p.build for p in series.points] == ["b1", "b2"]


def test_a_distinguishing_build_id_wins_over_build_info(tmp_path: Path) -> None:
    info = {"build_info": "b0-unknown", "build_id": "sha256:abc"}
    _folder(tmp_path, "n1", "2026-12-01T00:00:00+00:00", [_server(info, ["-t", "1"]), _verdict(5.0)])
    [series] = build_series(read_nights([tmp_path / "n1"]))
    assert series.points[0].build == "sha256:abc" and series.points[0].setup == "-t 1"


def _comparison(ratio: float = 0.9, **extra: object) -> dict:
    return {
        "record": "comparison",
        "config": "c",
        "test_key": "t.py::test[s]",
        "metric": "output_throughput",
        "reference": 10.0,
        "candidate": 10.0 * ratio,
        "ratio": ratio,
        "kind": "ratio",
        "verdict": "regressed",
        "higher_is_better": True,
        **extra,
    }


def _arm(role: str, build: str, args: list[str]) -> dict:
    """A comparison's server record as compare/session.py writes it (the reference in ``<config>.reference``)."""
    config = "c.reference" if role == "reference" else "c"
    launched = {"binary": f"/builds/{build}", "build": build, "sha256": f"{build}-digest"}
    return {"record": "server", "config": config, "role": role, "build": launched, "server_args": args}


def test_a_comparison_night_carries_its_verdict_and_candidate_value(tmp_path: Path) -> None:
    records = [_server({}, []), _verdict(8.0, "REGRESSED"), _comparison(se=0.01)]
    _folder(tmp_path, "n1", "2026-12-01T00:00:00+00:00", records)
    by_kind = {s.key.kind: s for s in build_series(read_nights([tmp_path / "n1"]))}
    value, ratio = by_kind.pop(VALUE), by_kind.pop(RATIO)
    assert not by_kind
    [point] = value.points
    assert (point.value, point.status, point.comparison, point.comparison_ratio) == (9.0, "REGRESSED", "regressed", 0.9)
    assert point.build == "unknown" and point.se is None
    [night] = ratio.points
    assert (night.value, night.se, night.comparison) == (0.9, 0.01, "regressed")
    assert ratio.key.label().startswith("c · t.py::test[s] · output_throughput / reference")


def test_a_ratio_point_names_both_builds_and_takes_its_se_from_the_interval_when_unsaid(tmp_path: Path) -> None:
    """The reference's build comes from its own server record; an SE from the 95% t interval with its df."""
    records = [
        _arm("reference", "pinned-1", ["-t", "2"]),
        _arm("candidate", "tonight", ["-t", "2", "--top-k", "0"]),
        _comparison(0.95, ci_low=0.95 / 1.05, ci_high=0.95 * 1.05, df=8.0),
    ]
    _folder(tmp_path, "n1", "2026-12-01T00:00:00+00:00", records)
    [ratio] = [s for s in build_series(read_nights([tmp_path / "n1"])) if s.key.kind == RATIO]
    [night] = ratio.points
    assert night.reference == "pinned-1 (pinned-1-dig)" and night.build == "tonight (tonight-dige)"
    assert night.setup == "-t 2 --top-k 0"
    assert night.se == pytest.approx(math.log(1.05) / 2.306, rel=1e-3)  # t(0.975, 8) = 2.306


def test_a_metric_without_a_runner_takes_the_sessions_profile(tmp_path: Path) -> None:
    records = [{"record": "x", "origin": {"profile": "gpu-h200"}}, _verdict(1.0, runner=None)]
    _folder(tmp_path, "n1", "2026-12-01T00:00:00+00:00", records)
    [series] = build_series(read_nights([tmp_path / "n1"]))
    assert series.key.runner == "gpu-h200"


def test_a_pattern_that_matches_nothing_is_named(tmp_path: Path) -> None:
    with pytest.raises(HistoryError, match=r"nights-\*: no results folder matches"):
        expand([str(tmp_path / "nights-*")])
    (tmp_path / "file").write_text("")
    with pytest.raises(HistoryError, match="file: not a folder"):
        expand([tmp_path / "file"])


def test_the_campaign_nights_make_one_series_per_scenario_metric() -> None:
    nights = read_nights(expand([str(DATA / "night-*")]))
    assert len(nights) >= 30
    assert [n.name for n in nights] == sorted(n.name for n in nights)  # run order = numbering
    series = build_series(nights)
    keys = {(s.key.test.split("::")[-1], s.key.metric) for s in series}
    assert ("test_serving[chat-1u]", "output_throughput") in keys
    for s in series:
        assert len(s.points) == len(nights), s.key
        slow = [p.night for p in s.points if "-t 1 " in p.setup + " "]
        assert slow == [f"night-{n:02d}" for n in range(11, 21)], s.key


def test_a_night_of_k_starts_is_their_geometric_mean_with_its_se(tmp_path: Path) -> None:
    """Design (b): ``--llmbench-record 3`` judges one test per start under one key; the night's point is their
    geometric mean with SD/√k, and a start the gate called not comparable (a busy host) is left out."""
    records = [_server({}, []), _verdict(90.0), _verdict(100.0), _verdict(30.0, "not comparable"), _verdict(110.0)]
    _folder(tmp_path, "n1", "2026-12-01T00:00:00+00:00", records)
    [series] = build_series(read_nights([tmp_path / "n1"]))
    [point] = series.points
    logs = [math.log(v) for v in (90.0, 100.0, 110.0)]
    mean = sum(logs) / 3
    sd = math.sqrt(sum((x - mean) ** 2 for x in logs) / 2)
    assert point.value == pytest.approx(math.exp(mean)) and point.se == pytest.approx(sd / math.sqrt(3))
    assert point.status == "pass"
