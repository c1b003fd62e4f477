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

from pytest_llmbench.gate.baselines import dumps
from pytest_llmbench.gate.files import write_atomic
from pytest_llmbench.gate.metric import default_hardware_bound, resolve_direction
from pytest_llmbench.gate.noise import Binomial, History, NoiseModel, Relative, Spread, StdErr
from pytest_llmbench.gate.runner import RunnerProfile
from pytest_llmbench.gate.store import BaselineStore
from pytest_llmbench.gate.types import BaselineEntry

ROOT = Path(__file__).resolve().parents[3]
FIGURES = ROOT / "benches" / "gpu" / "published_figures.yaml"
BENCH_FILES = {alias: f"benches/gpu/test_{alias}_gpu.py" for alias in ("serving", "quality", "decisions")}
# Pool sizes gate higher-is-better and per runner (they depend on the card's memory).
FACT_METRICS = {"max_total_num_tokens": "higher", "max_mamba_cache_size": "higher"}

_TOKS = "Relative 4%: the NVFP4 vs FP8 post's caveat, later posts 'are within 4% of these tok/s rows, which is a rough size for run-to-run noise'"
_TWO_SE = (
    "StdErr k=2: the Swift post's 'gaps under about 2 standard errors can't be told from noise'; the post "
    "prints no SE for this figure, so the run's own per-sample SE is used"
)
_COUNT_CHANGES = (
    "History k=3 (fallback Spread 5): the decisions post's 'at most 3 of 2,000 top answers move, the "
    "same as a repeat of the same pass'; until three runs exist a spread of 5 answers"
)


def _no_figure(what: str) -> str:
    return (
        f"Relative 5%: the posts give no run-to-run figure for {what} (one run per config); 5% is assumed, not measured"
    )


def noise_for(metric: str) -> tuple[NoiseModel, str]:
    """The noise model a seeded metric is stored with, and the rule text naming the figure it comes from."""
    if metric == "output_throughput":
        return Relative(0.04), _TOKS
    if metric in FACT_METRICS:
        frac = 0.02 if metric == "max_total_num_tokens" else 0.0
        return Relative(frac), (
            f"Relative {frac:g}: pool sizes are fixed by image, card and flags (the posts print "
            "236,864 for the same flags in two posts)"
        )
    if metric == "accept_length" or metric in (
        "total_tokens",
        "thinking_tokens",
        "thinking_tokens_common",
        "kl",
        "calibrated_kl",
        "calibrated_log_loss",
    ):
        return StdErr(k=2), _TWO_SE
    if metric == "bfcl_passed":
        return Spread(8), "Spread 8: BFCL 168, 174 and 176 of 205 for the same config in three posts"
    if metric.startswith("bfcl_passed."):
        return Binomial(alpha=0.01), (
            "Binomial alpha 0.01: the posts, 'BFCL categories have 10-25 cases, so a few "
            "points either way is noise' (no rerun figure per category)"
        )
    if metric == "gsm8k_correct":
        return Binomial(
            alpha=0.01
        ), "Binomial alpha 0.01 on 1,319 problems: the Swift post gives no rerun figure for GSM8K"
    if metric in ("agreement", "calibrated_agreement"):
        return Binomial(alpha=0.01), (
            "Binomial alpha 0.01 on 2,000 decisions: the post's intervals are paired bootstraps "
            "between configs, not rerun noise; it gives no rerun figure for agreement"
        )
    if metric == "calibrated_ece":
        return Spread(0.02), "Spread 0.02: the post gives ECE without an interval; 0.02 as the bench's check"
    if metric in ("pass_to_pass_changes", "route_changes", "drafter_answer_changes", "answers_changed"):
        return History(k=3, fallback=Spread(5)), _COUNT_CHANGES
    if metric.startswith("temperature."):
        return Relative(0.25), (
            "Relative 25%: the post gives no rerun figure for fitted temperatures (they vary "
            "1.3-2.0 choice / 2.9-4.6 yes-no between datasets); assumed, recorded not gated"
        )
    return Relative(0.05), _no_figure(metric)


def test_key(test: str) -> str:
    if test == "server_facts":
        return f"{BENCH_FILES['serving']}::test_server_facts"
    if "::" in test:
        alias, _, rest = test.partition("::")
        if alias not in BENCH_FILES:
            raise ValueError(
                f"published_figures.yaml: unknown test file alias {alias!r} in {test!r} (known: {sorted(BENCH_FILES)})"
            )
        return f"{BENCH_FILES[alias]}::{rest}"
    return f"{BENCH_FILES['serving']}::test_serving[{test}]"


def runner_slug(spec: dict) -> str:
    """The slug ``gate.runner.detect`` gives on that machine (GPU name as NVML reports it)."""
    return RunnerProfile(
        cpu_model=spec["cpu_model"],
        cpu_cores=spec["cpu_cores"],
        gpu_name=spec["gpu_name"],
        gpu_count=spec["gpu_count"],
        power_limit_w=spec["power_limit_w"],
    ).slug


def entries(data: dict) -> list[tuple[str, str | None, str, str, BaselineEntry]]:
    """(config, runner or None, test key, metric, entry) for every figure."""
    runner = runner_slug(data["runner"])
    posts = data["posts"]
    out = []
    for i, f in enumerate(data["figures"]):
        missing = {"config", "test", "metric", "value", "post"} - set(f)
        if missing:
            raise ValueError(f"published_figures.yaml: figure {i} ({f}) lacks {sorted(missing)}")
        metric = f["metric"]
        direction = f.get("direction") or FACT_METRICS.get(metric) or resolve_direction(metric, None)
        hw = f.get("hardware_bound", metric in FACT_METRICS or default_hardware_bound(metric))
        reruns = f.get("reruns", [])
        history = (*tuple(float(r["value"]) for r in reruns), float(f["value"]))
        noise, rule = noise_for(metric)
        provenance = {
            "source": "published, one run",
            "refresh": True,
            "runner": data["runner"]["label"],
            "post": posts[f["post"]],
            "noise_rule": rule,
        }
        if reruns:
            provenance["reruns"] = [f"{r['value']} ({posts[r['post']]})" for r in reruns]
        for key in ("note", "inferred"):
            if f.get(key):
                provenance[key] = f[key]
        entry = BaselineEntry(
            value=float(f["value"]),
            direction=direction,
            noise=noise.to_dict(),
            n=f.get("n"),
            se=f.get("se"),
            spread=noise.stored_spread(history),
            history=history,
            provenance=provenance,
        )
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
