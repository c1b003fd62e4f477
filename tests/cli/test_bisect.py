"""``python -m pytest_llmbench bisect``: its arguments, its errors, the builds hook, and a run that ends
before any session (an end that cannot be materialized). Real sessions: tests/bisect/test_bisect_integration.py."""

from __future__ import annotations

import json
import textwrap

import pytest

from pytest_llmbench import __main__ as entry
from pytest_llmbench.bisect.builds import PipVersion
from pytest_llmbench.cli.bisect import builds_from_hook, main, split_argv


def test_the_command_is_registered():
    assert entry.COMMANDS["bisect"][0] == "bisect"


def test_pytest_arguments_follow_the_double_dash():
    assert split_argv(["--good", "a", "--", "benches/", "-k", "x"]) == (["--good", "a"], ["benches/", "-k", "x"])
    assert split_argv(["--good", "a"]) == (["--good", "a"], [])


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--good", "nope", "--bad", "bin:/x", "--candidates", "bin:/y"], "build 'nope': not a folder"),
        (
            ["--good", "bin:/a", "--bad", "bin:/b", "--candidates", "bin:/c", "--", "--results-dir", "r"],
            "--results-dir: the bisect sets it",
        ),
        (["--good", "bin:/a", "--bad", "bin:/b", "--candidates", "bin:/b"], "share the label 'b'"),
        (["--good", "bin:/a", "--bad", "bin:/b", "--retries", "-1", "--candidates", "bin:/c"], "--retries -1"),
        (
            ["--good", "bin:/a", "--bad", "bin:/b", "--candidates-file", "/no/such/file"],
            "--candidates-file /no/such/file",
        ),
    ],
)
def test_usage_errors_name_what_to_fix(argv, message, capsys, tmp_path):
    assert main(["--out", str(tmp_path / "o"), *argv]) == 2
    assert message in capsys.readouterr().err


def test_an_end_that_cannot_be_had_ends_the_bisect_naming_it(tmp_path, capsys):
    (tmp_path / "b1").mkdir()
    (tmp_path / "b1" / "llama-server").write_text("#!/bin/sh\n")
    (tmp_path / "b1" / "llama-server").chmod(0o755)
    out = tmp_path / "out"
    code = main(
        [
            "--good",
            f"bin:{tmp_path}/gone",
            "--bad",
            f"bin:{tmp_path}/b1",
            "--candidates",
            f"bin:{tmp_path}/b1x",
            "--out",
            str(out),
            "--",
            "benches/",
        ]
    )
    assert code == 1
    printed = capsys.readouterr().out
    assert printed.startswith("bisect over 3 builds (1 between good and bad): 3 comparisons")
    assert "step 1 (ends): gone → b1: skip: did not materialize: build 'gone':" in printed
    (line,) = [
        json.loads(x)
        for x in (out / "results.jsonl").read_text().splitlines()
        if '"bisect"' in x and '"bisect_step"' not in x
    ]
    assert line["status"] == "broken-end" and line["message"].startswith("the good build gone cannot run")
    assert (
        (out / "summary.md").read_text().startswith("## ❌ llmbench: FAILED — bisect: the good build gone cannot run")
    )


def test_the_builds_hook_lists_the_builds_when_no_candidates_are_given(pytester, monkeypatch):
    pytester.makeconftest(
        textwrap.dedent(
            """
            from pytest_llmbench.bisect import PipVersion

            def pytest_llmbench_bisect_builds(config, good, bad):
                first, last = int(good), int(bad)
                return [PipVersion(f"{v}.0.0") for v in range(first, last + 1, 10)]
            """
        )
    )
    monkeypatch.chdir(pytester.path)
    builds = builds_from_hook(["-p", "no:cacheprovider", str(pytester.path)], "11401", "11431")
    assert builds == [PipVersion(f"{v}.0.0") for v in (11401, 11411, 11421, 11431)]


