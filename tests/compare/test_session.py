"""CompareSession.judges/check without servers: which checks become comparisons, the record, and
which verdicts fail the test (regressed always, inconclusive only with --llmbench-strict)."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest

from pytest_llmbench import sink
from pytest_llmbench.compare.arms import ArmOptions, arms_from_options
from pytest_llmbench.compare.interleave import Outcome
from pytest_llmbench.compare.judging import Judge
from pytest_llmbench.compare.options import CompareSettings
from pytest_llmbench.compare.power import Design, Plan
from pytest_llmbench.compare.rounds import Block, Rounds
from pytest_llmbench.compare.servers import SessionServers
from pytest_llmbench.compare.session import CompareSession, _LastRun
from pytest_llmbench.config import load_config_file
from pytest_llmbench.records.results import RESULTS, ResultsWriter
from pytest_llmbench.registry import Registry
from pytest_llmbench.report import junit
from pytest_llmbench.workload.records import RequestRecord
from pytest_llmbench.workload.scenario import Scenario, ScenarioResult

from .test_arms import CPU_YAML

REGISTRY = Registry.builtin()

SC = Scenario("s", dataset="prompts", output_len=8, num_prompts=4, warmup=0)
DESIGN = Design(warmup_rounds=0, pilot_units=5, max_rounds=5, budget_s=None)
ALPHAS = {"timing": 0.01, "quality": 0.01, "decisions": 0.01}


def _last(rounds: Rounds) -> _LastRun:
    judge = Judge((), ALPHAS, design=DESIGN)
    plan = Plan(rounds=5, limit=5, pilot=5, seconds_per_round=1.0)
    return _LastRun("s", rounds, {}, Outcome(plan, 5, "planned", 10.0), judge)


def _rounds(cand_speed: float, ttft_noise: float, n_rounds: int = 5) -> Rounds:
    rng = np.random.default_rng(1)
    rounds = Rounds(SC)
    for r in range(n_rounds):
        for role in ("reference", "candidate"):
            speed = 100.0 if role == "reference" else cand_speed
            recs = [
                RequestRecord(
                    index=i,
                    ok=True,
                    ttft_s=0.1 * (1 + ttft_noise * rng.standard_normal()),
                    e2e_s=1.0,
                    completion_tokens=8,
                )
                for i in range(4)
            ]
            m = {"output_throughput": speed * (1 + 0.002 * rng.standard_normal()), "duration": 1.0}
            rounds.add(Block(r, role, ScenarioResult(SC, recs, m)))
    return rounds


def _session(tmp_path, *, strict: bool) -> tuple[CompareSession, SimpleNamespace]:
    cfg = {c.name: c for c in load_config_file(CPU_YAML)}["smol-nospec"]
    settings = CompareSettings(
        arms=ArmOptions.parse(reference_args="-t 1"),
        design=DESIGN,
        block_prompts=4,
        strict=strict,
        server_mode="auto",
        alpha=0.01,
        detect={},
        ignore={},
        decide=(),
    )
    writer = ResultsWriter(tmp_path)

    def sinks(config, record, item):  # the built-in sinks: results.jsonl and JUnit properties
        writer.write(record)
        junit.pytest_llmbench_record(record, item)

    config = SimpleNamespace(stash={RESULTS: writer}, hook=SimpleNamespace(pytest_llmbench_record=sinks))
    s = CompareSession.__new__(CompareSession)
    s.config, s.settings, s.yaml_pairs = config, settings, []
    s.pairs = {"smol-nospec": arms_from_options(cfg, settings.arms, REGISTRY)}
    s.alphas = {"timing": 0.01, "quality": 0.01, "decisions": 0.01}
    s._last, s._failing, s.records, s.is_worker = {}, {}, [], False
    s.session_id, s.counted, s.made, s.retried, s.last_budget_s = "session-a", Counter(), Counter(), [], None
    s.servers = SessionServers(config, settings.server_mode, s.session_id, s.retried)
    item = SimpleNamespace(user_properties=[], nodeid="b.py::test_serving[smol-nospec]")
    bench = SimpleNamespace(
        item=item,
        nodeid=item.nodeid,
        config_name="smol-nospec",
        test_key="b.py::test_serving",
        emit=lambda record: sink.emit(config, record, item),
    )
    return s, bench


def test_serving_metrics_become_comparisons_and_others_do_not(tmp_path):
    s, bench = _session(tmp_path, strict=False)
    assert not s.judges(bench, "output_throughput")  # no bench.run yet in this test
    s._last[bench.nodeid] = _last(_rounds(50.0, 0.01))
    assert s.judges(bench, "output_throughput") and s.judges(bench, "median_ttft_ms")
    with pytest.raises(pytest.fail.Exception, match=r"bench.check\('p99_ttft_ms'\) as a comparison: .*percentile"):
        s.judges(bench, "p99_ttft_ms")  # 4 requests a round cannot hold a p99: refused, saying how
    assert not s.judges(bench, "accuracy")  # quality keeps its stored baseline
    assert not s.judges(bench, "accept_length")  # neither arm drafted: nothing to pair


def test_regressed_fails_the_test_and_writes_the_record(tmp_path):
    s, bench = _session(tmp_path, strict=False)
    s._last[bench.nodeid] = _last(_rounds(50.0, 0.01))
    assert s.judges(bench, "output_throughput")
    c = s.check(bench, "output_throughput")
    assert c.verdict == "regressed" and c.estimate == pytest.approx(0.5, rel=0.01)
    (line,) = (tmp_path / "results.jsonl").read_text().splitlines()
    rec = json.loads(line)
    for key in (
        "config",
        "metric",
        "reference",
        "candidate",
        "ratio",
        "ci_low",
        "ci_high",
        "verdict",
        "rounds",
        "prompts",
        "p_value",
        "alpha",
        "family",
        "reference_arm",
        "candidate_arm",
        "stop",
        "stop_reason",
        "rules_out",
        "detectable",
        "ignore",
        "detect",
        "planned_rounds",
        "underpowered",
    ):
        assert key in rec, key
    assert (rec["record"], rec["config"], rec["rounds"], rec["prompts"]) == ("comparison", "smol-nospec", 5, 40)
    assert rec["reference_arm"] == "args -t 1" and rec["family"] == "timing"
    assert (rec["stop"], rec["confidence"], rec["ignore"], rec["detect"]) == ("planned", 0.95, 0.01, 0.03)
    assert rec["ci_high"] < 0.99 and rec["rules_out"] == pytest.approx(1 - rec["ci_low"])
    assert "output_throughput: regressed" in s._failing[bench.nodeid][0]
    assert ("llmbench.comparison.output_throughput", "regressed") in bench.item.user_properties


@pytest.mark.parametrize("strict", [False, True])
def test_inconclusive_fails_only_when_strict(tmp_path, strict):
    s, bench = _session(tmp_path, strict=strict)
    s._last[bench.nodeid] = _last(_rounds(100.0, 0.5))  # TTFT noise ±50%: undecidable
    assert s.judges(bench, "median_ttft_ms")
    assert s.check(bench, "median_ttft_ms").verdict == "inconclusive"
    failing = s._failing.get(bench.nodeid, [])
    assert (len(failing) == 1 and "--llmbench-strict" in failing[0]) if strict else failing == []


def test_auto_server_policy_keeps_both_arms_up_when_the_reference_fits(monkeypatch):
    """CPU configs always; GPU configs while the candidate leaves more than half of the GPU free (SGLang's
    static memory fraction does not: one arm at a time); unreadable GPU memory: one arm at a time."""
    from pytest_llmbench import server_facts
    from pytest_llmbench.compare.servers import both_fit

    assert both_fit(SimpleNamespace(gpu_ids=()))
    shares = {"small": 0.02, "sglang": 0.87, "unknown": None}
    for name, share in shares.items():
        monkeypatch.setattr(server_facts, "gpu_used_share", lambda ids, share=share: share)
        assert both_fit(SimpleNamespace(gpu_ids=("0",))) is (name == "small"), name


def test_cases_on_both_arms_are_paired_by_case_id(tmp_path):
    """bench.check(cases=, reference_cases=): McNemar for pass/fail, paired bootstrap for decisions, paired
    t otherwise; only the ids measured on both arms count."""
    from pytest_llmbench.gate import McNemar, PairedBootstrap, PairedT

    s, bench = _session(tmp_path, strict=False)
    ref = {f"c{i}": 1.0 for i in range(60)}
    cand = {**ref, **{f"c{i}": 0.0 for i in range(15)}, "only-candidate": 1.0}  # 15 of 60 lost
    c = s.check_cases(bench, "bfcl_passed", cand, ref, noise=McNemar(alpha=0.01))
    assert c.verdict == "regressed" and c.n == 60 and "exact McNemar on 60 cases (15 lost, 0 won)" == c.method
    same = s.check_cases(bench, "bfcl_passed", ref, ref, noise=McNemar(alpha=0.01))
    assert same.verdict == "inconclusive" and same.estimate == 0  # 60 cases cannot show ±3 points equivalent
    assert same.rules_out > 0.05  # what 60 agreeing cases leave open
    rng = np.random.default_rng(3)
    q_ref = {f"q{i}": float(rng.integers(0, 2)) for i in range(400)}
    d = s.check_cases(bench, "accuracy", q_ref, q_ref, noise=PairedBootstrap(), family="decisions")
    assert d.verdict == "equivalent" and d.method.startswith("paired") and d.method.endswith("over 400 questions")
    acc = {f"p{i}": 3.0 + 0.01 * i for i in range(30)}
    lower = {k: v - 0.4 for k, v in acc.items()}
    t = s.check_cases(bench, "accept_length", lower, acc, noise=PairedT(alpha=0.01))
    assert t.verdict == "regressed" and t.estimate == pytest.approx(-0.4)
    records = [json.loads(x) for x in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert [(r["metric"], r["family"], r["verdict"]) for r in records] == [
        ("bfcl_passed", "quality", "regressed"),
        ("bfcl_passed", "quality", "inconclusive"),
        ("accuracy", "decisions", "equivalent"),
        ("accept_length", "quality", "regressed"),
    ]
    assert len(s._failing[bench.nodeid]) == 2


def test_no_common_case_is_an_error_naming_the_check(tmp_path):
    s, bench = _session(tmp_path, strict=False)
    with pytest.raises(pytest.fail.Exception, match=r"bench.check\('bfcl_passed'.*no case id measured on both arms"):
        s.check_cases(bench, "bfcl_passed", {"a": 1.0}, {"b": 1.0})


def test_arms_yields_the_reference_then_the_candidate_and_leaves_the_candidate_up(tmp_path):
    from .test_interleave import RecordingServer

    s, bench = _session(tmp_path, strict=False)
    s.settings = replace(s.settings, server_mode="per-block")
    log: list = []
    bench.server = RecordingServer("candidate", log)

    def start(arm):
        log.append(("start", arm.role))
        return RecordingServer(arm.role, log)

    s.servers.server_mode = "per-block"
    s.servers.starter = lambda candidate: start
    roles = []
    for role, server in s.arm_servers(bench):
        roles.append(role)
        assert server.role == role and server.alive()
    assert roles == ["reference", "candidate"] and bench.server.alive()
    assert log[:2] == [("stop", "candidate"), ("start", "reference")]  # one arm at a time


def test_a_check_sets_its_own_sizes(tmp_path):
    """Issue 37 finding 8: ``bench.check(..., detect=, ignore=)`` had no way in; the check's sizes now judge
    it, over the ini's."""
    s, bench = _session(tmp_path, strict=False)
    s._last[bench.nodeid] = _last(_rounds(97.0, 0.01))
    assert s.judges(bench, "output_throughput", detect="10%", ignore="5%")
    c = s.check(bench, "output_throughput")
    assert (c.detect, c.ignore) == (pytest.approx(0.10), pytest.approx(0.05)) and c.verdict == "equivalent"
    assert s.judges(bench, "output_throughput")  # the default sizes again: 3% slower is beyond ignore (1%)
    assert s.check(bench, "output_throughput").verdict == "regressed"
    ref = {f"c{i}": 1.0 for i in range(60)}
    case = s.check_cases(bench, "bfcl_passed", ref, ref, noise=None, detect=0.2)
    assert case.detect == pytest.approx(0.2)


