"""Seed baselines/ with the figures the seed posts publish, for runner "RTX PRO 6000 Blackwell, 400 W".

    python benches/configs/gpu/seed_baselines.py [--baselines DIR] [--dry-run]

Reads benches/gpu/published_figures.yaml and writes each figure through the gate's baseline API
(one YAML file per config, atomic replace). Every entry's provenance says "published, one run" and
carries ``refresh: true``: the first real run on that runner with --update-baselines replaces it. An
entry that already exists and is not a published seed is left alone (a measured baseline wins).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import yaml

from pytest_llmbench.gate.baselines import dumps, write_atomic
from pytest_llmbench.gate.store import BaselineStore
from pytest_llmbench.gate.entry import BaselineEntry
from pytest_llmbench.gate.metric import default_hardware_bound, resolve_direction
from pytest_llmbench.gate.noise import Relative
from pytest_llmbench.gate.runner import RunnerProfile

ROOT = Path(__file__).resolve().parents[3]
FIGURES = ROOT / "benches" / "gpu" / "published_figures.yaml"
BENCH_FILE = "benches/gpu/test_serving_gpu.py"
# Pool sizes gate higher-is-better and per runner (they depend on the card's memory).
FACT_METRICS = {"max_total_num_tokens": "higher", "max_mamba_cache_size": "higher"}
# Noise the seeds report: tok/s within ~4% between reruns of one config; accept lengths move a few %.
NOISE = {"accept_length": 0.06, "max_total_num_tokens": 0.02, "max_mamba_cache_size": 0.0}
DEFAULT_NOISE = 0.05


def test_key(test: str) -> str:
    if test == "server_facts":
        return f"{BENCH_FILE}::test_server_facts"
    return f"{BENCH_FILE}::test_serving[{test}]"


def runner_slug(spec: dict) -> str:
    """The slug ``gate.runner.detect`` gives on that machine (GPU name as NVML reports it)."""
    return RunnerProfile(cpu_model=spec["cpu_model"], cpu_cores=spec["cpu_cores"], gpu_name=spec["gpu_name"],
                         gpu_count=spec["gpu_count"], power_limit_w=spec["power_limit_w"]).slug


def entries(data: dict) -> list[tuple[str, str | None, str, str, BaselineEntry]]:
    """(config, runner or None, test key, metric, entry) for every figure."""
    runner = runner_slug(data["runner"])
    posts = data["posts"]
    out = []
    for f in data["figures"]:
        metric = f["metric"]
        direction = FACT_METRICS.get(metric) or resolve_direction(metric, None)
        hw = metric in FACT_METRICS or default_hardware_bound(metric)
        reruns = f.get("reruns", [])
        history = tuple(float(r["value"]) for r in reruns) + (float(f["value"]),)
        provenance = {"source": "published, one run", "refresh": True, "runner": data["runner"]["label"],
                      "post": posts[f["post"]]}
        if reruns:
            provenance["reruns"] = [f"{r['value']} ({posts[r['post']]})" for r in reruns]
        if f.get("note"):
            provenance["note"] = f["note"]
        noise = Relative(NOISE.get(metric, DEFAULT_NOISE))
        entry = BaselineEntry(value=float(f["value"]), direction=direction, noise=noise.to_dict(), n=None,
                              se=None, spread=noise.stored_spread(history), history=history, provenance=provenance)
        out.append((f["config"], runner if hw else None, test_key(f["test"]), metric, entry))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baselines", type=Path, default=ROOT / "baselines")
    ap.add_argument("--figures", type=Path, default=FIGURES)
    ap.add_argument("--dry-run", action="store_true", help="print what would be written")
    args = ap.parse_args(argv)
    data = yaml.safe_load(args.figures.read_text())
    store = BaselineStore(args.baselines)
    touched: dict[str, int] = {}
    for config, runner, key, metric, entry in entries(data):
        bf = store.file(config)
        old = bf.get(runner, key, metric)
        if old is not None and not old.provenance.get("refresh"):
            print(f"keep  {config} {key} {metric}: measured baseline {old.value}", file=sys.stderr)
            continue
        bf.put(runner, key, metric, entry)
        touched[config] = touched.get(config, 0) + 1
    for config, n in sorted(touched.items()):
        path = store.path_for(config)
        if args.dry_run:
            print(f"--- {path} ({n} entries)\n{dumps(store.file(config))}")
        else:
            write_atomic(path, dumps(store.file(config)))
            print(f"wrote {n} entries to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
