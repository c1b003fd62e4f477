"""Model references: hub ids with a pinned revision (the seed posts' ``@319f741c``)."""

from pathlib import Path

import pytest

from pytest_llmbench.config import ConfigError, load_config_file
from pytest_llmbench.models import parse_model_ref


def test_hub_id_with_revision_keeps_the_id_for_command_lines():
    ref = parse_model_ref("RadixArk/Qwen3.8-27B-NVFP4@319f741c", Path("c.yaml"), "model")
    assert (ref.kind, ref.revision, ref.placeholder()) == ("hub", "319f741c", "RadixArk/Qwen3.8-27B-NVFP4")
    assert ref.spec == "RadixArk/Qwen3.8-27B-NVFP4@319f741c"  # results name the pinned checkpoint
    plain = parse_model_ref("hf:Qwen/Qwen3.8-27B", Path("c.yaml"), "model")
    assert plain.revision is None and plain.placeholder() == "Qwen/Qwen3.8-27B"


def test_a_malformed_revision_is_a_config_error_naming_the_key(tmp_path):
    with pytest.raises(ConfigError, match="key 'model'"):
        parse_model_ref("org/model@bad rev", tmp_path / "c.yaml", "model", "cfg")


def test_the_gpu_configs_pin_what_the_posts_pinned():
    root = Path(__file__).resolve().parents[1] / "benches" / "configs" / "gpu"
    cfgs = {c.name: c for c in load_config_file(root / "sglang-qwen38-27b.yaml")}
    cfgs.update({c.name: c for c in load_config_file(root / "sglang-flash-next.yaml")})
    pinned = {name: c.model.revision for name, c in cfgs.items()}
    assert pinned["stock-nvfp4-dflash8"] == "319f741c" and pinned["stock-fp8-nospec"] == "017b9c7a"
    assert pinned["stock-bf16-nospec"] == "1d4bf0f2" and pinned["swift-nvfp4-nospec"] == "25482027"
    assert pinned["swift-bf16-nospec"] == "b4c84d42" and pinned["flash-next-nvfp4-nospec"] == "7b719225"
    assert cfgs["stock-nvfp4-dflash8"].models["dflash2"].revision == "50307d4c"
    assert cfgs["stock-nvfp4-dspark"].models["dspark"].revision == "b9a5dbdf"
