"""The shape of a config file, declared once: the loader's checks (config.py) and the JSON Schema that
editors and ``check-jsonschema`` read (config.schema.json) are both made from the dataclasses below.

Each key is a dataclass field: its type hint is the type (``str``, ``int``, ``float``, ``list[…]``,
``dict[str, …]``, unions, a nested dataclass), and :func:`key` adds what a hint cannot say, a
description, a bound, a pattern with the words the error uses, the registry whose names are allowed.
:func:`problem` checks a value against a field for the loader; :func:`json_schema` writes the same
declaration as JSON Schema (draft 2020-12).

Why dataclasses and not pydantic: the declaration is about twenty keys of plain types, and the hand
errors (``file: config 'x', key 'gpus': must be an integer, got str 'many'``) are the contract users
and tests rely on; pydantic would be a new runtime dependency for every user (a compiled core, a
major-version API history) whose error messages would have to be translated back into that one line,
and whose generated schema would still need the registry's engine names and the defaults rule added
by hand. Under 200 lines over the standard library do both jobs from one declaration.

What only the loader checks (the schema cannot see across keys or outside the file): flag-set and
``{models.NAME}`` references, duplicate names, that a model file exists. Engine and launcher names:
the committed schema lists the built-in registry's; the loader leaves them to the session's registry
(plugins add engines), which ``check-config`` and a pytest session consult after loading.

Where the schema lives: ``config.schema.json`` beside this module, shipped as package data rather than
kept in docs/, so an installed plugin carries the schema of its own loader (``python -m pytest_llmbench
check-config --print-schema`` copies it out); a test fails when it drifts from this declaration.
"""

from __future__ import annotations

import dataclasses
import json
import re
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: The committed schema (package data: an installed plugin carries the schema of its own loader).
SCHEMA_FILE = Path(__file__).with_name("config.schema.json")
#: How to rewrite it after changing a declaration below.
REGENERATE = "python -m pytest_llmbench check-config --print-schema > src/pytest_llmbench/config.schema.json"

CONFIG_NAME = r"^[A-Za-z0-9][A-Za-z0-9_.-]*$"
MARK_NAME = r"^[A-Za-z_][A-Za-z0-9_]*$"
ENV_NAME = r"^[A-Za-z_][A-Za-z0-9_]*$"


def key(
    description: str,
    *,
    words: str | None = None,
    pattern: str | None = None,
    pattern_words: str | None = None,
    minimum: float | None = None,
    above: float | None = None,
    registry: str | None = None,
    default: Any = None,
    required: bool = False,
    required_somewhere: bool = False,
) -> Any:
    """A declared key. ``words`` names the type in errors ("must be an integer"); ``pattern`` applies to
    the value, or to each item of a list, with ``pattern_words`` as the error (``{item}``: the item); ``minimum``/``above`` are
    inclusive/exclusive bounds; ``registry`` ("engines"/"launchers") lists the allowed names in the
    schema; ``required_somewhere``: on the config or in ``defaults``."""
    meta = {
        "description": description,
        "words": words,
        "pattern": pattern,
        "pattern_words": pattern_words,
        "minimum": minimum,
        "above": above,
        "registry": registry,
        "default": default,
        "required": required,
        "required_somewhere": required_somewhere,
    }
    return dataclasses.field(default=None, metadata=meta)


Scalar = str | int | float  # a flag or env value: numbers are written on the command line as text


@dataclass(frozen=True)
class DerivedModel:
    """A model made at server start from another with the engine's quantizer, and cached."""

    quantize: str = key("the model to requantize: a local file or {models.NAME}", required=True)
    type: str = key("the quantization type, e.g. Q2_K", required=True)


Model = str | DerivedModel


