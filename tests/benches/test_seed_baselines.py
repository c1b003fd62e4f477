"""The posts' figures → baselines/: every figure lands on a real GPU test, with a noise rule that names
its source, and the written files load through the gate."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_llmbench.gate.baselines import load
from pytest_llmbench.gate.noise import noise_from_dict

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benches" / "configs" / "gpu" / "seed_baselines.py"


@pytest.fixture(scope="module")
def seed():
    spec = importlib.util.spec_from_file_location("seed_baselines", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def figures(seed):
    return yaml.safe_load(seed.FIGURES.read_text())


@pytest.fixture(scope="module")
def gpu_test_ids():
    """Node ids of the GPU suite as pytest collects it (config files and all)."""
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "benches/gpu", "--collect-only", "-q", "-p", "no:cacheprovider"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    ids = {line.strip() for line in out.stdout.splitlines() if "::" in line}
    assert ids, out.stdout[-2000:] + out.stderr[-2000:]
    return ids


def test_every_figure_lands_on_a_collected_gpu_test_of_its_config(seed, figures, gpu_test_ids):
    for config, _, key, metric, _ in seed.entries(figures):
        base, _, param = key.partition("[")
        nodeid = f"{base}[{config}-{param.rstrip(']')}]" if param else f"{base}[{config}]"
        assert nodeid in gpu_test_ids, f"{metric}: {nodeid} is not a collected test"


def test_noise_rules_name_their_figure_and_inferred_assignments_say_so(seed, figures):
    by_key = {(c, k, m): e for c, _, k, m, e in seed.entries(figures)}
    for entry in by_key.values():
        rule = entry.provenance["noise_rule"]
        noise_from_dict(entry.noise)  # stored models load back
        assert rule and ("post" in rule or "posts" in rule), rule
    serving = "benches/gpu/test_serving_gpu.py::test_serving"
    assert "inferred" in by_key[("stock-nvfp4-mtp3", f"{serving}[prompt120k-1u]", "median_tpot_ms")].provenance
    assert "inferred" in by_key[("stock-nvfp4-nospec", f"{serving}[prompt120k-1u]", "median_tpot_ms")].provenance
    assert "inferred" in by_key[("stock-fp8-dflash8", f"{serving}[chat-1u]", "accept_length")].provenance
    assert "inferred" in by_key[("stock-nvfp4-dflash8", f"{serving}[chat-1u]", "accept_length")].provenance
    # what the posts say outright stays uninferred, with the quote
    dflash4 = by_key[("stock-nvfp4-dflash4", f"{serving}[chat-1u]", "accept_length")].provenance
    assert "inferred" not in dflash4 and "1-user accept table" in dflash4["note"]
    flash_next = by_key[("flash-next-nvfp4-nospec", f"{serving}[prompt20k-4u]", "output_throughput")]
    assert "20k with 4 users" in flash_next.provenance["note"] and flash_next.noise == {
        "name": "Relative",
        "frac": 0.04,
    }


def test_the_issue_s_figures_are_all_seeded(seed, figures):
    got = {(c, m, e.value) for c, _, _, m, e in seed.entries(figures)}
    for want in [
        ("stock-nvfp4-dflash8", "bfcl_passed", 176),
        ("stock-fp8-dflash8", "bfcl_passed", 167),
        ("swift-nvfp4-dflash8", "bfcl_passed", 168),
        ("flash-next-nvfp4-nospec", "bfcl_passed", 136),
        ("stock-nvfp4-dflash8", "gsm8k_correct", 1277),
        ("swift-nvfp4-dflash8", "gsm8k_correct", 1280),
        ("stock-nvfp4-dflash8", "accept_length", 4.13),
        ("stock-nvfp4-dspark", "bfcl_mean_latency_s", 3.24),
        ("stock-nvfp4-nospec", "max_mamba_cache_size", 117),
        ("flash-next-gguf-q4-44gb", "peak_gpu_memory_gb", 44.5),
        ("swift-nvfp4-nospec", "calibrated_kl", 0.198),
        ("stock-bf16-nospec", "case_latency_median_ms", 386),
    ]:
        assert want in got, want
    by = {(c, m): e for c, _, k, m, e in seed.entries(figures) if k.endswith("test_serving[prompt20k-4u]")}
    assert by[("stock-nvfp4-dflash8", "output_throughput")].history == (142.3, 138.7, 137.5)
    assert 14.65 in by[("stock-nvfp4-dflash8", "median_tpot_ms")].history


def test_a_figure_missing_a_field_or_naming_an_unknown_file_is_one_clear_error(seed, figures):
    bad = {**figures, "figures": [{"config": "x", "test": "chat-1u", "metric": "output_throughput", "post": "spec"}]}
    with pytest.raises(ValueError, match=r"figure 0 .* lacks \['value'\]"):
        seed.entries(bad)
    with pytest.raises(ValueError, match="unknown test file alias 'nope'"):
        seed.test_key("nope::test_x")


def test_seeding_writes_files_the_gate_loads_and_keeps_measured_baselines(tmp_path):
    out = subprocess.run(
        [sys.executable, str(SCRIPT), "--baselines", str(tmp_path)], capture_output=True, text=True, cwd=ROOT
    )
    assert out.returncode == 0, out.stderr
    files = sorted(tmp_path.glob("*.yaml"))
    assert len(files) >= 15
    for f in files:
        load(f, f.stem)
    # a measured entry (no refresh flag) survives a reseed
    text = (tmp_path / "stock-nvfp4-dflash8.yaml").read_text().replace("refresh: true", "refresh: false", 1)
    (tmp_path / "stock-nvfp4-dflash8.yaml").write_text(text)
    again = subprocess.run(
        [sys.executable, str(SCRIPT), "--baselines", str(tmp_path)], capture_output=True, text=True, cwd=ROOT
    )
    assert again.returncode == 0 and "keep  stock-nvfp4-dflash8" in again.stderr


def test_the_repository_baselines_are_the_seeded_ones_and_load(seed, figures):
    files: dict[str, Any] = {}  # each file loaded once, not once per entry
    for config, runner, key, metric, entry in seed.entries(figures):
        if config not in files:
            files[config] = load(ROOT / "baselines" / f"{config}.yaml", config)
        stored = files[config].get(runner, key, metric)
        assert stored is not None and stored.value == entry.value, (config, key, metric)
