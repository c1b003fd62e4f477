"""compare: ratios B / A, and where both runs measured the same items the in-session comparison's test."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from pytest_llmbench.__main__ import main
from pytest_llmbench.compare.margins import sizes_for
from pytest_llmbench.compare.stats import VERDICTS, compare_paired
from pytest_llmbench.records.folder import read_folder
from pytest_llmbench.report.compare import ALPHA, compare, judge_items, markdown

DATA = Path(__file__).parent / "data"


def test_two_folders_are_judged_by_the_live_comparisons_functions() -> None:
    """Prompts differ 10× in cost; B is 5% slower on every one: the paired log-ratio t of compare/stats.py
    (the one an in-session comparison uses) resolves it, with the same sizes and verdict."""
    rng = np.random.default_rng(3)
    a = rng.lognormal(0.0, 1.0, size=40)
    b = a * 1.05 * rng.normal(1.0, 0.005, size=40)
    c = judge_items("median_tpot_ms", list(a), list(b), higher_is_better=False)
    assert c == compare_paired(
        "median_tpot_ms", a, b, higher_is_better=False, sizes=sizes_for("median_tpot_ms"), alpha=ALPHA
    )
    assert 1.0 < c.ci_low < 1.05 < c.ci_high < 1.1 and c.verdict == "regressed"  # beyond ignore (2%)


def test_too_few_items_give_no_interval() -> None:
    assert judge_items("median_ttft_ms", [1.0, 2.0], [1.0, 2.0], higher_is_better=False) is None


def _copy_with_slower_ttft(src: Path, dst: Path, factor: float) -> Path:
    shutil.copytree(src, dst)
    lines = []
    for line in (dst / "results.jsonl").read_text().splitlines():
        rec = json.loads(line)
        if rec.get("record") == "scenario":
            for r in rec["requests"]:
                if r.get("ttft_s") is not None:
                    r["ttft_s"] *= factor
            rec["metrics"]["median_ttft_ms"] *= factor
        lines.append(json.dumps(rec))
    (dst / "results.jsonl").write_text("\n".join(lines) + "\n")
    return dst


@pytest.fixture
def run_a() -> Path:
    return DATA / "cpu-run-a"


def test_same_scenarios_side_by_side_with_paired_intervals(run_a: Path, tmp_path: Path) -> None:
    """A real run against a copy whose TTFT is 20% higher on every request."""
    b = _copy_with_slower_ttft(run_a, tmp_path / "b", 1.2)
    result = compare(read_folder(run_a), read_folder(b))
    scenarios = {(s["config"], s["scenario"]) for s in read_folder(run_a).kind("scenario")}
    ttft = [r for r in result.rows if r.metric == "median_ttft_ms"]
    assert {(r.config, r.item) for r in ttft} == scenarios
    for r in ttft:
        assert r.ratio == pytest.approx(1.2)
        if r.low is not None:  # scenarios with ≥ 3 successful requests
            assert r.paired and r.low == pytest.approx(1.2) and r.high == pytest.approx(1.2)
            # two sessions, the prompt as the unit: the interval describes, it gives no verdict (issue 37)
            assert r.verdict is None and r.kind == "ratio"
    tput = [r for r in result.rows if r.metric == "output_throughput"]
    assert tput and all(r.ratio == pytest.approx(1.0) and r.low is None for r in tput)
    assert not result.only_a and not result.only_b


def test_two_real_runs(run_a: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Two real CPU-suite runs (see data/README.md): every shared scenario and eval gets a row."""
    run_b = DATA / "cpu-run-b"
    assert main(["compare", str(run_a), str(run_b), "--html", str(tmp_path / "c.html")]) == 0
    out = capsys.readouterr().out
    shared = {(s["config"], s["scenario"]) for s in read_folder(run_a).kind("scenario")} & {
        (s["config"], s["scenario"]) for s in read_folder(run_b).kind("scenario")
    }
    assert shared
    for config, scenario in shared:
        assert f"| {config} | {scenario} | output_throughput |" in out
    page = (tmp_path / "c.html").read_text()
    assert 'id="plot-ratios"' in page and "<script" not in page


def test_timing_across_two_sessions_is_descriptive_and_quality_is_judged(run_a: Path, tmp_path: Path) -> None:
    """Issue 37 finding 9: "regressed" TPOT from 4 prompts of two sessions, where a host shift between the
    sessions reads as a regression. Timing rows say "descriptive"; a pass/fail case keeps its verdict."""
    b = _copy_with_slower_ttft(run_a, tmp_path / "b", 1.2)
    result = compare(read_folder(run_a), read_folder(b))
    text = markdown(result)
    timing = [r for r in result.rows if r.paired and r.metric.endswith("_ms")]
    assert timing and all(r.verdict is None for r in timing)
    assert "| descriptive |" in text and "Timing rows are descriptive" in text and "regressed" not in text
    c = judge_items("passed", [1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 1, 1], higher_is_better=True, pass_fail=True)
    assert c is not None and c.verdict in VERDICTS  # quality: the case is a fair unit across sessions


def test_markdown_names_what_only_one_run_has(run_a: Path, tmp_path: Path) -> None:
    b = tmp_path / "b"
    shutil.copytree(run_a, b)
    kept = [
        line for line in (b / "results.jsonl").read_text().splitlines() if json.loads(line).get("scenario") != "chat-4u"
    ]
    (b / "results.jsonl").write_text("\n".join(kept) + "\n")
    text = markdown(compare(read_folder(run_a), read_folder(b)))
    assert "only in A: " in text and "chat-4u" in text.split("only in A: ")[1]


def test_cli_errors_name_the_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", str(tmp_path), str(tmp_path)]) == 1
    assert f"{tmp_path}: no results*.jsonl here" in capsys.readouterr().err