def _finish(s: CompareSession, monkeypatch) -> None:
    monkeypatch.setattr(s, "_gate_alpha_spec", lambda: "0.05")
    s.pytest_sessionfinish(SimpleNamespace(exitstatus=pytest.ExitCode.OK))


def test_a_reused_results_folder_judges_only_this_sessions_comparisons(tmp_path, monkeypatch):
    """Issue 37 finding 7: a second session with the same --results-dir showed the first session's
    REGRESSED rows and ran Holm over them too. Each session's records carry its id; the table and Holm
    read only its own (the first session's lines stay in results.jsonl: nothing is lost)."""
    first, bench = _session(tmp_path, strict=False)
    first.session_id = "first"
    first._last[bench.nodeid] = _last(_rounds(50.0, 0.01))
    assert first.judges(bench, "output_throughput") and first.check(bench, "output_throughput").verdict == "regressed"
    _finish(first, monkeypatch)
    second, bench = _session(tmp_path, strict=False)
    second.session_id = "second"
    second._last[bench.nodeid] = _last(_rounds(100.0, 0.01))
    assert second.judges(bench, "output_throughput")
    assert second.check(bench, "output_throughput").verdict == "equivalent"
    _finish(second, monkeypatch)
    assert [r["verdict"] for r in second.adjusted] == ["equivalent"]
    assert [r["compare_session"] for r in second._all_records("comparison")] == ["second"]
    lines = [json.loads(x) for x in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert [r["compare_session"] for r in lines if r["record"] == "comparison"] == ["first", "second"]


def test_q_and_the_suite_verdict_reach_every_reader_of_the_comparison_records(tmp_path, monkeypatch):
    """Issue 37 finding 5: Holm's q lived only in the comparison_budget record, so report.html and
    summary.md printed q as "-". A comparison_suite record per comparison carries q and the suite
    verdict; the report joins it onto the comparison (report/rows.py)."""
    from pytest_llmbench.records.folder import read_folder
    from pytest_llmbench.report.rows import comparison_table

    s, bench = _session(tmp_path, strict=False)
    s._last[bench.nodeid] = _last(_rounds(50.0, 0.01))
    assert s.judges(bench, "output_throughput") and s.judges(bench, "median_ttft_ms")
    s.check(bench, "output_throughput")
    s.check(bench, "median_ttft_ms")
    _finish(s, monkeypatch)
    suite_records = [r for r in read_folder(tmp_path).records if r["record"] == "comparison_suite"]
    assert {r["metric"] for r in suite_records} == {"output_throughput", "median_ttft_ms"}
    assert all(isinstance(r["q_value"], float) and r["suite_verdict"] for r in suite_records)
    table = comparison_table(read_folder(tmp_path))
    assert table is not None
    q = table.header.index("q")
    by_metric = {row[table.header.index("metric")]: row for row in table.rows}
    assert by_metric["output_throughput"][q] != "-" and by_metric["output_throughput"][0] == "regressed"
    assert "Statistic of output_throughput" in table.note and "could catch" in table.note  # once, not per row


def test_more_comparisons_than_counted_up_front_are_said(tmp_path, monkeypatch):
    """A check whose metric is not a literal (or in a loop) makes comparisons the count could not see: the
    session says so (Holm still holds the family's budget over all of them)."""
    s, bench = _session(tmp_path, strict=False)
    s.settings = replace(s.settings, alpha=None)
    s.counted = Counter({"timing": 1})
    s._last[bench.nodeid] = _last(_rounds(100.0, 0.01))
    for metric in ("output_throughput", "median_ttft_ms"):
        assert s.judges(bench, metric)
        s.check(bench, metric)
    _finish(s, monkeypatch)
    lines: list[str] = []
    tr = SimpleNamespace(write_sep=lambda *a, **k: None, write_line=lambda line, **k: lines.append(line))
    s.pytest_terminal_summary(tr)
    assert any("2 timing comparisons made, 1 counted up front" in line for line in lines), lines


def test_a_comparison_record_says_what_it_spent_against_its_share_of_the_budget(tmp_path):
    """Issue 57: a session is checked against its printed budget from its records: each comparison says
    the seconds its rounds took (first warm-up block on) and the share of the budget it had."""
    s, bench = _session(tmp_path, strict=False)
    s.last_budget_s = 120.0
    s._last[bench.nodeid] = _last(_rounds(97.0, 0.01))
    assert s.judges(bench, "output_throughput")
    s.check(bench, "output_throughput")
    (record,) = [r for r in s.records if r["metric"] == "output_throughput"]
    assert (record["elapsed_s"], record["budget_s"]) == (10.0, 120.0)