def test_without_candidates_or_hook_the_error_says_both_ways(pytester, monkeypatch):
    monkeypatch.chdir(pytester.path)
    with pytest.raises(ValueError, match="no --candidates and no pytest_llmbench_bisect_builds hook answered"):
        builds_from_hook([str(pytester.path)], "a", "b")


def test_a_hook_entry_without_materialize_is_named(pytester, monkeypatch):
    pytester.makeconftest("def pytest_llmbench_bisect_builds(config, good, bad):\n    return ['a', 'b']\n")
    monkeypatch.chdir(pytester.path)
    with pytest.raises(ValueError, match="entry 0 \\('a'\\) has no label or materialize"):
        builds_from_hook([str(pytester.path)], "a", "b")


def test_the_farm_that_listed_the_builds_hears_which_come_next(pytester, monkeypatch, capsys):
    """The ``pytest_llmbench_bisect_ahead`` hook is called before the first step with the ends, then the
    middles the next halvings may compare (here the bad end cannot be had, so the bisect stops after it)."""
    pytester.makeconftest(
        textwrap.dedent(
            """
            import json
            from pathlib import Path
            from pytest_llmbench.bisect import BinaryFolder

            def pytest_llmbench_bisect_builds(config, good, bad):
                return [BinaryFolder(Path("gone") / str(v), label=f"b{v}") for v in range(int(good), int(bad) + 1)]

            def pytest_llmbench_bisect_ahead(config, builds):
                with open("ahead.jsonl", "a") as f:
                    f.write(json.dumps([b.label for b in builds]) + "\\n")
            """
        )
    )
    monkeypatch.chdir(pytester.path)
    code = main(["--good", "0", "--bad", "8", "--out", str(pytester.path / "out"), "--", str(pytester.path)])
    assert code == 1 and "the good build b0 cannot run" in capsys.readouterr().out
    heard = [json.loads(line) for line in (pytester.path / "ahead.jsonl").read_text().splitlines()]
    assert heard == [["b0", "b8", "b4", "b2", "b6", "b1", "b3", "b5", "b7"]]


def test_ctrl_c_keeps_the_steps_so_far_and_reports_the_range(pytester, monkeypatch, capsys):
    """Ctrl-C during a step: exit 130, and summary.md says what the bisect had learnt (here the ends, replayed
    from a record) and how to go on, instead of nothing."""
    pytester.makeconftest(
        textwrap.dedent(
            """
            class Interrupted:
                def __init__(self, label):
                    self.label = label

                def materialize(self, cache):
                    raise KeyboardInterrupt

            def pytest_llmbench_bisect_builds(config, good, bad):
                return [Interrupted(f"b{v}") for v in range(int(good), int(bad) + 1)]
            """
        )
    )
    recorded = pytester.path / "earlier"
    recorded.mkdir()
    ends = {
        "record": "bisect_step",
        "step": 1,
        "kind": "ends",
        "attempt": 0,
        "reference": "b0",
        "candidate": "b8",
        "reference_index": 0,
        "candidate_index": 8,
        "outcome": "different",
        "ratio": 0.95,
        "ci_low": 0.94,
        "ci_high": 0.96,
        "metric": "output_throughput",
        "gpu_s": 120.0,
    }
    (recorded / "results.jsonl").write_text(json.dumps(ends) + "\n")
    monkeypatch.chdir(pytester.path)
    out = pytester.path / "out"
    argv = ["--good", "0", "--bad", "8", "--resume", str(recorded), "--out", str(out), "--", str(pytester.path)]
    assert main(argv) == 130
    assert (
        f"bisect: interrupted (Ctrl-C); the steps so far are in {out}: go on with --resume {out}"
        in capsys.readouterr().err
    )
    summary = (out / "summary.md").read_text()
    assert summary.startswith(
        "## ⚠️ llmbench: INCONCLUSIVE — bisect: interrupted after step 1 (no finding recorded): "
        "so far the first slower build is after b0, up to b8"
    )
    assert "| 1 | ends | b0 → b8 |" in summary.replace("**1**", "1")
