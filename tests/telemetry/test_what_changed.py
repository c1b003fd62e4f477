"""The "what changed" ranking from comparison_block records (telemetry/what_changed.py), its terminal lines
(compare/table.py) and its report tables and timelines (report/what_changed.py, report/timeline_plot.py)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from pytest_llmbench.compare.table import what_changed_lines
from pytest_llmbench.records.folder import read_folder
from pytest_llmbench.report import summary
from pytest_llmbench.report.what_changed import busy_host_table, tables, what_changed_tables
from pytest_llmbench.telemetry import what_changed as W

SESSION = "s1"
NODE = "test_bench.py::test_serving[smol-nospec]"


def block(role: str, rnd: int, *, hit: float, prompt_total: float, running: float, tpot: float, **extra) -> dict:
    """A comparison_block as compare/session.py writes it, with a /metrics summary and two samples."""
    return {
        "record": "comparison_block",
        "compare_session": SESSION,
        "config": "smol-nospec",
        "nodeid": NODE,
        "scenario": "gsp",
        "round": rnd,
        "role": role,
        "warmup": extra.pop("warmup", False),
        "wall_s": 2.0,
        "metrics": {"median_ttft_ms": 10.0, "prefix_cache_hit_rate": hit},
        "host_load": extra.pop("host_load", None),
        "telemetry": {
            "interval_s": 0.5,
            "errors": 0,
            "summary": {
                "running_requests": running,
                "running_requests_max": 1.0,
                "prompt_tokens": prompt_total / 2,
                "prompt_tokens_total": prompt_total,
                "generated_tokens": 100.0 / tpot,
            },
            "samples": [
                {"t": 0.0, "running_requests": 0.0},
                {"t": 0.5, "running_requests": running, "prompt_tokens": prompt_total, "generated_tokens": 50.0},
                {"t": 1.0, "running_requests": running, "prompt_tokens": prompt_total / 2, "generated_tokens": 60.0},
            ],
        },
    }


def cache_off_blocks() -> list[dict]:
    """Reference reuses the prefix (hit rate ~0.8), the candidate never does (exactly 0); prompt tokens
    processed rise 3×; running requests do not move beyond noise."""
    rng = np.random.default_rng(3)
    out = [block("reference", -1, hit=0.5, prompt_total=1, running=5, tpot=1, warmup=True)]  # left out
    for r in range(6):
        for role in ("reference", "candidate") if r % 2 == 0 else ("candidate", "reference"):
            ref = role == "reference"
            out.append(
                block(
                    role,
                    r,
                    hit=0.8 + 0.01 * rng.standard_normal() if ref else 0.0,
                    prompt_total=1000.0 if ref else 3000.0,
                    running=1.0 + 0.05 * rng.standard_normal(),
                    tpot=6.0 + 0.3 * rng.standard_normal(),
                )
            )
    return out


def test_a_quantity_at_exactly_zero_in_one_arm_ranks_first_and_noise_ranks_last():
    changes = W.rank(cache_off_blocks())
    names = [c.quantity for c in changes]
    assert names[0] == "prefix_cache_hit_rate", names
    assert names.index("prompt_tokens_total") < names.index("running_requests")
    first = changes[0]
    assert first.candidate == 0.0 and first.reference == pytest.approx(0.8, abs=0.02)
    assert (first.n_reference, first.n_candidate) == (6, 6)  # the warm-up block is not an arm's value
    assert "running_requests_max" not in names  # a window maximum repeats its mean's row
    assert abs(changes[-1].standardized) < 3  # a quantity that only wobbles


def test_the_interval_is_welchs_and_the_standardized_difference_uses_the_pooled_sd():
    ref, cand = [1.0, 1.2, 0.9, 1.1], [2.0, 2.4, 1.8, 2.5, 2.1]
    ch = W.change("q", ref, cand)
    ci = stats.ttest_ind(cand, ref, equal_var=False).confidence_interval(0.95)
    assert (ch.low, ch.high) == pytest.approx((ci.low, ci.high))
    pooled = math.sqrt((3 * np.var(ref, ddof=1) + 4 * np.var(cand, ddof=1)) / 7)
    assert ch.standardized == pytest.approx((np.mean(cand) - np.mean(ref)) / pooled)


def test_constant_arms_are_floored_at_one_percent_of_the_level_not_infinite():
    assert W.change("hits", [0.8] * 4, [0.0] * 4).standardized == pytest.approx(-200.0)
    tripled = W.change("tokens", [1000.0] * 4, [3000.0] * 4)
    assert tripled.standardized == pytest.approx(100.0) and tripled.low == tripled.high == 2000.0
    assert W.change("idle", [0.0] * 3, [0.0] * 3).standardized == 0.0


def test_from_records_groups_by_scenario_joins_verdicts_and_names_busy_blocks():
    blocks = cache_off_blocks()
    busy = {"others": 1.1, "cores": 2, "contended": True, "top": [["busy-neighbour", 0.98]]}
    blocks[3]["host_load"] = busy
    comparisons = [
        {
            "record": "comparison",
            "compare_session": SESSION,
            "nodeid": NODE,
            "scenario": "gsp",
            "metric": m,
            "verdict": v,
        }
        for m, v in (("median_ttft_ms", "regressed"), ("median_tpot_ms", "equivalent"))
    ]
    other = [dict(b, scenario="chat", nodeid=NODE) for b in blocks]
    found = W.from_records([*other, *blocks, *comparisons])
    assert [w.scenario for w in found] == ["gsp", "chat"]  # regressed first
    gsp = found[0]
    assert gsp.regressed == ["median_ttft_ms"] and "REGRESSED median_ttft_ms" in gsp.title()
    assert len(gsp.busy) == 1 and "busy-neighbour 98%" in gsp.busy[0] and "1.10 of 2 cores" in gsp.busy[0]
    assert found[1].regressed == []


def test_the_terminal_prints_the_table_after_a_regressed_comparison_only():
    comparisons = [
        {
            "record": "comparison",
            "compare_session": SESSION,
            "nodeid": NODE,
            "scenario": "gsp",
            "metric": "median_ttft_ms",
            "verdict": "regressed",
        }
    ]
    lines = what_changed_lines([*cache_off_blocks(), *comparisons])
    text = "\n".join(lines)
    assert "llmbench what changed: smol-nospec gsp (REGRESSED median_ttft_ms" in text
    first_row = next(line for line in lines if line.strip().startswith("1 "))
    assert first_row.split()[:4] == ["1", "prefix_cache_hit_rate", "0.8026", "0"], first_row
    comparisons[0]["verdict"] = "equivalent"
    assert what_changed_lines([*cache_off_blocks(), *comparisons]) == []


def _folder(tmp_path: Path, records: list[dict]) -> Path:
    (tmp_path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return tmp_path


def test_summary_md_names_the_busy_host_and_ranks_what_changed(tmp_path: Path):
    blocks = cache_off_blocks()
    blocks[5]["host_load"] = {
        "others": 0.9,
        "own": 1.0,
        "steal": 0.0,
        "cores": 2,
        "contended": True,
        "top": [["stress", 0.9]],
    }
    scenario = {
        "record": "scenario",
        "config": "smol-nospec",
        "scenario": "chat",
        "host_load": {"others": 0.1, "cores": 2, "contended": False, "top": []},
    }
    folder = read_folder(_folder(tmp_path, [*blocks, scenario]))
    busy = busy_host_table(folder)
    assert busy is not None and busy.rows == [
        ["smol-nospec", "gsp", "round 2 reference", "0.90 of 2", "1.00", "0.00", "stress 90%"]
    ]
    [table] = what_changed_tables(folder)
    assert table.rows[0][1] == "prefix_cache_hit_rate"
    text = summary.render(folder)
    assert "### Busy host: 1 measured window(s)" in text and "stress 90%" in text
    assert "### what changed: smol-nospec gsp" in text and "| 1 | prefix_cache_hit_rate |" in text


def test_a_quiet_run_without_blocks_adds_no_tables(tmp_path: Path):
    folder = read_folder(_folder(tmp_path, [{"record": "scenario", "config": "c", "scenario": "s", "host_load": None}]))
    assert tables(folder) == [] and busy_host_table(folder) is None


def test_report_html_draws_both_arms_timelines_and_the_tables(tmp_path: Path):
    pytest.importorskip("matplotlib")
    from pytest_llmbench.report import html
    from pytest_llmbench.report.timeline_plot import session_series, timeline_plots

    blocks = cache_off_blocks()
    folder = read_folder(_folder(tmp_path, blocks))
    series = session_series([b for b in blocks if not b["warmup"]], "running_requests")
    assert set(series) == {"reference", "candidate"} and len(series["reference"]) == 6
    starts = sorted(run[0][0] for runs in series.values() for run in runs)
    assert starts == [2.0 * i for i in range(12)]  # blocks end to end, each 2 s of wall
    [plot] = timeline_plots(folder)
    assert plot.svg.startswith("<svg") and "smol-nospec · gsp" in plot.title
    page = html.render(folder)
    assert 'id="timelines"' in page and plot.id in page and "prefix_cache_hit_rate" in page


class _Terminal:
    """What pytest's terminal reporter is to compare/terminal.py: lines written, in order."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def write_sep(self, sep: str, title: str) -> None:
        self.lines.append(title)

    def write_line(self, line: str, **markup: bool) -> None:
        self.lines.append(line)


def test_the_session_summary_ends_with_what_changed_after_a_regressed_comparison():
    from collections import Counter

    from pytest_llmbench.compare import terminal

    regressed = {
        "record": "comparison",
        "compare_session": SESSION,
        "nodeid": NODE,
        "scenario": "gsp",
        "config": "smol-nospec",
        "test_key": "gsp",
        "metric": "median_ttft_ms",
        "verdict": "regressed",
    }
    tr = _Terminal()
    terminal.summary(
        tr, [regressed], [], [], blocks=cache_off_blocks(), made=Counter(), counted=Counter(), budgeted=False
    )
    text = "\n".join(tr.lines)
    assert "llmbench what changed: smol-nospec gsp (REGRESSED median_ttft_ms" in text, text
    assert text.index("what changed") > text.index("llmbench comparisons"), text
    tr = _Terminal()
    equivalent = {**regressed, "verdict": "equivalent"}
    terminal.summary(
        tr, [equivalent], [], [], blocks=cache_off_blocks(), made=Counter(), counted=Counter(), budgeted=False
    )
    assert not any("what changed" in line for line in tr.lines), tr.lines
