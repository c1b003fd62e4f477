"""Cold vs warm passes: counting changed answers, and what the cold pass sends."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest

from pytest_llmbench.datasets.decision_schema import Decision
from pytest_llmbench.engines.llamacpp import LlamaCppEngine
from pytest_llmbench.engines.sglang import SGLangEngine
from pytest_llmbench.evals.decisions.clients import LogprobClient
from pytest_llmbench.evals.decisions.determinism import cold_warm, compare_passes


def d(cid, probs, ok=True):
    return Decision(cid, "q", "choice", "g", ("a", "b", "c"), tuple(probs) if ok else None, None, ok=ok)


def test_compare_passes_counts_top_changes_and_the_largest_shift():
    a = [d("1", (0.5, 0.3, 0.2)), d("2", (0.6, 0.4, 0.0)), d("3", (0.2, 0.2, 0.6)), d("4", (1, 0, 0), ok=False)]
    b = [d("1", (0.45, 0.35, 0.2)), d("2", (0.3, 0.7, 0.0)), d("3", (0.2, 0.2, 0.6)), d("4", (1, 0, 0))]
    diff = compare_passes(a, b)
    assert (diff.n, diff.answers_changed, diff.failed_a, diff.failed_b) == (3, 1, 1, 0)
    assert diff.max_prob_shift == pytest.approx(0.3)
    assert diff.changed == [("2", "q")]


def test_cold_pass_flushes_and_disables_the_prompt_cache(decision_double, cases):
    flushes = []
    server = SimpleNamespace(engine=LlamaCppEngine(), flush_cache=lambda: flushes.append(1))

    def top(body):  # the "engine" answers B when the prefix came from its cache, A when computed fresh
        fresh = body.get("cache_prompt") is False
        return [
            {"token": "A", "logprob": math.log(0.6 if fresh else 0.4)},
            {"token": "B", "logprob": math.log(0.4 if fresh else 0.6)},
        ]

    decision_double.top_logprobs = top
    cold, warm, _ = cold_warm(server, LogprobClient(decision_double.base_url), cases)
    assert flushes == [1]
    bodies = [b for _, b in decision_double.requests]
    assert [b.get("cache_prompt") for b in bodies] == [False] * 9 + [None] * 9
    diff = compare_passes(cold, warm)
    assert diff.n == 9 and diff.answers_changed == 9 and diff.max_prob_shift == pytest.approx(0.2)


def test_identical_passes_change_nothing(decision_double, cases):
    server = SimpleNamespace(engine=SGLangEngine(), flush_cache=lambda: None)
    decision_double.top_logprobs = lambda body: [{"token": "A", "logprob": -0.2}, {"token": "B", "logprob": -1.8}]
    cold, warm, _ = cold_warm(server, LogprobClient(decision_double.base_url), cases)
    assert all("cache_prompt" not in b for _, b in decision_double.requests)  # only llama.cpp declares uncached fields
    assert compare_passes(cold, warm).answers_changed == 0
