"""Named sampling protocols: sampling, limits, prompts per set and users, bundled under one name.

Why: the benchmark posts compare accept lengths only under the same protocol (the DFlash2 card's xhigh at
temperature 1.0 vs "medium" vs server defaults), so a bench says ``protocol="dflash2-card"`` rather than
repeating five numbers that drift apart between tests.

``protocol_body(name, **overrides)`` gives the request-body fields; overrides win, and an override of
``None`` removes the field (for an engine that refuses it, e.g. ``reasoning_effort=None``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any


@dataclass(frozen=True)
class Protocol:
    """Request fields plus how a set is run (prompts per set, concurrent users)."""

    name: str
    body: Mapping[str, Any]
    prompts_per_set: int
    users: int = 1
    description: str = ""
    seed: int = 1  # which prompts a set samples (not the server's sampling seed)

    @property
    def max_tokens(self) -> int | None:
        return self.body.get("max_tokens")

    def request_body(self, **overrides: Any) -> dict[str, Any]:
        return merge_body(self.body, overrides)


def merge_body(base: Mapping[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` updated by ``overrides``; a ``None`` override deletes the key."""
    out = dict(base)
    for k, v in overrides.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = v
    return out


_CARD_SAMPLING = {"temperature": 1.0, "top_p": 0.95, "top_k": 20, "max_tokens": 4096}

PROTOCOLS: dict[str, Protocol] = {}


def register(protocol: Protocol) -> Protocol:
    """Add a protocol (a project may define its own in a conftest)."""
    if protocol.name in PROTOCOLS:
        raise ValueError(f"protocol {protocol.name!r} is already registered")
    PROTOCOLS[protocol.name] = replace(protocol, body=MappingProxyType(dict(protocol.body)))
    return PROTOCOLS[protocol.name]


register(
    Protocol(
        "dflash2-card",
        {**_CARD_SAMPLING, "reasoning_effort": "xhigh"},
        prompts_per_set=32,
        users=1,
        description="the DFlash2 model card's accept-length protocol: xhigh, T=1.0, top-p 0.95, top-k 20, 4096 new",
    )
)
register(
    Protocol(
        "dflash2-card-medium",
        {**_CARD_SAMPLING, "reasoning_effort": "medium"},
        prompts_per_set=32,
        users=1,
        description="the card's sampling at reasoning_effort=medium (the posts' serving effort)",
    )
)
register(
    Protocol(
        "dflash2-card-cpu",
        {"temperature": 1.0, "top_p": 0.95, "top_k": 20, "max_tokens": 64, "seed": 1},
        prompts_per_set=5,
        users=1,
        description="the card's sampling at CPU size (SmolLM2 on 2 cores): 6 prompts, 96 new tokens, a fixed "
        "sampling seed, no reasoning effort (the model does not think)",
    )
)
register(
    Protocol(
        "speed-bench",
        {"max_tokens": 4096, "reasoning_effort": "medium"},
        prompts_per_set=10,
        users=1,
        description="the posts' SPEED-Bench runs: server-default sampling, max 4096, medium, 10 prompts per group",
    )
)
register(
    Protocol(
        "gsm8k-seeds",
        {"max_tokens": 32768, "reasoning_effort": "medium"},
        prompts_per_set=1319,
        users=32,
        description="the posts' GSM8K: full test split, the model's own sampling, 32k max, 32 in flight",
    )
)
register(
    Protocol(
        "bfcl-qwen-fc",
        {"temperature": 0.001, "max_tokens": 4096},
        prompts_per_set=205,
        users=1,
        description="bfcl-eval's defaults for the Qwen FC handler: temperature 0.001, up to 4096 new tokens",
    )
)
register(
    Protocol(
        "bfcl-cpu",
        {"temperature": 0.001, "max_tokens": 128, "seed": 1},
        prompts_per_set=50,
        users=1,
        description="BFCL at CPU size: ~50 cases, 128 new tokens",
    )
)
register(
    Protocol(
        "cpu-greedy",
        {"temperature": 0.0, "max_tokens": 128, "seed": 1},
        prompts_per_set=6,
        users=1,
        description="greedy decoding at CPU size, for token counts that repeat from run to run",
    )
)


def get_protocol(name: str) -> Protocol:
    """The protocol called ``name``; an unknown name lists the known ones."""
    try:
        return PROTOCOLS[name]
    except KeyError:
        raise KeyError(f"unknown protocol {name!r}; known protocols: {', '.join(sorted(PROTOCOLS))}") from None


def protocol_body(name: str, **overrides: Any) -> dict[str, Any]:
    """Request-body fields of protocol ``name`` with ``overrides`` applied (they win; None removes)."""
    return get_protocol(name).request_body(**overrides)


__all__ = ["PROTOCOLS", "Protocol", "get_protocol", "merge_body", "protocol_body", "register"]
