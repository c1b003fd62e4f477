"""The posts' tables regenerated from a results folder written in the project's own record format."""

from __future__ import annotations

import pytest

from pytest_llmbench.records.results import ResultsWriter, iter_records
from pytest_llmbench.report.posts import POST_TABLES, Cell, ratio_of, render_post, scenario_cells
from tests.records.lines import whole


def scenario(config, name, throughput, *, tpots=None, accept=None):
    reqs = [
        {"index": i, "ok": True, "tpot_s": t, "ttft_s": 0.05, "accept_length": accept}
        for i, t in enumerate(tpots or [])
    ]
    metrics = {"output_throughput": throughput, "median_ttft_ms": 50.0}
    if tpots:
        metrics["median_tpot_ms"] = 1000 * sorted(tpots)[len(tpots) // 2]
    if accept is not None:
        metrics["accept_length"] = accept
    return {"record": "scenario", "config": config, "scenario": name, "metrics": metrics, "requests": reqs}


@pytest.fixture
def spec_results(tmp_path):
    """The spec-decode post's shape: DFlash2 8 2.5x no drafter on chat, 1.16x at 120k, MTP 7 in between."""
    w = ResultsWriter(tmp_path)
    rows = {"chat-1u": (40.0, 100.0, 80.0), "prompt20k-4u": (60.0, 137.5, 120.0), "prompt120k-1u": (10.0, 11.6, 11.0)}
    for sc, (nospec, dflash8, mtp7) in rows.items():
        w.write(whole(scenario("stock-nvfp4-nospec", sc, nospec, tpots=[0.0165, 0.0160, 0.0170, 0.0163])))
        w.write(
            whole(scenario("stock-nvfp4-dflash8", sc, dflash8, tpots=[0.0060, 0.0065, 0.0058, 0.0062], accept=3.46))
        )
        w.write(whole(scenario("stock-nvfp4-mtp7", sc, mtp7, accept=3.55)))
    w.write(whole({"record": "test", "config": "stock-nvfp4-dflash8", "measurements": {}}))  # other kinds are ignored
    return tmp_path


def test_spec_table_marks_the_best_per_row_and_says_the_posts_ratio(spec_results):
    text = render_post(spec_results, "spec")
    tput = text.split("### Median time")[0]
    assert "| chat, 1 user | 40.0 | — | 80.0 | — | **100.0** | — | 2.50x |" in tput
    assert "| 120k, 1 user | 10.0 | — | 11.0 | — | **11.6** | — | 1.16x |" in tput
    assert "DFlash2 8 vs no drafter: 2.50x on chat, 1 user, 1.16x at 120k, 1 user (range 1.16–2.50x)." in tput
    assert "chat, 4 users" not in tput  # rows nobody ran are left out, not shown empty


def test_one_run_of_a_per_request_metric_gets_a_bootstrap_interval(spec_results):
    tpot = render_post(spec_results, "spec").split("### Median time per output token")[1].split("###")[0]
    row = next(line for line in tpot.splitlines() if line.startswith("| chat, 1 user"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[5].startswith("**6.20** [") and cells[1].startswith("16.50 [")  # lower is better: DFlash2 bold
    low, high = (float(x) for x in cells[5].split("[")[1].rstrip("]").split("–"))
    assert 5.8 <= low <= 6.2 <= high <= 6.5
    assert cells[-1] == "2.66x"  # decode: 16.50 / 6.20


def test_reruns_in_one_folder_show_their_range(tmp_path):
    w = ResultsWriter(tmp_path)
    for value in (137.5, 142.3, 138.7):  # the posts' three runs of DFlash2 8 at 20k, 4 users
        w.write(whole(scenario("stock-nvfp4-dflash8", "prompt20k-4u", value)))
    cell = scenario_cells(iter_records(tmp_path, "scenario"), "output_throughput")[
        ("stock-nvfp4-dflash8", "prompt20k-4u")
    ]
    assert (cell.runs, cell.low, cell.high) == (3, 137.5, 142.3) and cell.value == pytest.approx(139.5)
    assert "139.5 [137.5–142.3]" in render_post(tmp_path, "spec")


def test_fp8_post_reads_nvfp4_32_to_37_percent_faster(tmp_path):
    w = ResultsWriter(tmp_path)
    for sc, fp8, nvfp4 in [
        ("chat-1u", 100.0, 132.0),
        ("chat-4u", 200.0, 274.0),
        ("prompt20k-1u", 50.0, 66.5),
        ("prompt20k-4u", 100.0, 137.0),
    ]:
        w.write(whole(scenario("stock-fp8-dflash8", sc, fp8)))
        w.write(whole(scenario("stock-nvfp4-dflash8", sc, nvfp4)))
    text = render_post(tmp_path, "fp8")
    assert "NVFP4 vs FP8: 32–37% faster over 4 rows." in text
    assert "| chat, 1 user | 100.0 | **132.0** | +32% |" in text


def test_ratios_point_the_better_way_and_unknown_posts_are_named():
    assert ratio_of(Cell(5.4), Cell(16.5), "lower") == pytest.approx(16.5 / 5.4)
    assert ratio_of(Cell(100.0), Cell(40.0), "higher") == 2.5
    assert ratio_of(None, Cell(1.0), "higher") is None
    with pytest.raises(ValueError, match=r"unknown post 'nope' .*known: .*spec"):
        render_post(".", "nope")
    assert {t.post for t in POST_TABLES} == {"spec", "fp8", "swift", "flashnext"}


def test_an_empty_folder_is_one_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="no results"):
        render_post(tmp_path, "spec")


def test_decisions_table_from_decision_records(tmp_path):
    """The decisions post's Typed Decisions table: Swift NVFP4 0.683 vs stock 0.666 agreement, KL 0.676 vs 0.542."""
    w = ResultsWriter(tmp_path)
    for config, acc, kl in [("stock-nvfp4-nospec", 0.666, 0.542), ("swift-nvfp4-nospec", 0.683, 0.676)]:
        w.write(
            whole(
                {
                    "record": "decisions",
                    "config": config,
                    "dataset": "typed-decisions.pass1",
                    "metrics": {"all": {"accuracy": acc, "kl": kl, "brier": 0.4, "log_loss": 0.9}},
                }
            )
        )
    w.write(
        whole(
            {
                "record": "decisions",
                "config": "stock-nvfp4-nospec",
                "dataset": "typed-decisions.pass2",
                "metrics": {"all": {"accuracy": 0.1}},
            }
        )
    )  # another pass: not in this table
    text = render_post(tmp_path, "decisions")
    # a tie is bold in both rows, as the Flash-Next post marks its 40k tie
    assert "| stock NVFP4 | 0.666 | **0.542** | **0.400** | **0.900** |" in text
    assert "| Swift NVFP4 | **0.683** | 0.676 | **0.400** | **0.900** |" in text
    assert text.index("stock NVFP4") < text.index("Swift NVFP4")  # the post's row order
