"""YAML configs: flag sets + appended flags, defaults, and one clear error line per mistake."""

from pathlib import Path

import pytest

from pytest_llmbench.config import ConfigError, load_config_file, load_configs

GOOD = """
models:
  target: model.gguf
  draft: {quantize: "{models.target}", type: Q2_K}
flag_sets:
  shared: [-c, "4096", -np, 2]
  spec: [--spec-type, draft-simple]
defaults:
  engine: llamacpp
  model: "{models.target}"
  flags: [shared]
  marks: [cpu]
  env: {A: "1"}
configs:
  - name: plain
    marks: [nospec]
  - name: drafted
    flags: [shared, spec]
    args: [-md, "{models.draft}"]
    marks: [spec]
    env: {B: "2"}
"""


@pytest.fixture
def write(tmp_path):
    (tmp_path / "model.gguf").write_bytes(b"GGUF")

    def _write(text: str, name: str = "c.yaml") -> Path:
        p = tmp_path / name
        p.write_text(text)
        return p

    return _write


def test_shared_flags_are_reused_and_per_config_flags_appended(write):
    plain, drafted = load_config_file(write(GOOD))
    assert plain.args == ("-c", "4096", "-np", "2")
    assert drafted.args[:6] == ("-c", "4096", "-np", "2", "--spec-type", "draft-simple")
    assert drafted.args[6] == "-md" and drafted.args[7].endswith(".Q2_K." + drafted.args[7].split(".")[-2] + ".gguf")
    assert drafted.models["draft"].kind == "quantized"


def test_defaults_merge_marks_and_env(write):
    plain, drafted = load_config_file(write(GOOD))
    assert plain.marks == ("cpu", "nospec") and drafted.marks == ("cpu", "spec")
    assert drafted.env == {"A": "1", "B": "2"} and plain.env == {"A": "1"}
    assert plain.engine == "llamacpp" and plain.launcher == "subprocess"


@pytest.mark.parametrize(
    "mutation, config, key, words",
    [
        ("  - name: plain\n    colour: blue\n", "plain", "colour", "unknown key"),
        ("  - name: plain\n    gpus: two\n", "plain", "gpus", "must be an integer"),
        ("  - name: plain\n    model: missing.gguf\n", "plain", "model", "model file not found"),
        ("  - name: plain\n  - name: plain\n", "plain", "name", "duplicate config name"),
        ("  - name: plain\n    flags: [nope]\n", "plain", "flags", "unknown flag set 'nope'"),
        ("  - name: plain\n    startup_timeout: -1\n", "plain", "startup_timeout", "must be > 0"),
    ],
)
def test_bad_config_names_file_config_and_key(write, mutation, config, key, words):
    head = GOOD.split("configs:")[0] + "configs:\n"
    path = write(head + mutation)
    with pytest.raises(ConfigError) as e:
        load_config_file(path)
    msg = str(e.value)
    assert msg.startswith(f"{path}: config {config!r}, key {key!r}: ")
    assert words in msg and "\n" not in msg


def test_not_yaml_names_the_line(write):
    with pytest.raises(ConfigError, match=r"c.yaml: not valid YAML at line 3"):
        load_config_file(write("configs:\n  - name: [unclosed\n"))


def test_unknown_top_level_key(write):
    with pytest.raises(ConfigError, match=r"key 'servers'"):
        load_config_file(write("servers: []\n"))


def test_duplicate_names_across_files(write):
    write(GOOD, "a.yaml")
    path = write(GOOD, "b.yaml")
    with pytest.raises(ConfigError, match=r"b.yaml: config 'plain', key 'name': duplicate config name \(also in"):
        load_configs([path.parent])


def test_dist_reference_finds_a_file_inside_an_installed_wheel(write):
    cfg_text = GOOD.replace("target: model.gguf", "target: dist://pytest/_pytest/__init__.py")
    plain, _ = load_config_file(write(cfg_text))
    assert plain.model.path.name == "__init__.py" and plain.model.path.exists()


def test_dist_reference_to_missing_distribution(write):
    cfg_text = GOOD.replace("target: model.gguf", "target: dist://no-such-dist/x.gguf")
    with pytest.raises(ConfigError, match=r"key 'models.target': model file not found: distribution 'no-such-dist'"):
        load_config_file(write(cfg_text))


def test_repository_cpu_configs_load():
    root = Path(__file__).resolve().parents[1]
    configs = load_configs([root / "benches" / "configs" / "cpu.yaml"])
    assert [c.name for c in configs] == ["smol-nospec", "smol-ngram", "smol-draft"]
    assert all("cpu" in c.marks for c in configs)


def test_parsing_leaves_engine_and_launcher_names_to_the_registry(write):
    """config.py only parses: an engine no registry knows yet is kept (registry.Registry.check rejects it)."""
    head = GOOD.split("configs:")[0] + "configs:\n"
    [cfg] = load_config_file(write(head + "  - name: plain\n    engine: tgi\n    launcher: k8s\n"))
    assert (cfg.engine, cfg.launcher) == ("tgi", "k8s")


def test_api_key_env_names_the_variable_and_only_the_name_is_kept(write, monkeypatch):
    head = GOOD.split("configs:")[0] + "configs:\n"
    path = write(head + "  - name: locked\n    api_key_env: LLMBENCH_CFG_KEY\n")
    with pytest.raises(ConfigError, match=r"config 'locked', key 'api_key_env': environment variable LLMBENCH_CFG_KEY"):
        load_config_file(path)
    monkeypatch.setenv("LLMBENCH_CFG_KEY", "sk-config-test-123")
    (cfg,) = load_config_file(path)
    assert cfg.api_key_env == "LLMBENCH_CFG_KEY" and cfg.api_key == "sk-config-test-123"
    assert "sk-config-test-123" not in repr(cfg)  # a config in a traceback or a record never carries the key
    with pytest.raises(ConfigError, match="key 'api_key_env': 'not a name' is not an environment variable name"):
        load_config_file(write(head + "  - name: locked\n    api_key_env: not a name\n"))
