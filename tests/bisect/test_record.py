"""The bisect's results lines: a step line per step as it finishes, the bisect line at the end, both
through the sink's pieces into results.jsonl, with every build named by label and identity."""

from __future__ import annotations

import json

from pytest_llmbench import redact
from pytest_llmbench.bisect.builds import BuildCache, BuildError, Materialized
from pytest_llmbench.bisect.record import BisectLog, bisect_line
from pytest_llmbench.bisect.search import Search, Step, StepResult


class Named:
    def __init__(self, label, fail=False):
        self.label, self.fail = label, fail

    def materialize(self, cache):
        if self.fail:
            raise BuildError(f"build {self.label!r}: no llama-server in /x")
        return Materialized(self.label, bin_dir=cache, identity={"version": self.label.lstrip("v") + ".0.0"})


def run_bisect(tmp_path, n=6, first_slow=4, broken=2):
    builds = [Named(f"v{i}", fail=i == broken) for i in range(n)]
    cache = BuildCache(builds, tmp_path)
    log = BisectLog(tmp_path / "out")
    labels = [b.label for b in builds]

    def compare(step: Step) -> StepResult:
        for i in (step.reference, step.candidate):
            try:
                cache.get(i)
            except BuildError as e:
                return StepResult("skip", 0.5, skipped=i, reason=f"did not materialize: {e}")
        slow = step.candidate >= first_slow > step.reference
        ratio = 0.8 if slow else 1.0
        shown = {
            "metric": "output_throughput",
            "verdict": "regressed" if slow else "equivalent",
            "ratio": ratio,
            "ci_low": ratio - 0.02,
            "ci_high": ratio + 0.02,
            "higher_is_better": True,
        }
        return StepResult("different" if slow else "same", 12.0, details={"shown": shown, "results_dir": "/r"})

    finding = Search(n, compare, names=labels, on_step=lambda s, r: log.step(s, r, labels)).run()
    line = log.write(bisect_line(finding, cache, pytest_args=["-k", "chat"], budget_s=600, metric="output_throughput"))
    return finding, line, tmp_path / "out" / "results.jsonl"


def test_steps_are_written_as_they_finish_and_the_result_last(tmp_path):
    finding, line, path = run_bisect(tmp_path)
    rows = [json.loads(x) for x in path.read_text().splitlines()]
    assert [r["record"] for r in rows] == ["bisect_step"] * finding.comparisons + ["bisect"]
    first = rows[0]
    assert (first["kind"], first["reference"], first["candidate"], first["outcome"]) == (
        "ends",
        "v0",
        "v5",
        "different",
    )
    assert first["ratio"] == 0.8 and first["ci_low"] == 0.78 and first["gpu_s"] == 12.0
    assert rows[-1]["record_version"] == 1 and rows[0]["record_version"] == 1  # the writer stamps the schema's
    assert {k: v for k, v in rows[-1].items() if k not in ("session_id", "record_version")} == line  # and session


def test_the_bisect_line_names_the_culprit_every_build_and_the_skipped_one(tmp_path):
    finding, line, _ = run_bisect(tmp_path)
    assert line["status"] == "culprit" and line["culprit"] == "v4" and line["last_good"] == "v3"
    assert line["good"] == "v0" and line["bad"] == "v5" and line["comparisons"] == finding.comparisons
    builds = {b["label"]: b for b in line["builds"]}
    assert builds["v4"]["state"] == "bad" and builds["v4"]["identity"] == {"version": "4.0.0"}
    assert builds["v2"]["state"] == "skip" and "no llama-server" in builds["v2"]["error"]
    assert line["gpu_s"] == sum(s["gpu_s"] for s in line["steps"]) and line["budget_s"] == 600
    assert line["pytest_args"] == ["-k", "chat"] and line["message"].startswith("first slower build: v4")


def test_a_secret_in_the_command_is_scrubbed_from_the_line(tmp_path):
    redact.register(redact.secret_args(["--hf-token", "hf_supersecretvalue"]))  # as the CLI does
    _, whole, _ = run_bisect(tmp_path / "run")  # a whole bisect line: the writer checks its fields
    line = BisectLog(tmp_path).write({**whole, "command": "bisect -- --hf-token hf_supersecretvalue"})
    assert line["command"] == "bisect -- --hf-token ***"
    assert "hf_supersecretvalue" not in (tmp_path / "results.jsonl").read_text()
