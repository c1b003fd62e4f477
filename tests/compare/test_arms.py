"""Arms from the command line and from a YAML compare: block: what differs, and the errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_llmbench.compare.arms import (
    ArmError,
    ArmOptions,
    arms_from_block,
    arms_from_options,
    block_pairs,
    read_compare_blocks,
)
from pytest_llmbench.config import ConfigError, load_config_file
from pytest_llmbench.registry import Registry

REGISTRY = Registry.builtin()

CPU_YAML = Path(__file__).resolve().parents[2] / "benches" / "configs" / "cpu.yaml"


@pytest.fixture
def configs():
    return {c.name: c for c in load_config_file(CPU_YAML)}


@pytest.fixture
def build_dir(tmp_path):
    d = tmp_path / "old-build"
    d.mkdir()
    (d / "llama-server").write_text("#!/bin/sh\n")
    return d


def test_reference_bin_changes_only_the_reference_binary(configs, build_dir):
    pair = arms_from_options(configs["smol-nospec"], ArmOptions.parse(reference_bin=str(build_dir)), REGISTRY)
    assert pair.reference.config.engine_options["binary"] == str(build_dir / "llama-server")
    assert "binary" not in pair.candidate.config.engine_options
    assert pair.reference.config.args == pair.candidate.config.args == configs["smol-nospec"].args
    assert pair.reference.server_name == "smol-nospec.reference" and pair.candidate.server_name == "smol-nospec"
    assert pair.reference.label == f"bin {build_dir}" and pair.candidate.label == "installed build"


def test_args_are_appended_per_arm(configs):
    pair = arms_from_options(
        configs["smol-nospec"], ArmOptions.parse(candidate_args="-t 1 --ubatch-size '64'"), REGISTRY
    )
    base = configs["smol-nospec"].args
    assert pair.candidate.config.args == (*base, "-t", "1", "--ubatch-size", "64")
    assert pair.reference.config.args == base


def test_same_folder_on_both_sides_is_an_a_a_run(configs, build_dir):
    opts = ArmOptions.parse(reference_bin=str(build_dir), candidate_bin=str(build_dir))
    pair = arms_from_options(configs["smol-nospec"], opts, REGISTRY)
    assert pair.reference.config == pair.candidate.config


@pytest.mark.parametrize(
    "opts, message",
    [
        (dict(reference_bin="/no/such/folder"), "--llmbench-reference-bin /no/such/folder: no such folder"),
        (dict(reference_image="sglang:old"), "not docker"),
    ],
)
def test_bad_options_name_the_option(configs, opts, message):
    with pytest.raises(ArmError, match=message):
        arms_from_options(configs["smol-nospec"], ArmOptions.parse(**opts), REGISTRY)


def test_folder_without_llama_server(configs, tmp_path):
    with pytest.raises(ArmError, match="no llama-server in this folder"):
        arms_from_options(configs["smol-nospec"], ArmOptions.parse(candidate_bin=str(tmp_path)), REGISTRY)


def test_unbalanced_quote_in_args():
    with pytest.raises(ArmError, match="--llmbench-reference-args"):
        ArmOptions.parse(reference_args="-t '2")


def test_options_active_only_when_an_arm_is_named():
    assert not ArmOptions.parse(candidate_image="img").active
    assert ArmOptions.parse(reference_args="-t 1").active


def _write(tmp_path, text):
    f = tmp_path / "pairs.yaml"
    f.write_text(text)
    return f


def test_yaml_block_pairs_two_configs(tmp_path, configs):
    f = _write(tmp_path, "configs: []\ncompare:\n  - {reference: smol-nospec, candidate: smol-draft}\n")
    pairs = block_pairs(read_compare_blocks([tmp_path]), configs, REGISTRY)
    pair = pairs["smol-draft"]
    assert pair.reference.config is configs["smol-nospec"] and pair.candidate.config is configs["smol-draft"]
    assert pair.source == str(f) and pair.reference.label == "config smol-nospec"


@pytest.mark.parametrize(
    "block, key",
    [
        ("compare: {reference: a}\n", "compare"),
        ("compare:\n  - {reference: smol-nospec}\n", "compare[0].candidate"),
        ("compare:\n  - {reference: smol-nospec, candidate: smol-draft, extra: 1}\n", "compare[0]"),
    ],
)
def test_malformed_block_names_file_and_key(tmp_path, block, key):
    f = _write(tmp_path, "configs: []\n" + block)
    with pytest.raises(ConfigError) as e:
        read_compare_blocks([f])
    assert str(f) in str(e.value) and f"key {key!r}" in str(e.value)


def test_unknown_or_repeated_config_in_block(tmp_path, configs):
    f = _write(tmp_path, "configs: []\ncompare:\n  - {reference: smol-nospec, candidate: nope}\n")
    with pytest.raises(ConfigError, match=r"compare\[0\].candidate.*unknown config 'nope'"):
        block_pairs(read_compare_blocks([f]), configs, REGISTRY)
    f.write_text(
        "configs: []\ncompare:\n  - {reference: smol-nospec, candidate: smol-draft}\n"
        "  - {reference: smol-ngram, candidate: smol-draft}\n"
    )
    with pytest.raises(ConfigError, match="already a candidate"):
        block_pairs(read_compare_blocks([f]), configs, REGISTRY)
    pair = read_compare_blocks([f])[0]
    with pytest.raises(ConfigError, match="same config"):
        arms_from_block(type(pair)("smol-draft", "smol-draft", f, 0), configs, REGISTRY)


def test_compare_key_is_allowed_in_a_config_file(tmp_path):
    f = _write(tmp_path, CPU_YAML.read_text() + "\ncompare:\n  - {reference: smol-nospec, candidate: smol-draft}\n")
    assert [c.name for c in load_config_file(f)] == ["smol-nospec", "smol-ngram", "smol-draft"]
