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


def load_config_file(path: Path) -> list[ServerConfig]:
    """Parse one YAML file; raise :class:`ConfigError` on the first problem."""
    path = Path(path)
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
    unknown = set(raw) - FILE_KEYS
    if unknown:
        raise ConfigError(path, f"unknown top-level key (allowed: {sorted(FILE_KEYS)})", key=sorted(unknown)[0])

    flag_sets = raw.get("flag_sets") or {}
    if not isinstance(flag_sets, dict):
        raise ConfigError(path, "must be a mapping of name → list of flags", key="flag_sets")
    flag_sets = {
        k: _str_list(path, None, f"flag_sets.{k}", v if isinstance(v, list) else [v]) for k, v in flag_sets.items()
    }

    defaults = raw.get("defaults") or {}
    if not isinstance(defaults, dict):
        raise ConfigError(path, "must be a mapping", key="defaults")
    for k, v in defaults.items():
        if k not in CONFIG_KEYS - {"name"}:
            raise ConfigError(path, "unknown key in defaults", key=f"defaults.{k}")
        _check(path, None, k, v, prefix="defaults.")

    file_models = raw.get("models") or {}
    if not isinstance(file_models, dict):
        raise ConfigError(path, "must be a mapping of name → model", key="models")
    shared_models: dict[str, ModelRef] = {}
    for k, v in file_models.items():  # in order, so a model can derive from one named before it
        shared_models[k] = parse_model_ref(v, path, f"models.{k}", models=shared_models)

    configs_raw = raw.get("configs")
    if not isinstance(configs_raw, list):
        raise ConfigError(path, "must be a list of configs", key="configs")

    out: list[ServerConfig] = []
    seen: set[str] = set()
    for i, entry in enumerate(configs_raw):
        if not isinstance(entry, dict):
            raise ConfigError(path, f"configs[{i}] must be a mapping")
        name = entry.get("name")
        if not isinstance(name, str) or not name:
            raise ConfigError(path, f"configs[{i}] needs a string 'name'", key="name")
        _check(path, name, "name", name)
        if name in seen:
            raise ConfigError(path, "duplicate config name", name, "name")
        seen.add(name)
        for k, v in entry.items():
            if k not in CONFIG_KEYS:
                raise ConfigError(path, f"unknown key (allowed: {sorted(CONFIG_KEYS)})", name, k)
            _check(path, name, k, v)  # before merging: a string where marks want a list must not merge
        merged = {**defaults, **entry}
        # Lists and mappings merge rather than replace: marks add up, env/request overlay.
        for k in ("marks",):
            if k in defaults and k in entry:
                merged[k] = list(defaults[k]) + [m for m in entry[k] if m not in defaults[k]]
        for k in ("env", "request", "engine_options", "models"):
            if k in defaults and k in entry and isinstance(entry[k], dict):
                merged[k] = {**defaults[k], **entry[k]}
        out.append(_build(path, name, merged, flag_sets, shared_models))
    return out


def _build(path: Path, name: str, m: dict, flag_sets: dict, shared_models: dict) -> ServerConfig:
    for req in (k for k, f in keys_of(ServerKeys).items() if f.metadata["required_somewhere"]):
        if req not in m:
            raise ConfigError(path, "is required (set it on the config or in defaults)", name, req)
    engine = m["engine"]
    launcher = m.get("launcher", _DEFAULT["launcher"])

    models = dict(shared_models)
    for k, v in (m.get("models") or {}).items():
        models[k] = parse_model_ref(v, path, f"models.{k}", config=name, models=models)
    model = parse_model_ref(m["model"], path, "model", config=name, models=models)

    args: list[str] = []
    for fs in m.get("flags", []):
        if not isinstance(fs, str) or fs not in flag_sets:
            raise ConfigError(path, f"unknown flag set {fs!r} (known: {sorted(flag_sets)})", name, "flags")
        args.extend(flag_sets[fs])
    args.extend(_str_list(path, name, "args", m.get("args", [])))
    args = [_expand(a, models, path, name, "args") for a in args]

    env = m.get("env", {})
    env = {str(k): _expand(str(v), models, path, name, f"env.{k}") for k, v in env.items()}

    api_key_env = m.get("api_key_env")
    if api_key_env and not os.environ.get(api_key_env):
        raise ConfigError(path, f"environment variable {api_key_env} is not set or empty", name, "api_key_env")

    marks = tuple(m.get("marks", []))
    gpus = m.get("gpus", _DEFAULT["gpus"])
    timeout = float(m.get("startup_timeout", _DEFAULT["startup_timeout"]))

    return ServerConfig(
        name=name,
        engine=engine,
        launcher=launcher,
        model=model,
        models=models,
        source=path,
        args=tuple(args),
        env=env,
        marks=marks,
        gpus=gpus,
        startup_timeout=timeout,
        image=m.get("image"),
        description=m.get("description", ""),
        request=m.get("request", {}),
        engine_options=m.get("engine_options", {}),
        api_key_env=api_key_env,
        slo=_slo(path, name, m.get("slo")),
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


__all__ = ["ConfigError", "ServerConfig", "config_files", "load_config_file", "load_configs", "why_no_configs"]