@dataclass(frozen=True)
class ServerKeys:
    """One server config (an entry of ``configs:``; ``defaults:`` takes the same keys but ``name``)."""

    name: str = key(
        "names the config in test ids, results and baselines (it names a folder)",
        pattern=CONFIG_NAME,
        pattern_words="use letters, digits, '.', '_' and '-' only (it names a folder)",
        required=True,
    )
    engine: str = key("the serving engine", registry="engines", required_somewhere=True)
    launcher: str = key("how the server runs", registry="launchers", default="subprocess")
    model: Model = key(
        "a local path (relative to this file), dist://DIST/PATH (a file inside an installed wheel), a hub id "
        "(id@revision pins it), {models.NAME}, or {quantize: MODEL, type: QUANT}",
        words="a path, a dist:// reference or a mapping",
        required_somewhere=True,
    )
    models: dict[str, Model] = key(
        "named models for {models.NAME} (added to the file's models:)", words="a mapping of name → model"
    )
    flags: list[str] = key("flag sets (names under flag_sets:), in order", words="a list of flag-set names")
    args: list[Scalar] = key("flags appended after the flag sets; {models.NAME} and {env:VAR} expand")
    env: dict[str, Scalar] = key(
        "environment of the server; {models.NAME} and {env:VAR} expand; masked in logs", words="a mapping of strings"
    )
    marks: list[str] = key(
        "pytest marks of the config's tests (pytest -m NAME); added to the defaults' marks",
        words="a list of mark names",
        pattern=MARK_NAME,
        pattern_words="mark {item!r} is not a valid Python identifier",
    )
    gpus: int = key("GPUs the server needs (the runner gives it disjoint ones)", minimum=0, default=0)
    startup_timeout: float = key(
        "seconds to wait for the server to be ready", words="a number of seconds", above=0, default=600
    )
    image: str = key("container image (the docker launcher)")
    description: str = key("what this config is, for people and the report")
    request: dict[str, Any] = key("fields every request to this server carries (e.g. chat_template_kwargs)")
    engine_options: dict[str, Any] = key("engine-specific knobs that are not launch flags (e.g. binary)")
    api_key_env: str = key(
        "the environment variable that holds the API key the server wants: sent as 'Authorization: Bearer' "
        "on every request, control calls included, and never written out; the server gets it from you "
        '(args: [--api-key, "{env:NAME}"])',
        words="the name of an environment variable",
        pattern=ENV_NAME,
        pattern_words="{item!r} is not an environment variable name (letters, digits and '_')",
    )
    slo: dict[str, float] = key(
        "service-level objectives in ms (ttft, tpot, itl, e2el; vLLM --goodput semantics): scenarios report "
        "slo_attainment, request_goodput and output_token_goodput (docs/SLO.md); --llmbench-slo and a "
        "Scenario's slo win over it",
        words="a mapping of SLO name → ms",
    )
    scenarios: list[str] = key(
        "the scenarios this config runs: shell-style patterns matched against each test's Scenario name "
        "(a parametrized Scenario), else its test name and parameter id; tests that match none are left out "
        "for this config, and --collect-only says which and why (docs/SLO.md). Empty or absent: all",
        words="a list of scenario or test name patterns",
    )


@dataclass(frozen=True)
class ComparePairKeys:
    """Two configs compared by interleaved rounds: the candidate's tests run next to the reference."""

    reference: str = key("the config the candidate is compared with", required=True)
    candidate: str = key("the config whose tests run as comparisons", required=True)
    name: str = key("a label for the pair")


@dataclass(frozen=True)
class ConfigFileKeys:
    """A pytest-llmbench config file: server configs for the benches (docs/CONFIG.md)."""

    flag_sets: dict[str, list[Scalar] | Scalar] | None = key("named flag lists, written once, used by flags:")
    defaults: ServerKeys | None = key("keys every config takes unless it sets them (marks add up)")
    models: dict[str, Model] | None = key("named models for {models.NAME}; one may derive from one before it")
    configs: list[ServerKeys] = key("the server configs", words="a list of configs", required=True)
    compare: list[ComparePairKeys] | None = key("pairs of configs to compare (docs/COMPARE.md)")


