"""The dry run (compare/dryrun.py): the costs and noise a recorded session shows, and the plan table from
them without a server."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from pytest_llmbench.compare.dryrun import costs_from_records, dry_run, read_records
from pytest_llmbench.compare.nested import components, units_of
from pytest_llmbench.compare.power import MIN_UNITS

from .test_plan import CPU_BUMP, H200_BLOCKS, TARGET


def test_costs_from_the_committed_h200_records():
    costs = costs_from_records(read_records(H200_BLOCKS), session="gpu-aa-0")
    rec = costs[("gpu-smol-nospec", "chat-1u")]
    assert rec.starts == {"candidate": 1, "reference": 1}
    assert rec.start_s == {"candidate": pytest.approx(0.809, abs=1e-3), "reference": pytest.approx(0.544, abs=1e-3)}
    assert rec.rounds == 100 and 1.3 < rec.round_s < 1.6
    assert rec.wall_round_s == pytest.approx(1.496, abs=1e-3)
    assert len(rec.round_log_ratios) == 100
    unit = rec.costs(warmup_s=0.9)
    assert unit.start_s == pytest.approx(0.809 + 0.544, abs=2e-3)
    assert unit.round_s == max(rec.round_s, 1.4960668582500034)  # one start per arm: the pilot's wall round counts
    assert rec.costs(concurrent=True).start_s == pytest.approx(0.809, abs=1e-3)
    sd = float(np.std(rec.round_log_ratios, ddof=1))
    assert 0.03 < sd < 0.06  # the 4.4% per round of this A/A (simulate_comparisons.out.md)
    c = components(units_of(rec.round_log_ratios, 10))
    assert c.df_between == 9 and c.sd_within > 0.03


def test_costs_from_the_committed_cpu_records_cover_every_config_and_scenario():
    costs = costs_from_records(read_records(CPU_BUMP))
    assert set(costs) == {
        (config, scenario)
        for config in ("smol-nospec", "smol-ngram", "smol-draft")
        for scenario in ("chat-1u", "chat-4u", "prompt2k-1u")
    }
    assert costs[("smol-draft", "prompt2k-1u")].round_s > costs[("smol-nospec", "chat-1u")].round_s
    assert costs[("smol-draft", "chat-1u")].start_s["reference"] == pytest.approx(2.334, abs=1e-3)
    assert costs[("smol-nospec", "chat-1u")].wall_round_s is None


def test_records_name_their_file_and_line_when_bad(tmp_path: Path):
    path = tmp_path / "results.jsonl"
    path.write_text(json.dumps({"record": "arm_start"}) + "\n{not json\n")
    with pytest.raises(ValueError, match=r"results\.jsonl:2: not valid JSON"):
        read_records(path)


def test_a_scenario_without_starts_for_both_arms_is_named():
    records = [
        {
            "record": "comparison_block",
            "config": "c",
            "scenario": "s",
            "round": 0,
            "role": role,
            "metrics": {"duration": 1.0},
        }
        for role in ("reference", "candidate")
    ]
    rec = costs_from_records(records)[("c", "s")]
    with pytest.raises(ValueError, match="c/s: no arm_start record for both roles"):
        rec.costs()


def test_a_dry_run_prints_the_plan_table_from_recorded_costs():
    records = read_records(H200_BLOCKS)
    quick = dry_run(records, 1800.0, TARGET, sd_between=0.01, session="gpu-aa-0", warmup_s=0.9)
    (only,) = quick.plans
    assert only.name == "gpu-smol-nospec/chat-1u" and only.reached
    assert only.seconds < 600  # starts of ~0.7 s: minutes
    slow = dry_run(records, 1800.0, TARGET, sd_between=0.01, session="gpu-aa-0", warmup_s=0.9, start_s_per_arm=60.0)
    (sixty,) = slow.plans
    assert sixty.unit_rounds > only.unit_rounds  # a 60-s start buys longer units
    assert slow.table()[1].startswith("  gpu-smol-nospec/chat-1u: ")
    with pytest.raises(ValueError, match="give sd_between"):
        dry_run(records, 1800.0, TARGET, session="gpu-aa-0")
    units = dry_run(records, 1800.0, TARGET, unit_rounds=10, session="gpu-aa-0")
    assert units.plans[0].units >= MIN_UNITS
