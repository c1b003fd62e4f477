"""The config declaration (config_schema.py): the committed JSON Schema is what it generates, every config
in the repo passes both the schema and the loader, and each malformed config gives one error naming file
and key, through the loader (as a session runs it), ``check-config`` and, where a schema can see it,
the JSON Schema."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml

from pytest_llmbench.cli.check_config import builtin_schema_text
from pytest_llmbench.cli.check_config import main as check_config
from pytest_llmbench.config import ConfigError, load_configs
from pytest_llmbench.config_schema import REGENERATE, SCHEMA_FILE
from pytest_llmbench.registry import Registry

ROOT = Path(__file__).resolve().parents[1]
HEADER = "# yaml-language-server: $schema="


def _repo_config_files() -> list[Path]:
    """Every tracked YAML file of the repo that is a config file (a top-level ``configs:`` list)."""
    out = subprocess.run(["git", "ls-files", "*.yaml", "*.yml"], cwd=ROOT, capture_output=True, text=True, check=True)
    found = []
    for f in (ROOT / line for line in out.stdout.split()):
        docs = list(yaml.safe_load_all(f.read_text()))  # a Kubernetes manifest has several
        if len(docs) == 1 and isinstance(docs[0], dict) and "configs" in docs[0]:
            found.append(f)
    return found


def test_committed_schema_is_what_the_declaration_generates():
    assert SCHEMA_FILE.read_text(encoding="utf-8") == builtin_schema_text(), (
        f"{SCHEMA_FILE.relative_to(ROOT)} is stale: regenerate it with `{REGENERATE}`"
    )


def test_the_schema_is_a_valid_draft_2020_12_schema_and_names_the_registry():
    schema = json.loads(builtin_schema_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    server = schema["$defs"]["ServerKeys"]["properties"]
    assert server["engine"]["enum"] == sorted(Registry.builtin().engines) == ["llamacpp", "sglang", "vllm"]
    assert server["launcher"]["enum"] == ["docker", "subprocess"]
    assert all(p["description"] for p in server.values())


def test_the_repo_has_config_files_and_each_names_the_schema():
    files = _repo_config_files()
    assert {f.relative_to(ROOT).as_posix() for f in files} >= {
        "benches/configs/cpu.yaml",
        "benches/configs/gpu/sglang-qwen38-27b.yaml",
        "experiments/compare/target_q2k_cpu.yaml",
    }
    for f in files:
        first = f.read_text().splitlines()[0]
        assert first.startswith(HEADER), f"{f}: first line must be {HEADER}<relative path to the schema>"
        assert (f.parent / first.removeprefix(HEADER)).resolve() == SCHEMA_FILE.resolve(), f


def test_every_repo_config_passes_the_schema_and_check_config(capsys, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv(
        "LLMBENCH_NIGHT_THREADS", "2"
    )  # experiments/history/night.yaml takes its -t from the environment
    files = _repo_config_files()
    validator = jsonschema.Draft202012Validator(json.loads(SCHEMA_FILE.read_text()))
    for f in files:
        assert [e.message for e in validator.iter_errors(yaml.safe_load(f.read_text()))] == [], f
    # the nightly-history config reuses cpu.yaml's config name on purpose (the series keys match a real
    # nightly run), so it is a set of its own: checked alone, as its campaign passes it alone
    night = [f for f in files if f.name == "night.yaml"]
    assert check_config([str(f) for f in files if f not in night]) == 0
    assert check_config([str(f) for f in night]) == 0
    out = capsys.readouterr().out
    assert out.startswith("check-config: OK, ") and out.count("check-config: OK, ") == 2 and out.count("\n") == 2


def test_check_jsonschema_accepts_the_repo_configs():
    """The README's CI lint, as a user runs it (check-jsonschema is in the dev extra)."""
    files = [str(f) for f in _repo_config_files()]
    run = subprocess.run(
        [sys.executable, "-m", "check_jsonschema", "--schemafile", str(SCHEMA_FILE), *files],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stdout + run.stderr


def test_the_seed_posts_configs_are_all_declared_and_valid():
    """Every config the seed posts' published figures name is a config of benches/configs/gpu/, and those
    files load (the figures are the seeds' matrices: spec-decode, NVFP4 vs FP8, Swift, Flash-Next)."""
    figures = yaml.safe_load((ROOT / "benches" / "gpu" / "published_figures.yaml").read_text())["figures"]
    named = {f["config"] for f in figures}
    configs = {c.name: c for c in load_configs([ROOT / "benches" / "configs" / "gpu"])}
    Registry.builtin().check_all(configs.values())
    assert len(named) >= 10 and named <= set(configs), sorted(named - set(configs))


# --- ten and more malformed configs, one error each --------------------------------------------------------

BASE = """\
flag_sets:
  small: [-c, "512"]
defaults: {{engine: llamacpp, model: m.gguf, marks: [cpu]}}
configs:
  - name: a
{entry}"""

# fmt: off
#: id, the lines of config "a" (or a whole file), the config and key the error names, words of the message,
#: whether a JSON Schema can see it (references, duplicates and files are beyond a schema).
MALFORMED = [
    ("unknown-key", "    colour: blue\n", "a", "colour", "unknown key", True),
    ("wrong-type", "    gpus: many\n", "a", "gpus", "must be an integer, got str 'many'", True),
    ("bad-flag-set", "    flags: [small, nope]\n", "a", "flags", "unknown flag set 'nope'", False),
    ("duplicate-name", "  - name: a\n", "a", "name", "duplicate config name", False),
    ("unknown-engine", "    engine: tgi\n", "a", "engine", "unknown engine 'tgi'", True),
    ("unknown-launcher", "    launcher: k8s\n", "a", "launcher", "unknown launcher 'k8s'", True),
    ("bad-model-ref", '    model: "{models.nope}"\n', "a", "model", "unknown model 'nope'", False),
    ("missing-model-file", "    model: missing.gguf\n", "a", "model", "model file not found", False),
    ("marks-not-a-list", "    marks: spec\n", "a", "marks", "must be a list of mark names", True),
    ("bad-mark-name", "    marks: [spec-8]\n", "a", "marks", "mark 'spec-8' is not a valid Python identifier", True),
    ("negative-gpus", "    gpus: -1\n", "a", "gpus", "must be ≥ 0", True),
    ("zero-timeout", "    startup_timeout: 0\n", "a", "startup_timeout", "must be > 0", True),
    ("bad-env-value", "    env: {A: true}\n", "a", "env.A", "value of A must be a string, got True", True),
    ("bad-name", "    description: x\n  - name: b/c\n", "b/c", "name", "use letters, digits", True),
    ("derived-model-without-type", "    model: {quantize: m.gguf}\n", "a", "model", "a derived model is", True),
    ("missing-name", "  - {engine: llamacpp}\n", None, "name", "configs[1] needs a string 'name'", True),
    ("defaults-wrong-type", "FILE:configs: [{name: a}]\ndefaults: {gpus: x, engine: llamacpp, model: m.gguf}\n",
     None, "defaults.gpus", "must be an integer", True),
    ("unknown-top-level-key", "FILE:servers: []\nconfigs: []\n", None, "servers", "unknown top-level key", True),
]
# fmt: on


def _file(tmp_path: Path, entry: str) -> Path:
    (tmp_path / "m.gguf").write_bytes(b"GGUF")
    path = tmp_path / "bad.yaml"
    path.write_text(entry.removeprefix("FILE:") if entry.startswith("FILE:") else BASE.format(entry=entry))
    return path


def _expected_prefix(path: Path, config: str | None, key: str) -> str:
    return f"{path}: config {config!r}, key {key!r}: " if config else f"{path}, key {key!r}: "


@pytest.mark.parametrize(
    "entry, config, key, words, schema_sees", [m[1:] for m in MALFORMED], ids=[m[0] for m in MALFORMED]
)
def test_a_malformed_config_is_one_error_naming_file_config_and_key(
    tmp_path, capsys, entry, config, key, words, schema_sees
):
    path = _file(tmp_path, entry)
    prefix = _expected_prefix(path, config, key)

    # the loader, as a session runs it: parse, then the registries
    with pytest.raises(ConfigError) as e:
        Registry.builtin().check_all(load_configs([path]))
    assert str(e.value).startswith(prefix) and words in str(e.value) and "\n" not in str(e.value)

    # check-config: exactly that one line, exit 1
    assert check_config([str(path)]) == 1
    out = capsys.readouterr()
    assert out.out.splitlines() == [str(e.value)]
    assert "1 error(s)" in out.err

    # the schema sees what it can; what it cannot is a reference, a duplicate or a file
    validator = jsonschema.Draft202012Validator(json.loads(SCHEMA_FILE.read_text()))
    errors = list(validator.iter_errors(yaml.safe_load(path.read_text())))
    if schema_sees:
        assert errors, f"the schema accepts {entry!r}"
        where = ["/".join(map(str, err.absolute_path)) + ": " + err.message for err in errors]
        assert any(key.split(".")[0] in w for w in where), where
    else:
        assert errors == []


def test_the_malformed_set_covers_what_the_issue_lists():
    ids = {m[0] for m in MALFORMED}
    assert len(ids) == len(MALFORMED) >= 10
    assert {"unknown-key", "wrong-type", "bad-flag-set", "duplicate-name", "unknown-engine", "bad-model-ref"} <= ids


def test_the_documented_example_config_passes_the_schema():
    """The config example of docs/CONFIG.md ("Writing a config", moved there from the README in issue 54)."""
    page = (ROOT / "docs" / "CONFIG.md").read_text()
    section = page.split("# Writing a config", 1)[1]
    example = section.split("```yaml\n", 1)[1].split("```", 1)[0]
    validator = jsonschema.Draft202012Validator(json.loads(SCHEMA_FILE.read_text()))
    assert [e.message for e in validator.iter_errors(yaml.safe_load(example))] == []
