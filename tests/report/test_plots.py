"""The figures' data, checked against what the benches recorded (data/cpu-run-a, a real CPU-suite run)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_llmbench.evals.decisions.metrics import ece
from pytest_llmbench.records.folder import ResultsFolder, read_folder
from pytest_llmbench.report import forest_plot, plots

RUN = Path(__file__).parent / "data" / "cpu-run-a"


def test_reliability_reproduces_the_benchs_calibration() -> None:
    """The "after" curve is the bench's own cross-fit: its ECE equals the calibrated ECE it recorded."""
    folder = read_folder(RUN)
    [(_config, dataset, curves)] = plots.calibration_curves(folder)
    [rec] = [r for r in folder.kind("decisions") if r.get("dataset") == dataset]
    got = {name: ece(arr[:, 0], arr[:, 1]) for name, arr in curves}
    assert got["before"] == pytest.approx(rec["metrics"]["raw"]["all"]["ece"], abs=1e-9)
    assert got["after"] == pytest.approx(rec["metrics"]["calibrated"]["all"]["ece"], abs=1e-9)


def test_no_data_no_figure(tmp_path: Path) -> None:
    empty = ResultsFolder(tmp_path, [{"record": "server", "config": "c"}])
    assert plots.all_plots(empty) == []


def test_history_without_baseline_files_uses_the_verdicts_baseline() -> None:
    folder = read_folder(RUN)
    with_base = {v["config"] for v in folder.kind("verdict") if v.get("baseline") is not None}
    figs = plots.history(folder, None)
    assert {f.id for f in figs} == {f"plot-history-{c}" for c in with_base}
    assert all(f.svg.startswith("<svg") for f in figs)


def test_comparison_forest_draws_each_comparison_with_its_bands(tmp_path: Path) -> None:
    """One bar per comparison record with a ratio; a latency is drawn inverted (worse to the left)."""
    comps = [
        {
            "record": "comparison",
            "config": "c",
            "scenario": "chat-1u",
            "metric": "output_throughput",
            "ratio": 0.97,
            "ci_low": 0.95,
            "ci_high": 0.99,
            "ignore": 0.01,
            "detect": 0.03,
            "verdict": "regressed",
            "higher_is_better": True,
        },
        {
            "record": "comparison",
            "config": "c",
            "scenario": "chat-1u",
            "metric": "median_tpot_ms",
            "ratio": 1.03,
            "ci_low": 1.01,
            "ci_high": 1.05,
            "ignore": 0.02,
            "detect": 0.05,
            "verdict": "inconclusive",
            "higher_is_better": False,
        },
        {
            "record": "comparison",
            "config": "c",
            "metric": "bfcl_passed",
            "difference": 0.0,
            "ci_low": -0.1,
            "ci_high": 0.1,
        },
    ]
    [fig] = forest_plot.comparison_forest(ResultsFolder(tmp_path, comps))
    assert fig.id == "plot-comparisons" and fig.svg.startswith("<svg")
    assert "c · chat-1u · output_throughput" in fig.svg and "median_tpot_ms" in fig.svg
    assert "bfcl_passed" not in fig.svg  # a difference has no ratio to place on this axis
    assert forest_plot.comparison_forest(ResultsFolder(tmp_path, comps[2:])) == []
