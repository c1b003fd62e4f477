"""SLOs and goodput (workload/slo.py): vLLM --goodput semantics, errored requests failing the SLO, the
config key and the command line."""

from pathlib import Path

import pytest

from pytest_llmbench.config import load_config_file
from pytest_llmbench.errors import ConfigError
from pytest_llmbench.gate.judge import default_noise
from pytest_llmbench.gate.metric import resolve_direction
from pytest_llmbench.gate.noise import Binomial
from pytest_llmbench.gate.types import Observation
from pytest_llmbench.workload.records import RequestRecord
from pytest_llmbench.workload.scenario import Scenario, _result
from pytest_llmbench.workload.slo import SloError, is_good, parse_slo, request_values_ms, resolve_slo, slo_metrics


def rec(i, ttft, e2e, n, ok=True):
    """A finished request: ``n`` tokens, evenly spaced after the first."""
    times = [ttft + k * (e2e - ttft) / max(n - 1, 1) for k in range(n)]
    return RequestRecord(
        index=i, ok=ok, ttft_s=ttft, e2e_s=e2e, completion_tokens=n, chunk_times=times, chunk_tokens=[1] * n
    )


def test_parse_reads_the_cli_form_and_a_mapping():
    assert parse_slo("ttft:500, tpot:50,e2el:2000", "x") == {"ttft": 500.0, "tpot": 50.0, "e2el": 2000.0}
    assert parse_slo({"itl": 20}, "x") == {"itl": 20.0}
    assert parse_slo(None, "x") == {}


@pytest.mark.parametrize(
    "spec, words",
    [
        ("ttft=500", "is not NAME:MS"),
        ("latency:5", "unknown SLO 'latency'"),
        ("tpot:fast", "number of ms"),
        ("ttft:-1", "positive"),
    ],
)
def test_a_bad_spec_names_where_it_came_from(spec, words):
    with pytest.raises(SloError, match=f"--llmbench-slo: .*{words}"):
        parse_slo(spec, "--llmbench-slo")


def test_tpot_is_vllms_per_request_definition():
    # (latency − ttft) / (output_len − 1): (1.1 − 0.1) / 10 = 100 ms
    assert request_values_ms(rec(0, 0.1, 1.1, 11))["tpot"] == pytest.approx(100.0)
    assert request_values_ms(rec(0, 0.1, 0.1, 1))["tpot"] == 0.0  # one token: tpot 0, as vLLM's goodput


def test_good_means_every_slo_met_inclusive_and_errors_fail():
    slo = {"ttft": 100.0, "tpot": 100.0}
    assert is_good(rec(0, 0.1, 1.1, 11), slo)  # exactly at both limits: ≤
    assert not is_good(rec(0, 0.1001, 1.1, 11), slo)
    assert not is_good(rec(0, 0.05, 2.0, 11), slo)  # ttft fine, tpot 195 ms
    assert not is_good(RequestRecord(index=1, error="HTTP 500: boom"), slo)


def test_metrics_count_errored_requests_in_the_denominator():
    records = [rec(0, 0.05, 0.5, 10), rec(1, 0.05, 0.5, 10), rec(2, 0.5, 1.0, 10), RequestRecord(index=3, error="x")]
    m = slo_metrics(records, 2.0, {"ttft": 100})
    assert (m["slo_good"], m["slo_requests"]) == (2, 4)
    assert m["slo_attainment"] == 0.5
    assert m["request_goodput"] == pytest.approx(1.0)
    assert m["output_token_goodput"] == pytest.approx(10.0)


def test_a_scenario_with_an_slo_reports_goodput_and_one_without_does_not():
    records = [rec(0, 0.05, 0.5, 10), rec(1, 0.3, 0.9, 10)]
    with_slo = _result(Scenario("s", slo="ttft:100"), records, [], 1.0, None, [], {})
    assert with_slo.metrics["slo_attainment"] == 0.5
    assert with_slo.scenario.as_dict()["slo"] == {"ttft": 100.0}
    assert "slo_attainment" not in _result(Scenario("s"), records, [], 1.0, None, [], {}).metrics


def test_the_command_line_wins_over_the_test_over_the_config():
    from types import SimpleNamespace

    Cfg = SimpleNamespace(slo={"e2el": 9000.0})

    assert resolve_slo("ttft:1", {"ttft": 2.0}, Cfg) == {"ttft": 1.0}
    assert resolve_slo(None, {"ttft": 2.0}, Cfg) == {"ttft": 2.0}
    assert resolve_slo(None, None, Cfg) == {"e2el": 9000.0}


def test_attainment_is_gated_as_a_proportion_higher_is_better():
    obs = Observation.of(7, n=10)
    assert isinstance(default_noise(obs), Binomial)
    assert resolve_direction("slo_attainment", None) == "higher"
    assert resolve_direction("request_goodput", None) == "higher"


def _config(tmp_path: Path, slo: str) -> Path:
    p = tmp_path / "c.yaml"
    p.write_text(f"configs:\n  - {{name: a, engine: llamacpp, model: m.gguf, slo: {slo}}}\n")
    (tmp_path / "m.gguf").write_bytes(b"GGUF")
    return p


def test_a_config_carries_its_slo(tmp_path):
    (cfg,) = load_config_file(_config(tmp_path, "{ttft: 500, tpot: 50}"))
    assert cfg.slo == {"ttft": 500.0, "tpot": 50.0}


def test_a_bad_config_slo_names_file_config_and_key(tmp_path):
    with pytest.raises(ConfigError) as e:
        load_config_file(_config(tmp_path, "{ttfb: 500}"))
    text = str(e.value)
    assert "c.yaml" in text and "'a'" in text and "slo" in text and "unknown SLO 'ttfb'" in text


def test_a_bad_command_line_slo_is_a_usage_error(pytester):
    pytester.makepyfile("def test_x():\n    pass\n")
    result = pytester.runpytest("-p", "pytest_llmbench.plugin", "--llmbench-slo", "ttft=5")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--llmbench-slo*is not NAME:MS*"])
