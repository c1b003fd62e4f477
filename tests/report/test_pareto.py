"""report/pareto.py: the Pareto front of (throughput, latency) probes, and the figure per arm from a capacity
search's curve (scenario records and comparison blocks)."""

import json

from pytest_llmbench.records.folder import read_folder
from pytest_llmbench.report.pareto import arm_points, front, pareto_plots


def test_the_front_keeps_the_points_nothing_beats_on_both():
    pts = [(1.0, 100.0), (2.0, 150.0), (2.0, 120.0), (1.5, 300.0), (3.0, 900.0), (0.5, 110.0)]
    assert front(pts) == [(1.0, 100.0), (2.0, 120.0), (3.0, 900.0)]
    assert front([]) == []


def _curve(scale):
    return [
        {
            "rate": r,
            "run": 0,
            "request_throughput": r * 0.98,
            "median_e2e_latency_ms": scale * (300 + 200 * r**2),
            "outcome": "pass" if r < 2 else "fail",
        }
        for r in (0.5, 1.0, 1.5, 2.0)
    ]


def test_a_folder_with_capacity_searches_gets_one_figure_per_page(tmp_path):
    records = [
        {"record": "scenario", "config": "smol", "scenario": "capacity", "metrics": {"capacity": {"curve": _curve(1)}}},
        {"record": "scenario", "config": "smol", "scenario": "chat", "metrics": {"output_throughput": 3.0}},
        {
            "record": "comparison_block",
            "config": "smol",
            "scenario": "capacity",
            "role": "candidate",
            "warmup": False,
            "capacity": {"curve": _curve(2)},
        },
        {
            "record": "comparison_block",
            "config": "smol",
            "scenario": "capacity",
            "role": "reference",
            "warmup": True,
            "capacity": {"curve": _curve(1)},
        },
    ]
    (tmp_path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    folder = read_folder(tmp_path)
    arms = arm_points(folder)
    assert sorted(arms) == ["smol · capacity", "smol · capacity · candidate"]  # a warm-up block is not measured
    assert [p[2] for p in arms["smol · capacity"]] == [True, True, True, False]
    (plot,) = pareto_plots(folder)
    assert plot.id == "plot-pareto" and plot.svg.startswith("<svg")


def test_no_capacity_search_no_figure(tmp_path):
    (tmp_path / "results.jsonl").write_text(json.dumps({"record": "scenario", "config": "c", "metrics": {}}) + "\n")
    assert pareto_plots(read_folder(tmp_path)) == []
