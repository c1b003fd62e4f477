"""Margins per metric: defaults by name and by the words in a name, overrides, unknown metrics."""

from __future__ import annotations

import pytest

from pytest_llmbench.compare.margins import DEFAULT_MARGINS, margin_for


@pytest.mark.parametrize(("metric", "expected"), [
    ("output_throughput", ("ratio", 0.03)),
    ("accept_length", ("difference", 0.1)),
    ("median_ttft_ms", ("ratio", 0.05)),
    ("p99_itl_ms", ("ratio", 0.05)),
    ("median_tpot_ms", ("ratio", 0.05)),
    ("bfcl_passed", ("difference", 0.03)),
    ("gsm8k_correct", ("difference", 0.03)),
    ("startup_s", ("ratio", 0.10)),
    ("gpu_memory_gb", ("ratio", 0.02)),
    ("host_rss_bytes", ("ratio", 0.02)),
    ("spec_accept_length", ("difference", 0.1)),
])
def test_defaults(metric, expected):
    assert margin_for(metric) == expected


@pytest.mark.parametrize(("override", "expected"), [
    (0.05, ("ratio", 0.05)),  # a bare number keeps the metric's own kind
    ("5%", ("ratio", 0.05)),
    (("difference", 2.0), ("difference", 2.0)),
])
def test_overrides(override, expected):
    assert margin_for("output_throughput", {"output_throughput": override}) == expected


def test_unknown_metric_names_it_unless_overridden():
    with pytest.raises(ValueError, match=r"no comparison margin for metric 'widgets_made'"):
        margin_for("widgets_made")
    assert margin_for("widgets_made", {"widgets_made": 3}) == ("difference", 3.0)
    assert margin_for("widgets_made", {"widgets_made": "2%"}) == ("ratio", 0.02)


@pytest.mark.parametrize(("override", "message"), [
    ("abc", "margin for 'tpot': 'abc' is not a number"),
    (-0.1, "must be >= 0"),
    ("150%", "must be >= 0 and < 100%"),
    (("percent", 3), "kind must be 'ratio' or 'difference'"),
])
def test_bad_overrides(override, message):
    with pytest.raises(ValueError, match=message):
        margin_for("tpot", {"tpot": override})


def test_every_default_is_a_valid_margin():
    for metric, (kind, value) in DEFAULT_MARGINS.items():
        assert kind in ("ratio", "difference") and value > 0, metric
        assert margin_for(metric) == (kind, value)
