"""Secrets never leave the process: one rule for what is secret, one scrubber for every output.

Two layers. By name: an environment variable, a server flag or a server-info key whose name says token,
secret, password, API key, credential or auth has its value masked wherever it is written as a field.
By value: every such value known to this process (the configs' env and args, the host's secret-named
variables) is registered, and :func:`scrub` replaces it in any text that is written out — results
lines, error messages with command lines and log tails, JUnit properties — so a secret that turns up
somewhere unexpected (a flag echoed into an error) is still masked.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

MASK = "***"
#: Whole ``_``-separated words, so HF_TOKEN and --api-key are secret while tokenizer_path and
#: max_total_num_tokens are not.
_SECRET_NAME = re.compile(
    r"(^|_)(TOKEN|SECRET|PASSWORD|PASSWD|APIKEY|API_KEY|CREDENTIALS?|AUTH|ACCESS_KEY|"
    r"PRIVATE_KEY|SECRET_KEY)(_|$)",
    re.I,
)
#: Shorter values are not scrubbed from free text (masking "1" everywhere would garble numbers).
MIN_SCRUB_LEN = 6

_known: set[str] = set()
_lock = threading.Lock()


def is_secret_name(name: str) -> bool:
    """``HF_TOKEN``, ``--hf-token``, ``api_key``, ``OPENAI_API_KEY`` …: names whose values are secret."""
    return bool(_SECRET_NAME.search(name.lstrip("-").replace("-", "_")))


def register(values: Iterable[str]) -> None:
    """Remember secret values so :func:`scrub` masks them in any text written from now on."""
    with _lock:
        _known.update(v for v in values if isinstance(v, str) and len(v) >= MIN_SCRUB_LEN)


def register_environ(environ: Mapping[str, str] | None = None) -> None:
    """The host's secret-named variables (a container may inherit them; an engine may echo them)."""
    environ = os.environ if environ is None else environ
    register(v for k, v in environ.items() if is_secret_name(k))


def secret_args(args: Sequence[str]) -> list[str]:
    """Values of secret flags in a command line: ``--hf-token X`` and ``--api-key=X``."""
    out = []
    for i, a in enumerate(args):
        flag, eq, value = a.partition("=")
        if not flag.startswith("-") or not is_secret_name(flag):
            continue
        if eq:
            out.append(value)
        elif i + 1 < len(args):
            out.append(args[i + 1])
    return out


def scrub(text: str) -> str:
    """``text`` with every registered secret value replaced by the mask."""
    with _lock:
        known = sorted(_known, key=len, reverse=True)  # a longer secret containing a shorter one goes first
    for value in known:
        if value in text:
            text = text.replace(value, MASK)
    return text


def env(environ: Mapping[str, str]) -> dict[str, str]:
    """An environment with secret-named values masked."""
    return {k: (MASK if is_secret_name(k) and v else v) for k, v in environ.items()}


def args(argv: Sequence[str]) -> list[str]:
    """A command line with the values of secret flags masked (``--hf-token ***``, ``--api-key=***``)."""
    out: list[str] = []
    mask_next = False
    for a in argv:
        if mask_next:
            out.append(MASK)
            mask_next = False
            continue
        flag, eq, _ = a.partition("=")
        secret = flag.startswith("-") and is_secret_name(flag)
        if secret and eq:
            out.append(f"{flag}={MASK}")
        else:
            out.append(a)
            mask_next = secret
    return out


def mapping(info: Any) -> Any:
    """A nested mapping (server info) with string values under secret-named keys masked."""
    if isinstance(info, Mapping):
        return {
            k: (MASK if isinstance(v, str) and v and is_secret_name(str(k)) else mapping(v)) for k, v in info.items()
        }
    if isinstance(info, list):
        return [mapping(v) for v in info]
    return info
