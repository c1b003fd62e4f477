"""sink.emit: one plain, JSON-safe, secret-free record handed to every pytest_llmbench_record sink."""

import math

import numpy as np
import pytest

from pytest_llmbench import redact
from pytest_llmbench.sink import clean, emit, plain


def test_clean_makes_json_safe_values():
    assert clean({"a": float("nan"), "b": (1, np.float64(2.5)), "c": math.inf, 3: object}) == {
        "a": None,
        "b": [1, 2.5],
        "c": None,
        "3": str(object),
    }


def test_plain_scrubs_registered_secrets_and_needs_a_kind():
    redact.register(["sk-this-is-secret-123"])
    assert plain({"record": "x", "note": "key sk-this-is-secret-123 used"})["note"] == "key *** used"
    with pytest.raises(ValueError, match="needs a string 'record' kind"):
        plain({"metrics": {}})


def test_emit_calls_every_sink_with_the_same_plain_record():
    calls = []

    class Hook:
        def pytest_llmbench_record(self, config, record, item):
            calls.append((config, record, item))

    class Config:
        hook = Hook()

    cfg = Config()
    out = emit(cfg, {"record": "scenario", "metrics": {"x": np.int64(3)}}, item="the item")
    assert calls == [(cfg, {"record": "scenario", "metrics": {"x": 3}}, "the item")] and out == calls[0][1]
    assert type(out["metrics"]["x"]) is int
