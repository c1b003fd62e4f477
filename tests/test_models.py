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


def test_a_local_path_is_resolved_against_the_config_file(tmp_path):
    (tmp_path / "models").mkdir()
    gguf = tmp_path / "models" / "x.gguf"
    gguf.write_bytes(b"GGUF")
    ref = parse_model_ref("models/x.gguf", tmp_path / "c.yaml", "model")
    assert (ref.kind, ref.path, ref.placeholder()) == ("path", gguf.resolve(), str(gguf.resolve()))
    with pytest.raises(ConfigError, match=r"key 'model': model file not found: .*missing\.gguf"):
        parse_model_ref("models/missing.gguf", tmp_path / "c.yaml", "model", "cfg")


def test_a_dist_reference_is_a_file_inside_an_installed_wheel(tmp_path):
    ref = parse_model_ref("dist://pytest/_pytest/__init__.py", tmp_path / "c.yaml", "model")
    assert ref.kind == "path" and ref.path.name == "__init__.py" and ref.path.parent.name == "_pytest"
    with pytest.raises(ConfigError, match=r"model file not found: _pytest/nope\.py is not inside the installed pytest"):
        parse_model_ref("dist://pytest/_pytest/nope.py", tmp_path / "c.yaml", "model", "cfg")


def test_a_derived_model_is_cached_by_base_and_type(tmp_path, monkeypatch):
    monkeypatch.setenv("LLMBENCH_CACHE", str(tmp_path / "cache"))
    base = tmp_path / "t.gguf"
    base.write_bytes(b"GGUF")
    models = {"target": parse_model_ref(str(base), tmp_path / "c.yaml", "models.target")}
    q2 = parse_model_ref(
        {"quantize": "{models.target}", "type": "Q2_K"}, tmp_path / "c.yaml", "models.draft", "cfg", models
    )
    q4 = parse_model_ref(
        {"quantize": "{models.target}", "type": "Q4_0"}, tmp_path / "c.yaml", "models.draft", "cfg", models
    )
    assert q2.kind == "quantized" and q2.base is models["target"] and q2.quant_type == "Q2_K"
    assert q2.path.parent == tmp_path / "cache" / "derived" and q2.path.name.startswith("t.Q2_K.")
    assert q2.path != q4.path and q2.describe() == f"{base} → Q2_K"
    with pytest.raises(ConfigError, match="can only requantize a local file"):
        parse_model_ref({"quantize": "org/model", "type": "Q2_K"}, tmp_path / "c.yaml", "models.draft", "cfg")
    with pytest.raises(ConfigError, match=r"a derived model is \{quantize: <model>, type: <quant type>\}"):
        parse_model_ref({"quantize": str(base)}, tmp_path / "c.yaml", "models.draft", "cfg")


def test_an_unknown_model_name_lists_the_known_ones(tmp_path):
    with pytest.raises(ConfigError, match=r"unknown model 'drafter' \(known: \['target'\]\)"):
        parse_model_ref(
            "{models.drafter}",
            tmp_path / "c.yaml",
            "model",
            "cfg",
            {"target": parse_model_ref("org/m", tmp_path / "c.yaml", "models.target")},
        )
    with pytest.raises(ConfigError, match="must be a path, dist:// reference or hub id, got 3"):
        parse_model_ref(3, tmp_path / "c.yaml", "model", "cfg")
