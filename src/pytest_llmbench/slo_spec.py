"""An SLO spec (``ttft:500,tpot:50`` or a mapping) → limits in ms: read by the config loader, the
command line and a Scenario alike, so it imports nothing of the package (workload/slo.py judges requests)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: The SLO keys, as ``--goodput`` names them (``e2el``: end-to-end latency), plus ``itl``.
SLO_KEYS = ("ttft", "tpot", "itl", "e2el")


class SloError(ValueError):
    """An SLO spec that cannot be read; the message names where it came from."""


def parse_slo(spec: str | Mapping[str, Any] | None, where: str) -> dict[str, float]:
    """``"ttft:500,tpot:50"`` or ``{ttft: 500, tpot: 50}`` → ``{"ttft": 500.0, "tpot": 50.0}`` (ms).

    ``where`` names the source (``--llmbench-slo``, ``config 'x' (file), key 'slo'``) for the error."""
    if spec is None or spec == "" or spec == {}:
        return {}
    if isinstance(spec, str):
        pairs: list[tuple[str, Any]] = []
        for part in spec.split(","):
            name, sep, value = part.strip().partition(":")
            if not sep:
                raise SloError(f"{where}: {part.strip()!r} is not NAME:MS (e.g. ttft:500,tpot:50)")
            pairs.append((name.strip(), value.strip()))
    elif isinstance(spec, Mapping):
        pairs = list(spec.items())
    else:
        raise SloError(f"{where}: an SLO is 'ttft:500,tpot:50' or a mapping, got {type(spec).__name__}")
    out: dict[str, float] = {}
    for name, value in pairs:
        if name not in SLO_KEYS:
            raise SloError(f"{where}: unknown SLO {name!r}; the SLOs are {', '.join(SLO_KEYS)} (ms)")
        try:
            limit = float(value)
        except (TypeError, ValueError):
            raise SloError(f"{where}: SLO {name!r} must be a number of ms, got {value!r}") from None
        if isinstance(value, bool) or not limit > 0:
            raise SloError(f"{where}: SLO {name!r} must be a positive number of ms, got {value!r}")
        out[name] = limit
    return out
