"""``python -m pytest_llmbench check-config PATH…``: validate config files without starting anything.

    python -m pytest_llmbench check-config benches/configs      # one line per error, exit 1 on any (or no config)
    python -m pytest_llmbench check-config --print-schema > config.schema.json

The same checks a pytest session makes before its first server starts (config.py's loader, then the
engine and launcher registries and the ``compare:`` blocks), with the built-in engines and launchers; it
reports the first error of each file rather than stopping at the first file, so a CI lint shows them all.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from pytest_llmbench.config import ServerConfig, config_files, load_config_file, why_no_configs
from pytest_llmbench.config_schema import schema_text
from pytest_llmbench.errors import ConfigError
from pytest_llmbench.registry import Registry


def builtin_schema_text() -> str:
    """The JSON Schema with the built-in engines and launchers: what config.schema.json holds."""
    reg = Registry.builtin()
    return schema_text({"engines": list(reg.engines), "launchers": list(reg.launchers)})


def check_paths(paths: Sequence[Path], registry: Registry) -> tuple[list[ServerConfig], list[ConfigError]]:
    """Every config that passes, and one error per problem found (at most one per config, plus one per
    file that cannot be read at all)."""
    errors: list[ConfigError] = []
    good: dict[str, ServerConfig] = {}
    try:
        files = config_files(paths, named_by="the command line")
    except ConfigError as e:
        return [], [e]
    for f in files:
        try:
            configs = load_config_file(f)
        except ConfigError as e:
            errors.append(e)
            continue
        for cfg in configs:
            try:
                if cfg.name in good:
                    raise ConfigError(f, f"duplicate config name (also in {good[cfg.name].source})", cfg.name, "name")
                registry.check(cfg)
            except ConfigError as e:
                errors.append(e)
                continue
            good[cfg.name] = cfg
    from pytest_llmbench.compare.arms import block_pairs, read_compare_blocks

    try:
        block_pairs(read_compare_blocks(files), good, registry)
    except ConfigError as e:
        errors.append(e)
    return list(good.values()), errors


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
