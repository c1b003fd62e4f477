"""Sizes per metric: defaults by name and by the words in a name, overrides, unknown metrics."""

from __future__ import annotations

import pytest

from pytest_llmbench.compare.margins import DEFAULT_SIZES, Sizes, sizes_for


@pytest.mark.parametrize(
    ("metric", "expected"),
    [
        ("output_throughput", ("ratio", 0.01, 0.03)),
        ("accept_length", ("difference", 0.03, 0.1)),
        ("median_ttft_ms", ("ratio", 0.02, 0.05)),
        ("p99_itl_ms", ("ratio", 0.02, 0.05)),
        ("median_tpot_ms", ("ratio", 0.02, 0.05)),
        ("bfcl_passed", ("difference", 0.01, 0.03)),
        ("gsm8k_correct", ("difference", 0.01, 0.03)),
        ("startup_s", ("ratio", 0.03, 0.10)),
        ("gpu_memory_gb", ("ratio", 0.005, 0.02)),
        ("host_rss_bytes", ("ratio", 0.005, 0.02)),
        ("spec_accept_length", ("difference", 0.03, 0.1)),
    ],
)
def test_defaults(metric, expected):
    assert sizes_for(metric) == Sizes(*expected)


@pytest.mark.parametrize(
    ("detect", "ignore", "expected"),
    [
        ({"output_throughput": 0.06}, None, ("ratio", 0.02, 0.06)),  # detect alone keeps the default's share
        ({"output_throughput": "5%"}, {"output_throughput": "0.5%"}, ("ratio", 0.005, 0.05)),
        (None, {"output_throughput": 0.02}, ("ratio", 0.02, 0.03)),
        ({"output_throughput": ("difference", 20.0)}, {"output_throughput": 5}, ("difference", 5.0, 20.0)),
    ],
)
def test_overrides(detect, ignore, expected):
    assert sizes_for("output_throughput", detect, ignore) == Sizes(*expected)


def test_unknown_metric_names_it_unless_overridden():
    with pytest.raises(ValueError, match=r"no comparison size for metric 'widgets_made'"):
        sizes_for("widgets_made")
    assert sizes_for("widgets_made", {"widgets_made": 3}) == Sizes("difference", 1.0, 3.0)
    assert sizes_for("widgets_made", {"widgets_made": "6%"}, {"widgets_made": "1%"}) == Sizes("ratio", 0.01, 0.06)


@pytest.mark.parametrize(
    ("detect", "ignore", "message"),
    [
        ("abc", None, "size for 'tpot': 'abc' is not a number"),
        (-0.1, None, "must be >= 0"),
        ("150%", None, "must be >= 0 and < 100%"),
        (("percent", 3), None, "kind must be 'ratio' or 'difference'"),
        ("5%", "6%", "sizes for 'tpot': need 0 <= ignore < detect"),
        ("5%", 2.0, "size for 'tpot': 2.0 must be >= 0 and < 100%"),  # a bare ignore takes detect's kind
    ],
)
def test_bad_overrides(detect, ignore, message):
    with pytest.raises(ValueError, match=message):
        sizes_for("tpot", {"tpot": detect}, {"tpot": ignore} if ignore is not None else None)


def test_every_default_is_a_valid_pair():
    for metric, (kind, ignore, detect) in DEFAULT_SIZES.items():
        assert kind in ("ratio", "difference") and 0 < ignore < detect, metric
        assert sizes_for(metric) == Sizes(kind, ignore, detect)
