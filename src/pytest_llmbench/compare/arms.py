"""The two arms of a comparison: reference and candidate, differing only in what the user names.

An arm is a :class:`ServerConfig` plus the image it runs. From the command line both arms derive from
one selected config (a different llama-server folder, Docker image or extra args per arm); from a
YAML ``compare:`` block the arms are two whole configs (drafter vs no drafter, NVFP4 vs FP8)::

    compare:
      - {reference: smol-nospec, candidate: smol-draft}

A compared config's tests run as comparisons: ``llm_server`` is the candidate, the reference is
started next to it (see interleave.py).
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml

from pytest_llmbench.config import ConfigError, ServerConfig
from pytest_llmbench.registry import Registry

ROLES = ("reference", "candidate")


class ArmError(ValueError):
    """An arm cannot be built from the options or the compare block; the message names which."""


@dataclass(frozen=True)
class Arm:
    role: str
    config: ServerConfig
    image: str | None = None
    #: What this arm changes, for the table and the records ("bin /opt/llama-11401", "config smol-nospec").
    label: str = ""
    #: A disjoint placement's set for this start (GPU ids, or CPU cores when ``device_kind`` is "cpu"); None:
    #: the test's own GPUs (compare/placement.py).
    devices: tuple[str, ...] | None = None
    device_kind: str = "gpu"

    @property
    def server_name(self) -> str:
        """The folder name of this arm's server log: the candidate keeps the config's own folder."""
        return self.config.name if self.role == "candidate" else f"{self.config.name}.reference"


@dataclass(frozen=True)
class ArmPair:
    """The arms of one compared config (named by the config the tests are parameterized with)."""

    config_name: str
    reference: Arm
    candidate: Arm
    source: str = "options"  # "options" or the YAML file of the compare block

    def arm(self, role: str) -> Arm:
        return self.reference if role == "reference" else self.candidate

    def describe(self) -> str:
        return f"{self.config_name}: reference {self.reference.label} vs candidate {self.candidate.label}"


@dataclass(frozen=True)
class ArmOptions:
    """What the command line names per arm (``--llmbench-reference-*`` / ``--llmbench-candidate-*``)."""

    reference_image: str | None = None
    reference_bin: Path | None = None
    candidate_bin: Path | None = None
    reference_args: tuple[str, ...] = ()
    candidate_args: tuple[str, ...] = ()
    #: ``--llmbench-image``: the candidate's image where the config names another.
    candidate_image: str | None = None

    @property
    def active(self) -> bool:
        return bool(
            self.reference_image
            or self.reference_bin
            or self.candidate_bin
            or self.reference_args
            or self.candidate_args
        )

    @classmethod
    def parse(
        cls,
        *,
        reference_image: str | None = None,
        reference_bin: str | None = None,
        candidate_bin: str | None = None,
        reference_args: str | None = None,
        candidate_args: str | None = None,
        candidate_image: str | None = None,
    ) -> ArmOptions:
        def split(flag: str, text: str | None) -> tuple[str, ...]:
            try:
                return tuple(shlex.split(text or ""))
            except ValueError as e:
                raise ArmError(f"{flag} {text!r}: {e}") from None

        return cls(
            reference_image=reference_image or None,
            reference_bin=Path(reference_bin).expanduser() if reference_bin else None,
            candidate_bin=Path(candidate_bin).expanduser() if candidate_bin else None,
            reference_args=split("--llmbench-reference-args", reference_args),
            candidate_args=split("--llmbench-candidate-args", candidate_args),
            candidate_image=candidate_image or None,
        )


def runs_images(cfg: ServerConfig, registry: Registry) -> bool:
    """Does ``cfg``'s launcher run a container image (so arms differ by image, not by binary)?"""
    return bool(getattr(registry.launcher(cfg.launcher), "runs_images", False))


def binary_in(folder: Path, flag: str, cfg: ServerConfig, registry: Registry) -> Path:
    """The engine's server program inside ``folder`` (``--llmbench-*-bin``), or a clear error."""
    name = registry.engines[cfg.engine].binary_name
    if runs_images(cfg, registry) or not name:
        raise ArmError(
            f"{flag}: config {cfg.name!r} ({cfg.engine} via {cfg.launcher}) does not run a local "
            f"binary; compare images with --llmbench-reference-image instead"
        )
    if not folder.is_dir():
        raise ArmError(f"{flag} {folder}: no such folder")
    program = folder / name
    if not program.is_file():
        raise ArmError(f"{flag} {folder}: no {name} in this folder (point it at the folder holding {name})")
    return program


def _derive(
    cfg: ServerConfig,
    role: str,
    registry: Registry,
    *,
    image: str | None,
    binary_dir: Path | None,
    extra_args: tuple[str, ...],
) -> Arm:
    flag = f"--llmbench-{role}-bin"
    changes: dict[str, Any] = {}
    label: list[str] = []
    if binary_dir is not None:
        program = binary_in(binary_dir, flag, cfg, registry)
        changes["engine_options"] = {**cfg.engine_options, "binary": str(program)}
        label.append(f"bin {binary_dir}")
    if extra_args:
        changes["args"] = (*cfg.args, *extra_args)
        label.append(f"args {shlex.join(extra_args)}")
    if image and image != cfg.image:
        label.append(f"image {image}")
    return Arm(
        role,
        replace(cfg, **changes) if changes else cfg,
        image=image or cfg.image,
        label=", ".join(label) or (f"image {cfg.image}" if runs_images(cfg, registry) else "installed build"),
    )