def keys_of(cls: type) -> dict[str, dataclasses.Field[Any]]:
    return {f.name: f for f in dataclasses.fields(cls)}


def hint_of(cls: type, name: str) -> Any:
    return typing.get_type_hints(cls)[name]


# --- the loader's side: one value against one hint -------------------------------------------------------

_WORDS = {str: "a string", int: "an integer", float: "a number"}


def words_for(hint: Any) -> str:
    """How an error names a type: "an integer", "a list of strings", "a mapping"."""
    origin = typing.get_origin(hint)
    if hint in _WORDS:
        return _WORDS[hint]
    if origin in (types.UnionType, typing.Union):
        return words_for(typing.get_args(hint)[0])  # Scalar: "a string" (a number is taken as its text)
    if origin is list:
        return "a list of strings"
    if origin is dict:
        return "a mapping"
    return "a value of another type"


def _is(value: Any, hint: Any) -> bool:
    """Whether ``value`` has the shape ``hint`` declares (items of lists and mappings included)."""
    if hint is Any:
        return True
    origin = typing.get_origin(hint)
    if origin in (types.UnionType, typing.Union):
        return any(_is(value, h) for h in typing.get_args(hint))
    if hint is type(None):
        return value is None
    if isinstance(value, bool):  # YAML true/false is neither a number nor a string
        return False
    if hint is float:
        return isinstance(value, int | float)
    if hint in (str, int):
        return isinstance(value, hint)
    if origin is list:
        (item,) = typing.get_args(hint)
        return isinstance(value, list) and all(_is(v, item) for v in value)
    if origin is dict:
        _, item = typing.get_args(hint)
        return isinstance(value, dict) and all(isinstance(k, str) and _is(v, item) for k, v in value.items())
    if dataclasses.is_dataclass(hint):
        return isinstance(value, dict)  # its keys are checked where it is read (models.parse_model_ref)
    raise TypeError(f"config_schema: no rule for type {hint!r}")


def problem(cls: type, name: str, value: Any) -> tuple[str, str | None] | None:
    """(message, sub-key or None) when ``value`` breaks what ``cls.name`` declares; None when it fits.
    The sub-key names the offending entry of a mapping (``env.A``)."""
    meta = keys_of(cls)[name].metadata
    hint = hint_of(cls, name)
    if not _is(value, hint):
        if typing.get_origin(hint) is dict and isinstance(value, dict):
            _, item = typing.get_args(hint)
            for k, v in value.items():
                if not _is(v, item):
                    return f"value of {k} must be {words_for(item)}, got {v!r}", f"{name}.{k}"
        if typing.get_origin(hint) is list and isinstance(value, list):
            (item,) = typing.get_args(hint)
            bad = next(v for v in value if not _is(v, item))
            return f"items must be strings, got {bad!r}", None
        words = meta["words"] or words_for(hint)
        got = repr(value) if isinstance(value, bool) else f"{type(value).__name__} {value!r}"
        return f"must be {words}, got {got}", None
    if meta["pattern"]:
        anchored = meta["pattern"].removeprefix("^").removesuffix("$")  # JSON Schema patterns search
        for item in value if isinstance(value, list) else [value]:
            if not re.fullmatch(anchored, item):
                return meta["pattern_words"].format(item=item), None
    if meta["minimum"] is not None and value < meta["minimum"]:
        return f"must be ≥ {meta['minimum']:g}", None
    if meta["above"] is not None and value <= meta["above"]:
        return f"must be > {meta['above']:g}", None
    return None


# --- the schema's side -------------------------------------------------------------------------------

_JSON_TYPE = {str: "string", int: "integer", float: "number", type(None): "null"}


