"""Results folders → series: the keys, the night order, each point's build and setup, and the comparison
verdicts riding along. The real nights are the campaign's (data/README.md); the edge cases are small
folders written here, each naming what it stands for."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_llmbench.history.series import HistoryError, SeriesKey, build_series, expand, read_nights

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


def test_a_comparison_night_carries_its_verdict_and_candidate_value(tmp_path: Path) -> None:
    comparison = {
        "record": "comparison",
        "config": "c",
        "test_key": "t.py::test[s]",
        "metric": "output_throughput",
        "reference": 10.0,
        "candidate": 9.0,
        "ratio": 0.9,
        "kind": "ratio",
        "verdict": "regressed",
        "higher_is_better": True,
    }
    _folder(tmp_path, "n1", "2026-12-01T00:00:00+00:00", [_server({}, []), _verdict(8.0, "REGRESSED"), comparison])
    [series] = build_series(read_nights([tmp_path / "n1"]))
    [point] = series.points
    assert (point.value, point.status, point.comparison, point.comparison_ratio) == (9.0, "REGRESSED", "regressed", 0.9)
    assert point.build == "unknown"


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
