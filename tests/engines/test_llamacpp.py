"""llama.cpp adapter: per-request accept length from the final chunk's timings."""

from types import SimpleNamespace

import pytest

from pytest_llmbench.engines.llamacpp import LlamaCppEngine


def engine(*args):
    e = LlamaCppEngine()
    e.configure(SimpleNamespace(args=tuple(args)))
    return e


def test_accept_length_is_tokens_per_verify_step():
    spec = engine("--spec-type", "draft-simple").request_spec(
        {"timings": {"predicted_n": 100, "draft_n": 120, "draft_n_accepted": 60}}, 100)
    assert spec.accept_length == pytest.approx(100 / 40) and spec.verify_steps == 40 and spec.drafted == 120


def test_drafting_server_that_drafted_nothing_accepts_one_token_per_step():
    spec = engine("--spec-type", "ngram-mod").request_spec({"timings": {"predicted_n": 64}}, 64)
    assert spec.accept_length == 1.0 and spec.drafted == 0 and spec.source == "timings (no drafts)"


def test_server_without_drafting_reports_no_accept_length():
    assert engine("-c", "4096").request_spec({"timings": {"predicted_n": 64}}, 64) is None
    assert engine("--spec-type", "none").request_spec({"timings": {"predicted_n": 64}}, 64) is None