def _schema_of(hint: Any, names: Callable[[str], list[str]]) -> dict[str, Any]:
    if hint is Any:
        return {}
    origin = typing.get_origin(hint)
    if origin in (types.UnionType, typing.Union):
        members = typing.get_args(hint)
        simple = [_JSON_TYPE[m] for m in members if m in _JSON_TYPE]
        if "number" in simple and "integer" in simple:
            simple.remove("integer")
        rest = [_schema_of(m, names) for m in members if m not in _JSON_TYPE]
        typed = [{"type": simple[0] if len(simple) == 1 else simple}] if simple else []
        return typed[0] if not rest else {"anyOf": rest + typed}
    if hint in _JSON_TYPE:
        return {"type": _JSON_TYPE[hint]}
    if origin is list:
        return {"type": "array", "items": _schema_of(typing.get_args(hint)[0], names)}
    if origin is dict:
        return {"type": "object", "additionalProperties": _schema_of(typing.get_args(hint)[1], names)}
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return {"$ref": f"#/$defs/{hint.__name__}"}
    raise TypeError(f"config_schema: no rule for type {hint!r}")


def _object(cls: type, names: Callable[[str], list[str]], leave_out: tuple[str, ...] = ()) -> dict[str, Any]:
    props: dict[str, Any] = {}
    for name, f in keys_of(cls).items():
        if name in leave_out:
            continue
        meta = f.metadata
        prop = _schema_of(hint_of(cls, name), names)
        item = prop["items"] if prop.get("type") == "array" else prop
        if meta["pattern"]:
            item["pattern"] = meta["pattern"]
        if meta["registry"]:
            prop["enum"] = names(meta["registry"])
        if meta["minimum"] is not None:
            prop["minimum"] = meta["minimum"]
        if meta["above"] is not None:
            prop["exclusiveMinimum"] = meta["above"]
        if meta["default"] is not None:
            prop["default"] = meta["default"]
        props[name] = {"description": meta["description"], **prop}
    out: dict[str, Any] = {"type": "object", "description": (cls.__doc__ or "").strip()}
    out["properties"] = props
    out["additionalProperties"] = False
    required = [n for n, f in keys_of(cls).items() if f.metadata["required"] and n not in leave_out]
    if required:
        out["required"] = required
    return out


def json_schema(registry: Mapping[str, Sequence[str]]) -> dict[str, Any]:
    """The JSON Schema of a config file, from the declarations above; ``registry`` gives the names a key
    with ``registry=`` allows ({"engines": [...], "launchers": [...]}: the caller knows the registry, this
    module imports nothing of the package)."""

    def names(kind: str) -> list[str]:
        return sorted(registry[kind])

    root = _object(ConfigFileKeys, names)
    root["properties"]["defaults"] = {
        "description": keys_of(ConfigFileKeys)["defaults"].metadata["description"],
        "anyOf": [{"$ref": "#/$defs/Defaults"}, {"type": "null"}],
    }
    # engine and model are required on each config unless defaults: sets them
    root["allOf"] = [
        {
            "if": {"not": {"required": ["defaults"], "properties": {"defaults": {"type": "object", "required": [k]}}}},
            "then": {"properties": {"configs": {"items": {"required": [k]}}}},
        }
        for k, f in keys_of(ServerKeys).items()
        if f.metadata["required_somewhere"]
    ]
    defaults = _object(ServerKeys, names, leave_out=("name",))
    defaults["description"] = "Keys every config takes unless it sets them."
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "pytest-llmbench config file",
        **root,
        "$defs": {
            "ServerKeys": _object(ServerKeys, names),
            "Defaults": defaults,
            "DerivedModel": _object(DerivedModel, names),
            "ComparePairKeys": _object(ComparePairKeys, names),
        },
    }


def schema_text(registry: Mapping[str, Sequence[str]]) -> str:
    """The schema as committed: stable key order, two-space indent, a final newline."""
    return json.dumps(json_schema(registry), indent=2, ensure_ascii=False) + "\n"


__all__ = ["REGENERATE", "SCHEMA_FILE", "ComparePairKeys", "ConfigFileKeys", "ServerKeys", "json_schema", "problem"]
