"""YAML server configs → :class:`ServerConfig`.

A config file holds reusable flag sets, defaults, named models and a list of configs. A config's
command line is its engine's launch prefix + the flag sets it names (in order) + its own ``args``,
exactly how the seeds build six drafter configs from one shared flag list plus speculative flags::

    flag_sets:
      shared: [--mem-fraction-static, "0.41", --max-running-requests, "4"]
      dflash8: [--speculative-algorithm, DFLASH, --speculative-num-draft-tokens, "8"]
    defaults: {engine: sglang, launcher: docker, gpus: 1, marks: [nvfp4]}
    models:
      target: RadixArk/Qwen3.8-27B-NVFP4
    configs:
      - {name: nvfp4-nospec, model: "{models.target}", flags: [shared], marks: [nospec]}
      - {name: nvfp4-dflash8, model: "{models.target}", flags: [shared, dflash8], marks: [dflash]}

The keys, their types and bounds are declared once in :mod:`pytest_llmbench.config_schema`, which
also writes the JSON Schema editors read; this module applies them and checks what a schema cannot
(references between keys, model files). Every error names the file, the config and the key, in one line, so a bad config fails collection
with a message a user can act on. This module only parses: whether the engine and launcher a config
names exist, and whether they accept it, is checked against the registries the hooks filled
(:meth:`pytest_llmbench.registry.Registry.check`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_llmbench.config_schema import ConfigFileKeys, ServerKeys, keys_of, problem
from pytest_llmbench.errors import ConfigError
from pytest_llmbench.models import ModelRef, parse_model_ref

FILE_KEYS = set(keys_of(ConfigFileKeys))  # compare: read by compare/arms.py
CONFIG_KEYS = set(keys_of(ServerKeys))
_DEFAULT = {k: f.metadata["default"] for k, f in keys_of(ServerKeys).items()}
_PLACEHOLDER = re.compile(r"\{(models\.[A-Za-z0-9_-]+|env:[A-Za-z_][A-Za-z0-9_]*)\}")


@dataclass(frozen=True)
class ServerConfig:
    """One server to start: which engine, how, with which model and flags."""

    name: str
    engine: str
    model: ModelRef
    source: Path
    launcher: str = "subprocess"
    args: tuple[str, ...] = ()
    models: Mapping[str, ModelRef] = field(default_factory=dict)
    env: Mapping[str, str] = field(default_factory=dict)
    marks: tuple[str, ...] = ()
    gpus: int = 0
    startup_timeout: float = 600.0
    image: str | None = None
    description: str = ""
    # Extra request-body fields every request to this server carries (e.g. chat_template_kwargs).
    request: Mapping[str, Any] = field(default_factory=dict)
    # Engine-specific knobs that are not launch flags (e.g. {"metrics": true}).
    engine_options: Mapping[str, Any] = field(default_factory=dict)
    # The environment variable holding the server's API key: only its name is kept, so no repr, record or
    # error message of a config can carry the key itself.
    api_key_env: str | None = None
    # Service-level objectives in ms by key (workload/slo.py), parsed.
    slo: Mapping[str, float] = field(default_factory=dict)
    # The scenarios this config runs (shell-style patterns; scenario_select.py); empty: all.
    scenarios: tuple[str, ...] = ()

    @property
    def api_key(self) -> str | None:
        """The key requests carry as a bearer token (read from ``api_key_env`` when asked), or None."""
        return (os.environ.get(self.api_key_env) or None) if self.api_key_env else None


def _check(file: Path, config: str | None, key: str, value: Any, prefix: str = "") -> None:
    """Raise when ``value`` breaks what config_schema.ServerKeys declares for ``key``."""
    found = problem(ServerKeys, key, value)
    if found:
        message, sub_key = found
        raise ConfigError(file, message, config, prefix + (sub_key or key))


def _str_list(file: Path, config: str | None, key: str, value: list) -> tuple[str, ...]:
    out = []
    for item in value:
        if isinstance(item, bool) or not isinstance(item, (str, int, float)):
            raise ConfigError(file, f"items must be strings, got {item!r}", config, key)
        out.append(str(item))
    return tuple(out)


def _expand(text: str, models: Mapping[str, ModelRef], file: Path, config: str, key: str) -> str:
    def sub(m: re.Match[str]) -> str:
        token = m.group(1)
        if token.startswith("env:"):
            var = token[4:]
            if var not in os.environ:
                raise ConfigError(file, f"environment variable {var} is not set (used as {{{token}}})", config, key)
            return os.environ[var]
        name = token.split(".", 1)[1]
        if name not in models:
            raise ConfigError(file, f"unknown model {name!r} (known: {sorted(models)})", config, key)
        return models[name].placeholder()

    return _PLACEHOLDER.sub(sub, text)


@dataclass
class Loaded:
    """One file read through: the configs without a problem, every problem found (not only the first: a
    bad ``gpus`` must not hide the rest), every config name the file declares (a broken config is still a
    name a ``compare:`` entry may use), and each broken config built without its bad keys, so the engine
    and launcher checks can still speak about what is left."""

    configs: list[ServerConfig] = field(default_factory=list)
    errors: list[ConfigError] = field(default_factory=list)
    names: list[str] = field(default_factory=list)
    broken: list[ServerConfig] = field(default_factory=list)


def load_config_file(path: Path) -> list[ServerConfig]:
    """Parse one YAML file; raise :class:`ConfigError` on its first problem (``read_config_file`` has all)."""
    loaded = read_config_file(path)
    if loaded.errors:
        raise loaded.errors[0]
    return loaded.configs


def _read_yaml(path: Path) -> dict[str, Any]:
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise ConfigError(path, f"cannot read: {e.strerror}") from e
    except UnicodeDecodeError as e:
        raise ConfigError(
            path, f"is not UTF-8 text (byte 0x{e.object[e.start]:02x} at offset {e.start}): save it as UTF-8"
        ) from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark else ""
        raise ConfigError(path, f"not valid YAML{where}: {getattr(e, 'problem', e)}") from e
    if raw is None:
        raise ConfigError(path, "is empty: a config file is a mapping with a 'configs' list")
    if not isinstance(raw, dict):
        raise ConfigError(path, "top level must be a mapping with a 'configs' list")
    return raw


def _mapping(path: Path, raw: dict[str, Any], key: str, what: str, report: Any) -> dict[str, Any]:
    value = raw.get(key) or {}
    if isinstance(value, dict):
        return value
    report(ConfigError(path, f"must be a mapping{what}", key=key))
    return {}


def read_config_file(path: Path) -> Loaded:
    """Parse one YAML file, collecting every problem in it (a file that is not a mapping is one problem)."""
    path = Path(path)
    out = Loaded()
    report = out.errors.append
    try:
        raw = _read_yaml(path)
    except ConfigError as e:
        report(e)
        return out
    for k in sorted(set(raw) - FILE_KEYS):
        report(ConfigError(path, f"unknown top-level key (allowed: {sorted(FILE_KEYS)})", key=k))

    flag_sets: dict[str, tuple[str, ...]] = {}
    for k, v in _mapping(path, raw, "flag_sets", " of name → list of flags", report).items():
        try:
            flag_sets[k] = _str_list(path, None, f"flag_sets.{k}", v if isinstance(v, list) else [v])
        except ConfigError as e:
            report(e)

    defaults: dict[str, Any] = {}
    given_defaults = _mapping(path, raw, "defaults", "", report)
    for k, v in given_defaults.items():
        try:
            if k not in CONFIG_KEYS - {"name"}:
                raise ConfigError(path, "unknown key in defaults", key=f"defaults.{k}")
            _check(path, None, k, v, prefix="defaults.")
            defaults[k] = v
        except ConfigError as e:
            report(e)

    shared_models: dict[str, ModelRef] = {}
    for k, v in _mapping(path, raw, "models", " of name → model", report).items():
        try:  # in order, so a model can derive from one named before it
            shared_models[k] = parse_model_ref(v, path, f"models.{k}", models=shared_models)
        except ConfigError as e:
            report(e)

    configs_raw = raw.get("configs")
    if not isinstance(configs_raw, list):
        report(ConfigError(path, "must be a list of configs", key="configs"))
        return out
    for i, entry in enumerate(configs_raw):
        before = len(out.errors)
        try:
            name, kept = _entry(path, i, entry, out.names, report)
        except ConfigError as e:
            report(e)
            continue
        out.names.append(name)
        merged = {**defaults, **kept}
        # Lists and mappings merge rather than replace: marks add up, env/request overlay.
        for k in ("marks",):
            if k in defaults and k in kept:
                merged[k] = list(defaults[k]) + [m for m in kept[k] if m not in defaults[k]]
        for k in ("env", "request", "engine_options", "models"):
            if k in defaults and k in kept and isinstance(kept[k], dict):
                merged[k] = {**defaults[k], **kept[k]}
        given = set(given_defaults) | set(entry)  # a key given but bad is reported once, not also as missing
        cfg = _build(path, name, merged, flag_sets, shared_models, report, given)
        if cfg is not None:
            (out.configs if len(out.errors) == before else out.broken).append(cfg)
    return out


def _entry(path: Path, i: int, entry: Any, seen: list[str], report: Any) -> tuple[str, dict[str, Any]]:
    """A config entry's name and its keys that pass their own checks; a key that fails is reported and not
    kept (a string where marks want a list must not merge with the defaults). Raises when the entry has
    no usable name."""
    if not isinstance(entry, dict):
        raise ConfigError(path, f"configs[{i}] must be a mapping")
    name = entry.get("name")
    if not isinstance(name, str) or not name:
        raise ConfigError(path, f"configs[{i}] needs a string 'name'", key="name")
    _check(path, name, "name", name)
    if name in seen:
        raise ConfigError(path, "duplicate config name", name, "name")
    kept = {}
    for k, v in entry.items():
        try:
            if k not in CONFIG_KEYS:
                raise ConfigError(path, f"unknown key (allowed: {sorted(CONFIG_KEYS)})", name, k)
            _check(path, name, k, v)
            kept[k] = v
        except ConfigError as e:
            report(e)
    return name, kept


def _build(
    path: Path, name: str, m: dict, flag_sets: dict, shared_models: dict, report: Any, given: set[str]
) -> ServerConfig | None:
    """The config from its merged keys, reporting each problem; None when what is left cannot make one."""
    missing = [k for k, f in keys_of(ServerKeys).items() if f.metadata["required_somewhere"] and k not in m]
    for req in missing:
        if req not in given:
            report(ConfigError(path, "is required (set it on the config or in defaults)", name, req))
    models = dict(shared_models)
    for k, v in (m.get("models") or {}).items():
        try:
            models[k] = parse_model_ref(v, path, f"models.{k}", config=name, models=models)
        except ConfigError as e:
            report(e)
    try:
        model = parse_model_ref(m["model"], path, "model", config=name, models=models) if "model" in m else None
    except ConfigError as e:
        report(e)
        model = None

    def attempt(fn: Any, *args: Any, default: Any = None) -> Any:
        try:
            return fn(*args)
        except ConfigError as e:
            report(e)
            return default

    args: list[str] = []
    for fs in m.get("flags", []):
        if not isinstance(fs, str) or fs not in flag_sets:
            report(ConfigError(path, f"unknown flag set {fs!r} (known: {sorted(flag_sets)})", name, "flags"))
            continue
        args.extend(flag_sets[fs])
    args.extend(attempt(_str_list, path, name, "args", m.get("args", []), default=()))
    args = [a for a in (attempt(_expand, a, models, path, name, "args") for a in args) if a is not None]

    env = {}
    for k, v in m.get("env", {}).items():
        value = attempt(_expand, str(v), models, path, name, f"env.{k}")
        if value is not None:
            env[str(k)] = value

    api_key_env = m.get("api_key_env")
    if api_key_env and not os.environ.get(api_key_env):
        report(ConfigError(path, f"environment variable {api_key_env} is not set or empty", name, "api_key_env"))
    slo = attempt(_slo, path, name, m.get("slo"), default={})
    if missing or model is None:
        return None

    return ServerConfig(
        name=name,
        engine=m["engine"],
        launcher=m.get("launcher", _DEFAULT["launcher"]),
        model=model,
        models=models,
        source=path,
        args=tuple(args),
        env=env,
        marks=tuple(m.get("marks", [])),
        gpus=m.get("gpus", _DEFAULT["gpus"]),
        startup_timeout=float(m.get("startup_timeout", _DEFAULT["startup_timeout"])),
        image=m.get("image"),
        description=m.get("description", ""),
        request=m.get("request", {}),
        engine_options=m.get("engine_options", {}),
        api_key_env=api_key_env,
        slo=slo,
        scenarios=tuple(str(p) for p in m.get("scenarios") or ()),
    )


def _slo(path: Path, name: str, value: Any) -> dict[str, float]:
    from pytest_llmbench.slo_spec import SloError, parse_slo

    try:
        return parse_slo(value, "slo")
    except SloError as e:
        raise ConfigError(path, str(e).removeprefix("slo: "), name, "slo") from None


def config_files(paths: Sequence[Path], named_by: str = "--llmbench-configs or ini llmbench_configs") -> list[Path]:
    """The config files named: each file, and every ``*.yaml``/``*.yml`` under each folder."""
    files: list[Path] = []
    for p in paths:
        p = Path(p)
        if p.is_dir():
            files.extend(sorted(q for q in p.rglob("*") if q.suffix in (".yaml", ".yml")))
        elif p.exists():
            files.append(p)
        else:
            raise ConfigError(p, f"no such file or folder (from {named_by})")
    return files


def why_no_configs(paths: Sequence[Path]) -> str:
    """Why ``paths`` hold no config, in words a user can act on (a session that selects none runs no
    server test, and says so instead of a bare "no tests collected")."""
    if not paths:
        return "no config path given (--llmbench-configs, ini llmbench_configs, or a benches/configs folder)"
    reasons = []
    for p in map(Path, paths):
        files = config_files([p])
        if not files:
            reasons.append(f"{p} holds no *.yaml or *.yml file")
        else:
            reasons.append(f"{', '.join(map(str, files))}: an empty 'configs' list")
    return "; ".join(reasons)


def load_configs(paths: Sequence[Path]) -> list[ServerConfig]:
    """Load every ``*.yaml``/``*.yml`` under the given files or folders; names must be unique overall."""
    files = config_files(paths)
    out: list[ServerConfig] = []
    by_name: dict[str, ServerConfig] = {}
    for f in files:
        for cfg in load_config_file(f):
            if cfg.name in by_name:
                raise ConfigError(f, f"duplicate config name (also in {by_name[cfg.name].source})", cfg.name, "name")
            by_name[cfg.name] = cfg
            out.append(cfg)
    return out


#: Every selected server config by name, loaded once at configure time (on ``pytest.Config.stash``).
CONFIGS = pytest.StashKey[dict[str, ServerConfig]]()


__all__ = [
    "CONFIGS",
    "ConfigError",
    "Loaded",
    "ServerConfig",
    "config_files",
    "load_config_file",
    "load_configs",
    "read_config_file",
    "why_no_configs",
]
