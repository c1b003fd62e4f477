"""The fixtures: test_key (a baseline key independent of config and xdist group) and the Bench sink."""

import json
from types import SimpleNamespace

import pytest

from pytest_llmbench.scheduling import test_key as key_of


@pytest.mark.parametrize(
    "nodeid, config, expected",
    [
        ("b/t.py::test_x[smol-draft-chat-1u]", "smol-draft", "b/t.py::test_x[chat-1u]"),
        ("b/t.py::test_x[chat-1u-smol-draft]", "smol-draft", "b/t.py::test_x[chat-1u]"),
        ("b/t.py::test_x[smol-draft]", "smol-draft", "b/t.py::test_x"),
        ("b/t.py::test_x[gpu-smol-nospec-chat-4u]@gpu-smol-nospec", "gpu-smol-nospec", "b/t.py::test_x[chat-4u]"),
        ("b/t.py::test_x[a-b]", None, "b/t.py::test_x[a-b]"),
        # --llmbench-record N: every start of a config keys the same baseline
        ("b/t.py::test_x[smol-draft-start2of3-chat-1u]", "smol-draft", "b/t.py::test_x[chat-1u]"),
        ("b/t.py::test_x[smol-draft-start3of3]", "smol-draft", "b/t.py::test_x"),
        ("b/t.py::test_x[start2of3-smol-draft]", "smol-draft", "b/t.py::test_x[start2of3]"),
    ],
)
def test_key_drops_the_config_and_the_xdist_group(nodeid, config, expected):
    assert key_of(SimpleNamespace(nodeid=nodeid), config) == expected


def test_bench_sink_stamps_every_line_and_prefixes_every_scenario(pytester):
    """Every scenario's metrics are kept as <scenario>.<metric> (the first one too); emit stamps the
    test's config, node id and baseline key; artifact_dir is created under the results folder."""
    results = pytester.path / "r"
    pytester.makepyfile(
        test_b="""
        import inspect
        from pytest_llmbench import Bench, Scenario, ScenarioResult

        def test_sink(bench: Bench):
            for name in ("a", "b"):
                bench._keep(ScenarioResult(Scenario(name), [], {"completed": 2}))
            bench.record("score", 0.5)
            line = bench.emit({"record": "my_eval", "n": 3})
            assert line == {"record": "my_eval", "n": 3, "config": None, "test": "test_b.py::test_sink",
                            "test_key": "test_b.py::test_sink"}
            assert bench.measurements == {"a.completed": 2, "b.completed": 2, "score": 0.5}
            d = bench.artifact_dir("decisions")
            assert d.is_dir() and d.parent.name == "r"
            assert not bench.artifact_dir("x", config="other").exists(), "another config's folder is not made"
            assert "noise" in inspect.signature(bench.check).parameters
    """
    )
    result = pytester.runpytest("-p", "no:cacheprovider", f"--results-dir={results}", "--junitxml=j.xml")
    result.assert_outcomes(passed=1)
    kinds = [json.loads(line)["record"] for line in (results / "results.jsonl").read_text().splitlines()]
    assert kinds == ["session_start", "scenario", "scenario", "my_eval", "test", "session"]  # the run's verdict last
    junit = (pytester.path / "j.xml").read_text()
    assert 'name="llmbench.a.completed" value="2"' in junit and 'name="llmbench.score" value="0.5"' in junit
