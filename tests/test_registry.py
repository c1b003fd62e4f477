"""The session's engines and launchers (filled from the hooks) and the config checks that need them."""

import pytest

from pytest_llmbench.config import load_config_file
from pytest_llmbench.engines.llamacpp import LlamaCppEngine
from pytest_llmbench.errors import ConfigError, RegistryError
from pytest_llmbench.registry import Registry

HEAD = """
defaults: {engine: llamacpp, model: model.gguf}
configs:
"""


@pytest.fixture
def config_of(tmp_path):
    (tmp_path / "model.gguf").write_bytes(b"GGUF")

    def _config(entry: str):
        path = tmp_path / "c.yaml"
        path.write_text(HEAD + entry)
        return path, load_config_file(path)[0]

    return _config


def test_builtin_has_the_three_engines_and_two_launchers():
    reg = Registry.builtin()
    assert sorted(reg.engines) == ["llamacpp", "sglang", "vllm"]
    assert sorted(reg.launchers) == ["docker", "subprocess"]
    assert isinstance(reg.engine("llamacpp"), LlamaCppEngine)
    assert reg.engine("llamacpp") is not reg.engine("llamacpp"), "a fresh adapter per server"


@pytest.mark.parametrize(
    "entry, key, words",
    [
        (
            "  - name: plain\n    engine: tgi\n",
            "engine",
            "unknown engine 'tgi' (known: ['llamacpp', 'sglang', 'vllm'])",
        ),
        (
            "  - name: plain\n    launcher: k8s\n",
            "launcher",
            "unknown launcher 'k8s' (known: ['docker', 'subprocess'])",
        ),
        ("  - name: plain\n    args: [--port, '1']\n", "args", "--port is set by the plugin"),
        ("  - name: plain\n    launcher: docker\n", "image", "the docker launcher needs an image"),
    ],
)
def test_check_names_file_config_and_key(config_of, entry, key, words):
    path, cfg = config_of(entry)
    with pytest.raises(ConfigError) as e:
        Registry.builtin().check(cfg)
    assert str(e.value).startswith(f"{path}: config 'plain', key {key!r}: ") and words in str(e.value)


def test_a_config_the_registry_accepts(config_of):
    _, cfg = config_of("  - name: plain\n")
    Registry.builtin().check(cfg)  # no error


class Renamed(LlamaCppEngine):
    name = "my-llamacpp"


class Nameless:
    name = ""


class FakeHook:
    def __init__(self, engines, launchers=()):
        self.engines, self.launchers = engines, launchers

    def pytest_llmbench_engines(self, config):
        return self.engines

    def pytest_llmbench_launchers(self, config):
        return self.launchers


class FakeConfig:
    def __init__(self, hook):
        self.hook = hook


def test_from_hooks_adds_every_implementation_and_refuses_a_taken_name():
    class Other(LlamaCppEngine):
        name = "llamacpp"

    reg = Registry.from_hooks(FakeConfig(FakeHook([[Renamed], None, [LlamaCppEngine]])))
    assert reg.engines == {"my-llamacpp": Renamed, "llamacpp": LlamaCppEngine}
    with pytest.raises(
        RegistryError, match=r"engine name 'llamacpp' is registered twice: .*LlamaCppEngine and .*Other"
    ):
        Registry.from_hooks(FakeConfig(FakeHook([[LlamaCppEngine], [Other]])))
    with pytest.raises(RegistryError, match="has no name"):
        Registry.from_hooks(FakeConfig(FakeHook([[Nameless]])))
