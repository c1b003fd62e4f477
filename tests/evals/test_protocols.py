"""Named protocols: the card's numbers, the medium variant, and how overrides merge."""

import pytest

from pytest_llmbench.evals.protocols import PROTOCOLS, Protocol, get_protocol, merge_body, protocol_body, register


def test_dflash2_card_is_the_cards_protocol():
    p = get_protocol("dflash2-card")
    assert p.body == {"temperature": 1.0, "top_p": 0.95, "top_k": 20, "max_tokens": 4096, "reasoning_effort": "xhigh"}
    assert (p.prompts_per_set, p.users) == (32, 1)


def test_medium_differs_only_in_reasoning_effort():
    card, medium = protocol_body("dflash2-card"), protocol_body("dflash2-card-medium")
    assert medium.pop("reasoning_effort") == "medium"
    assert card.pop("reasoning_effort") == "xhigh"
    assert card == medium


def test_cpu_variant_keeps_the_card_sampling_at_small_size():
    cpu, card = get_protocol("dflash2-card-cpu"), get_protocol("dflash2-card")
    assert {k: cpu.body[k] for k in ("temperature", "top_p", "top_k")} == {
        k: card.body[k] for k in ("temperature", "top_p", "top_k")
    }
    assert cpu.max_tokens < card.max_tokens and cpu.prompts_per_set < card.prompts_per_set


def test_overrides_win_and_none_removes():
    body = protocol_body("dflash2-card", max_tokens=256, reasoning_effort=None, seed=7)
    assert body["max_tokens"] == 256 and body["seed"] == 7
    assert "reasoning_effort" not in body
    assert body["top_k"] == 20


def test_overrides_do_not_leak_into_the_registry():
    protocol_body("dflash2-card", max_tokens=1)
    assert get_protocol("dflash2-card").max_tokens == 4096
    with pytest.raises(TypeError):
        get_protocol("dflash2-card").body["max_tokens"] = 1  # read-only


def test_unknown_protocol_lists_the_known_ones():
    with pytest.raises(KeyError) as e:
        protocol_body("dflash3-card")
    msg = str(e.value)
    assert "dflash3-card" in msg
    for name in PROTOCOLS:
        assert name in msg


def test_register_refuses_a_duplicate_name():
    with pytest.raises(ValueError, match="already registered"):
        register(Protocol("dflash2-card", {}, prompts_per_set=1))


def test_merge_body_is_a_copy():
    base = {"a": 1}
    out = merge_body(base, {"b": 2, "a": None})
    assert out == {"b": 2} and base == {"a": 1}
