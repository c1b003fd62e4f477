"""The logprob fallback against a real llama-server (SmolLM2-135M on CPU), and its cache checks."""

from __future__ import annotations

import math

import httpx
import pytest

from pytest_llmbench.datasets import decisions as D
from pytest_llmbench.evals.decisions.clients import LETTERS, client_for
from pytest_llmbench.evals.decisions.determinism import cold_pass, cold_warm, compare_passes, greedy_cached_vs_uncached
from pytest_llmbench.evals.decisions.metrics import summary

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def smol(smol_server):
    """The shared real llama-server (tests/conftest.py: smol-nospec, stopped after this module)."""
    return smol_server


@pytest.fixture(scope="module")
def devset():
    return D.typed_gguf_devset()[::3]  # 20 items: 8 choice, 6 score, 6 yes/no


def test_fallback_answers_every_devset_item(smol, devset):
    decisions = client_for(smol, concurrency=2).run(devset)
    assert len(decisions) == len(devset)  # nothing dropped
    assert all(d.reason for d in decisions if not d.ok)
    answered = [d for d in decisions if d.ok]
    assert len(answered) >= 0.8 * len(devset), [d.reason for d in decisions if not d.ok]
    for d in answered:
        assert sum(d.probs) == pytest.approx(1.0) and all(p > 0 for p in d.probs)
        # temperature 0, one token: when the model wrote an option letter, that letter is the top answer
        first = (d.meta.get("first_token") or "").strip()
        if first in LETTERS[: len(d.options)] and d.meta.get("missing_options") == 0:
            assert d.top == d.options[LETTERS.index(first)]
    s = summary(decisions)
    print(f"\nsmol-nospec typed-gguf devset (20): {s}")
    assert 0.0 <= s["accuracy"] <= 1.0 and math.isfinite(s["log_loss"])


def test_fallback_probabilities_match_the_servers_own_logprobs(smol, devset):
    """Recompute one decision from the raw response: exp(logprob) of each letter, renormalised."""
    client = client_for(smol)
    case = next(c for c in devset if next(iter(c.questions.values())).type == "choice")
    q = next(iter(case.questions.values()))
    # Both requests with a cold cache: llama.cpp's logprobs shift when the prefix is reused (the
    # determinism bench measures exactly that), so a warm second request would not be comparable.
    assert smol.flush_cache() is None
    raw = smol.client.post("/v1/chat/completions", json=client.body(case, q)).json()
    top = raw["choices"][0]["logprobs"]["content"][0]["top_logprobs"]
    assert len(top) == 20
    mass = {L: sum(math.exp(t["logprob"]) for t in top if t["token"].strip() == L) for L in LETTERS[: len(q.options)]}
    if not all(mass.values()):
        pytest.skip(f"not every option letter is in the top 20 here: {mass}")
    expected = [mass[L] / sum(mass.values()) for L in LETTERS[: len(q.options)]]
    assert smol.flush_cache() is None
    (d,) = client.run([case])
    assert d.ok and d.probs == pytest.approx(expected, abs=1e-6)


def test_cold_and_warm_passes_and_cached_greedy_text(smol, devset):
    client = client_for(smol, concurrency=1)
    cold, warm, note = cold_warm(smol, client, devset[:4])  # one question each, asked cold and warm
    assert note is None  # llama.cpp erased its slots
    diff = compare_passes(cold, warm)
    print(f"\ncold vs warm on 4 devset items: {diff.as_dict()}")
    assert diff.n == sum(d.ok for d in cold) and diff.max_prob_shift < 0.5
    g = greedy_cached_vs_uncached(smol, [c.state_text() for c in devset[:2]], max_tokens=16)
    print(f"greedy cached vs uncached: {g.as_dict()} {g.examples}")
    assert g.failed == 0 and g.n == 2
    assert g.cache_hits == 2  # the second request really reused the cached prefix


def _max_busy_slots(server, run):
    """Run ``run()`` while polling /slots; the most slots llama-server had processing at once."""
    import threading

    seen, stop = [0], threading.Event()

    def poll():
        with httpx.Client(base_url=server.base_url, timeout=5.0) as http:
            while not stop.is_set():
                try:
                    busy = sum(1 for s in http.get("/slots").json() if s.get("is_processing"))
                except (httpx.HTTPError, ValueError):
                    continue
                seen[0] = max(seen[0], busy)

    t = threading.Thread(target=poll, daemon=True)
    t.start()
    try:
        out = run()
    finally:
        stop.set()
        t.join(10)
    return out, seen[0]


def test_one_in_flight_and_cold_passes_as_the_post_ran_them(smol, devset):
    """The decisions post: one request per case, 1 in flight, passes cold. The server (4 slots) never sees
    two of our requests at once, and a cold pass after a warm one reuses no prompt prefix."""
    client = client_for(smol, concurrency=1)
    client.run(devset[:2])  # warm the slots
    (cold, note), busy = _max_busy_slots(smol, lambda: cold_pass(smol, client, devset[:3]))
    assert note is None and len(cold) == sum(len(c.questions) for c in devset[:3])
    assert busy <= 1, f"{busy} slots processing at once with concurrency=1"
    # control: the same probe does see parallel work when the client allows it (4 cases, 4 in flight)
    _, busy4 = _max_busy_slots(smol, lambda: client_for(smol, concurrency=4).run(devset[:4]))
    assert busy4 >= 2, "the /slots probe never saw two requests at once; it cannot check 1 in flight"