def arms_from_options(cfg: ServerConfig, options: ArmOptions, registry: Registry) -> ArmPair:
    """Both arms of ``cfg`` from the command line; the candidate is what ``llm_server`` runs."""
    images = runs_images(cfg, registry)
    if options.reference_image and not images:
        raise ArmError(
            f"--llmbench-reference-image: config {cfg.name!r} runs via {cfg.launcher}, not docker; "
            f"compare local builds with --llmbench-reference-bin DIR"
        )
    candidate_image = options.candidate_image if images else None
    ref = _derive(
        cfg,
        "reference",
        registry,
        image=options.reference_image or candidate_image,
        binary_dir=options.reference_bin,
        extra_args=options.reference_args,
    )
    cand = _derive(
        cfg,
        "candidate",
        registry,
        image=candidate_image,
        binary_dir=options.candidate_bin,
        extra_args=options.candidate_args,
    )
    if (ref.config, ref.image) == (cand.config, cand.image) and not (options.reference_bin or options.candidate_bin):
        # Same build named on both sides is a deliberate A/A run; anything else that ends up equal is a typo.
        raise ArmError(
            f"config {cfg.name!r}: the reference and candidate arms are identical "
            f"(--llmbench-reference-image equals the candidate's image?)"
        )
    return ArmPair(cfg.name, ref, cand)


@dataclass(frozen=True)
class ComparePair:
    """One entry of a YAML ``compare:`` block: two config names."""

    reference: str
    candidate: str
    source: Path
    index: int
    name: str = ""

    def key(self, what: str) -> str:
        return f"compare[{self.index}].{what}"


def read_compare_blocks(paths: Iterable[Path]) -> list[ComparePair]:
    """Every ``compare:`` entry in the config files (the same files and folders as the configs)."""
    files: list[Path] = []
    for p in paths:
        p = Path(p)
        files.extend(sorted(q for q in p.rglob("*") if q.suffix in (".yaml", ".yml")) if p.is_dir() else [p])
    out: list[ComparePair] = []
    for f in files:
        try:
            raw = yaml.safe_load(f.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, yaml.YAMLError):
            continue  # load_configs reports it
        block = raw.get("compare") if isinstance(raw, dict) else None
        if block is None:
            continue
        if not isinstance(block, list):
            raise ConfigError(f, "must be a list of {reference: CONFIG, candidate: CONFIG}", key="compare")
        for i, entry in enumerate(block):
            if not isinstance(entry, dict) or set(entry) - {"reference", "candidate", "name"}:
                raise ConfigError(
                    f, "each entry is {reference: CONFIG, candidate: CONFIG, name: optional}", key=f"compare[{i}]"
                )
            for k in ("reference", "candidate"):
                if not isinstance(entry.get(k), str) or not entry[k]:
                    raise ConfigError(f, "must name a config", key=f"compare[{i}].{k}")
            out.append(ComparePair(entry["reference"], entry["candidate"], f, i, str(entry.get("name") or "")))
    return out


def arms_from_block(
    pair: ComparePair, configs: Mapping[str, ServerConfig], registry: Registry, candidate_image: str | None = None
) -> ArmPair:
    """The arms of a YAML pair: the reference config runs next to the candidate config's tests."""
    for what in ("reference", "candidate"):
        name = getattr(pair, what)
        if name not in configs:
            raise ConfigError(pair.source, f"unknown config {name!r} (known: {sorted(configs)})", key=pair.key(what))
    if pair.reference == pair.candidate:
        raise ConfigError(pair.source, "reference and candidate are the same config", key=pair.key("candidate"))
    ref_cfg, cand_cfg = configs[pair.reference], configs[pair.candidate]
    image = candidate_image if runs_images(cand_cfg, registry) else None
    return ArmPair(
        pair.candidate,
        Arm("reference", ref_cfg, image=ref_cfg.image, label=f"config {ref_cfg.name}"),
        Arm("candidate", cand_cfg, image=image or cand_cfg.image, label=f"config {cand_cfg.name}"),
        source=str(pair.source),
    )


def block_pairs(
    pairs: Iterable[ComparePair],
    configs: Mapping[str, ServerConfig],
    registry: Registry,
    candidate_image: str | None = None,
) -> dict[str, ArmPair]:
    """Candidate config name → its arms; a config compared twice is an error (one reference per test)."""
    out: dict[str, ArmPair] = {}
    for p in pairs:
        if p.candidate in out:
            raise ConfigError(
                p.source,
                f"config {p.candidate!r} is already a candidate in another compare entry",
                key=p.key("candidate"),
            )
        out[p.candidate] = arms_from_block(p, configs, registry, candidate_image)
    return out
