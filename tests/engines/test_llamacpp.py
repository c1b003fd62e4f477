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
        {"timings": {"predicted_n": 100, "draft_n": 120, "draft_n_accepted": 60}}, 100
    )
    assert spec.accept_length == pytest.approx(100 / 40) and spec.verify_steps == 40 and spec.drafted == 120


def test_drafting_server_that_drafted_nothing_accepts_one_token_per_step():
    spec = engine("--spec-type", "ngram-mod").request_spec({"timings": {"predicted_n": 64}}, 64)
    assert spec.accept_length == 1.0 and spec.drafted == 0 and spec.source == "timings (no drafts)"


def test_server_without_drafting_reports_no_accept_length():
    assert engine("-c", "4096").request_spec({"timings": {"predicted_n": 64}}, 64) is None
    assert engine("--spec-type", "none").request_spec({"timings": {"predicted_n": 64}}, 64) is None


def test_a_hub_revision_is_refused_with_how_to_pin_a_gguf():
    """llama.cpp's -hf takes no revision: a pinned hub id must fail at load time, not run unpinned."""
    import dataclasses
    from pathlib import Path

    from pytest_llmbench.config import ServerConfig
    from pytest_llmbench.models import ModelRef

    cfg = ServerConfig(
        name="gguf",
        engine="llamacpp",
        launcher="docker",
        source=Path("x.yaml"),
        model=ModelRef("hub", "unsloth/Qwen3.8-Flash-Next-GGUF@766911a6", revision="766911a6"),
    )
    key, message = LlamaCppEngine.validate(cfg)
    assert key == "model" and "@766911a6" in message and "local path" in message
    unpinned = dataclasses.replace(cfg, model=ModelRef("hub", "unsloth/Qwen3.8-Flash-Next-GGUF"))
    assert LlamaCppEngine.validate(unpinned) is None
