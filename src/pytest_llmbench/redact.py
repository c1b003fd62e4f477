"""Secrets never leave the process: one rule for what is secret, one scrubber for every output.

Two layers. By name, one rule (:func:`is_secret_name`), not a list of spellings: a name is split into
words (``_``, ``-``, ``.`` and camelCase), and it is secret when a word is a secret word (token, key,
secret, password, pass, passphrase, credential(s), creds, auth, authorization, cookie, bearer) or ends
in one of the unambiguous ones (``HFTOKEN``, ``OPENAIAPIKEY``, ``clientSecret``). A flag is secret when
any spelling of it is: the engine reads its own CLI's short forms (``-hft`` is llama-server's
``--hf-token``) and hands them to :func:`register_options`, with whether each takes a value. Secret fields (env, flags, server info) are
masked wherever they are written as fields.
By value: every such value known to this process (the configs' env, args and API key, the host's
secret-named variables) is registered, and :func:`scrub` replaces it in any text that is written out —
results lines, error messages with command lines and log tails, JUnit properties — so a secret that
turns up somewhere unexpected (a flag echoed into an error) is still masked.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

MASK = "***"
#: Words that make a name secret when they are a whole word of it: HF_TOKEN, DB_PASS, OPENAI_KEY, --api-key.
#: Plural or longer words are not (max_tokens, tokenizer_path, AUTHOR, KEYRING, BYPASS).
_SECRET_WORDS = frozenset(
    "TOKEN KEY APIKEY SECRET PASSWORD PASSWD PASS PASSPHRASE CREDENTIAL CREDENTIALS CREDS AUTH "
    "AUTHORIZATION COOKIE BEARER".split()
)
#: Words that make a name secret also as the end of a run-together word: HFTOKEN, OPENAIAPIKEY, DBPASSWORD.
#: Not KEY or PASS alone (MONKEY, BYPASS).
_SECRET_ENDINGS = ("TOKEN", "APIKEY", "ACCESSKEY", "SECRET", "PASSWORD", "PASSWD", "PASSPHRASE")
_WORD_BREAK = re.compile(r"[^A-Za-z0-9]+|(?<=[a-z0-9])(?=[A-Z])")
#: Shorter values are not scrubbed from free text (masking "1" everywhere would garble numbers).
MIN_SCRUB_LEN = 6

_known: set[str] = set()
#: Flag spellings whose value is secret because another spelling of the same option names a secret (``-hft``).
_secret_flags: set[str] = set()
#: Secret-named flags the engine's CLI says take no value (``--cors-credentials``): the next word is a flag.
_switches: set[str] = set()
_lock = threading.Lock()
#: A word on a command line that is a flag, not a value (``-5`` and ``-0.5`` are values).
_FLAG_WORD = re.compile(r"^--?[A-Za-z]")


class CliOption(NamedTuple):
    """One option of a server's CLI as its help lists it: every spelling, and whether a value follows."""

    spellings: tuple[str, ...]
    takes_value: bool = True


def is_secret_name(name: str) -> bool:
    """``HF_TOKEN``, ``--hf-token``, ``api_key``, ``OPENAI_KEY``, ``DB_PASS``, ``apiKey``, ``HFTOKEN`` …: names
    whose values are secret."""
    words = [w.upper() for w in _WORD_BREAK.split(name) if w]
    return any(w in _SECRET_WORDS or w.endswith(_SECRET_ENDINGS) for w in words)


def is_secret_flag(flag: str) -> bool:
    """A command-line flag whose value is secret: its own name says so, or another spelling of the same
    option does (learnt from the engine's CLI by :func:`register_options`), and it takes a value."""
    if not flag.startswith("-"):
        return False
    with _lock:
        if flag in _secret_flags:
            return True
        if flag in _switches:
            return False
    return is_secret_name(flag)


def register_options(options: Iterable[CliOption]) -> None:
    """Learn an engine's options (``CliOption(("-hft", "--hf-token"))``): every spelling of an option that
    has a secret-named spelling is secret, unless the option takes no value."""
    secret = [o for o in options if any(is_secret_name(f) for f in o.spellings)]
    with _lock:
        _secret_flags.update(f for o in secret if o.takes_value for f in o.spellings)
        _switches.update(f for o in secret if not o.takes_value for f in o.spellings)


def _value_after(argv: Sequence[str], i: int) -> bool:
    """Whether ``argv[i + 1]`` is the value of the flag at ``i`` (not another flag, not past the end)."""
    return i + 1 < len(argv) and not _FLAG_WORD.match(argv[i + 1])


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
        if not is_secret_flag(flag):
            continue
        if eq:
            out.append(value)
        elif _value_after(args, i):
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
    for i, a in enumerate(argv):
        if mask_next:
            out.append(MASK)
            mask_next = False
            continue
        flag, eq, _ = a.partition("=")
        secret = is_secret_flag(flag)
        if secret and eq:
            out.append(f"{flag}={MASK}")
        else:
            out.append(a)
            mask_next = secret and _value_after(argv, i)
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
