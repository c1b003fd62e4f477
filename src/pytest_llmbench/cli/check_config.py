"""``python -m pytest_llmbench check-config PATH…``: validate config files without starting anything.

    python -m pytest_llmbench check-config benches/configs      # one line per error, exit 1 on any (or no config)
    python -m pytest_llmbench check-config --print-schema > config.schema.json

The same checks a pytest session makes before its first server starts (config.py's loader, then the
engine and launcher registries and the ``compare:`` blocks), with the built-in engines and launchers; it
reports every error of every file in one run (a session stops at the first), so a CI lint shows them all.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from pytest_llmbench.config import ServerConfig, config_files, read_config_file, why_no_configs
from pytest_llmbench.config_schema import schema_text
from pytest_llmbench.errors import ConfigError
from pytest_llmbench.registry import Registry


def builtin_schema_text() -> str:
    """The JSON Schema with the built-in engines and launchers: what config.schema.json holds."""
    reg = Registry.builtin()
    return schema_text({"engines": list(reg.engines), "launchers": list(reg.launchers)})


def check_paths(paths: Sequence[Path], registry: Registry) -> tuple[list[ServerConfig], list[ConfigError]]:
    """Every config that passes, and every problem found in every file: each bad key of each config, the
    engine and launcher checks of what is left of a broken config, and each ``compare:`` entry naming a
    config no file declares."""
    errors: list[ConfigError] = []
    good: dict[str, ServerConfig] = {}
    declared: dict[str, Path] = {}
    try:
        files = config_files(paths, named_by="the command line")
    except ConfigError as e:
        return [], [e]
    for f in files:
        loaded = read_config_file(f)
        errors.extend(loaded.errors)
        for name in loaded.names:
            if name in declared:
                errors.append(ConfigError(f, f"duplicate config name (also in {declared[name]})", name, "name"))
            declared.setdefault(name, f)
        for cfg in loaded.configs:
            try:
                registry.check(cfg)
            except ConfigError as e:
                errors.append(e)
                continue
            if declared[cfg.name] == f:
                good[cfg.name] = cfg
        for cfg in loaded.broken:  # what a bad key left: its engine may be unknown too
            told = {e.key for e in loaded.errors if e.config == cfg.name}
            try:
                registry.check(cfg)
            except ConfigError as e:
                if e.key not in told:
                    errors.append(e)
    errors.extend(_compare_errors(files, declared, good, registry))
    return list(good.values()), errors


def _compare_errors(
    files: Sequence[Path], declared: Mapping[str, Path], good: Mapping[str, ServerConfig], registry: Registry
) -> list[ConfigError]:
    """Each ``compare:`` entry's problems: a name no file declares (reference or candidate, each said), then
    the pairing checks on the entries whose configs both passed (a broken config's error is said already)."""
    from pytest_llmbench.compare.arms import arms_from_block, block_pairs, read_compare_blocks

    try:
        pairs = read_compare_blocks(files)
    except ConfigError as e:
        return [e]
    errors, whole = [], []
    for p in pairs:
        unknown = [what for what in ("reference", "candidate") if getattr(p, what) not in declared]
        for what in unknown:
            name = getattr(p, what)
            errors.append(
                ConfigError(p.source, f"unknown config {name!r} (known: {sorted(declared)})", key=p.key(what))
            )
        if unknown or p.reference not in good or p.candidate not in good:
            continue
        try:
            arms_from_block(p, good, registry)
        except ConfigError as e:
            errors.append(e)
            continue
        whole.append(p)
    try:
        block_pairs(whole, good, registry)  # one reference per candidate across the entries
    except ConfigError as e:
        errors.append(e)
    return errors


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m pytest_llmbench check-config",
        description="Validate config files (YAML files or folders of them) without starting a server: "
        "one line per error naming file, config and key; exit 1 on any error.",
    )
    parser.add_argument("paths", type=Path, nargs="*", metavar="PATH")
    parser.add_argument("--print-schema", action="store_true", help="print the JSON Schema of a config file and exit")
    args = parser.parse_args(argv)
    if args.print_schema:
        sys.stdout.write(builtin_schema_text())
        return 0
    if not args.paths:
        parser.error("name at least one config file or folder")
    configs, errors = check_paths(args.paths, Registry.builtin())
    for e in errors:
        print(e)
    if errors:
        print(f"check-config: {len(errors)} error(s)", file=sys.stderr)
        return 1
    if not configs:  # nothing checked is not "OK": a session would run no server test (and say so)
        print(f"check-config: no configs: {why_no_configs(args.paths)}", file=sys.stderr)
        return 1
    files = {c.source for c in configs}
    print(f"check-config: OK, {len(configs)} configs in {len(files)} file(s)")
    return 0
