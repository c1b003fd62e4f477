"""llama.cpp adapter: per-request accept length from the final chunk's timings."""

from types import SimpleNamespace

import pytest

from pytest_llmbench.engines.llamacpp import LlamaCppEngine


def engine(*args):
    e = LlamaCppEngine()
    e.configure(SimpleNamespace(args=tuple(args)))
    return e


def test_accept_length_is_tokens_per_verify_step():
    spec = engine("--spec-type", "draft-simple").request_spec(
        {"timings": {"predicted_n": 100, "draft_n": 120, "draft_n_accepted": 60}}, 100
    )
    assert spec.accept_length == pytest.approx(100 / 40) and spec.verify_steps == 40 and spec.drafted == 120


def test_drafting_server_that_drafted_nothing_accepts_one_token_per_step():
    spec = engine("--spec-type", "ngram-mod").request_spec({"timings": {"predicted_n": 64}}, 64)
    assert spec.accept_length == 1.0 and spec.drafted == 0 and spec.source == "timings (no drafts)"


def test_server_without_drafting_reports_no_accept_length():
    assert engine("-c", "4096").request_spec({"timings": {"predicted_n": 64}}, 64) is None
    assert engine("--spec-type", "none").request_spec({"timings": {"predicted_n": 64}}, 64) is None


def test_a_hub_revision_is_refused_with_how_to_pin_a_gguf():
    """llama.cpp's -hf takes no revision: a pinned hub id must fail at load time, not run unpinned."""
    import dataclasses
    from pathlib import Path

    from pytest_llmbench.config import ServerConfig
    from pytest_llmbench.models import ModelRef

    cfg = ServerConfig(
        name="gguf",
        engine="llamacpp",
        launcher="docker",
        source=Path("x.yaml"),
        model=ModelRef("hub", "unsloth/Qwen3.8-Flash-Next-GGUF@766911a6", revision="766911a6"),
    )
    key, message = LlamaCppEngine.validate(cfg)
    assert key == "model" and "@766911a6" in message and "local path" in message
    unpinned = dataclasses.replace(cfg, model=ModelRef("hub", "unsloth/Qwen3.8-Flash-Next-GGUF"))
    assert LlamaCppEngine.validate(unpinned) is None


def _moved_build(tmp_path):
    """A llama.cpp-like build compiled in ``built/`` (RUNPATH: that absolute folder, as cmake links it) and
    copied to ``moved/`` with a library of its own; ``built/`` still holds the other build's library."""
    import shutil
    import subprocess

    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler to build a program with an absolute RUNPATH")
    built, moved = tmp_path / "built", tmp_path / "moved"
    for folder, name in ((built, "the build at the old path"), (moved, "the moved build")):
        folder.mkdir()
        (folder / "lib.c").write_text(f'const char *which(void) {{ return "{name}"; }}\n')
        subprocess.run([cc, "-shared", "-fPIC", "-o", folder / "libggml.so", folder / "lib.c"], check=True)
    (built / "main.c").write_text("#include <stdio.h>\nconst char *which(void);\nint main(void) { puts(which()); }\n")
    program = built / "llama-server"
    subprocess.run(
        [cc, "-o", program, built / "main.c", f"-L{built}", "-lggml", f"-Wl,-rpath,{built}", "-Wl,--enable-new-dtags"],
        check=True,
    )
    shutil.copy2(program, moved / "llama-server")
    return moved / "llama-server"


def test_a_moved_build_runs_the_libraries_beside_it_not_those_its_runpath_names(tmp_path):
    """The records name a build by the program and the libraries beside it (launchers/identity.py); a build
    folder moved from where cmake linked it (a CI artifact, a build carried to a GPU host) must run those."""
    import os
    import subprocess

    program = _moved_build(tmp_path)
    cfg = SimpleNamespace(launcher="subprocess", engine_options={"binary": str(program)})
    env = {**os.environ, **LlamaCppEngine().child_env(cfg)}
    ran = subprocess.run([program], env=env, capture_output=True, text=True, check=True).stdout.strip()
    assert ran == "the moved build"
    unaided = subprocess.run([program], capture_output=True, text=True, check=True).stdout.strip()
    assert unaided == "the build at the old path"  # what it ran before: the loader follows RUNPATH


def test_the_own_folder_goes_first_and_only_where_it_holds_libraries(tmp_path, monkeypatch):
    from pytest_llmbench.engines.llamacpp import own_libraries_first

    monkeypatch.setenv("LD_LIBRARY_PATH", "/opt/cuda/lib64")
    (tmp_path / "libllama.so.0").write_bytes(b"")
    assert own_libraries_first(tmp_path) == {"LD_LIBRARY_PATH": f"{tmp_path}:/opt/cuda/lib64"}
    monkeypatch.delenv("LD_LIBRARY_PATH")
    assert own_libraries_first(tmp_path) == {"LD_LIBRARY_PATH": str(tmp_path)}
    static = tmp_path / "static"
    static.mkdir()
    (static / "llama-server").write_bytes(b"")
    assert own_libraries_first(static) == {}
    docker = SimpleNamespace(launcher="docker", engine_options={"binary": str(tmp_path / "llama-server")})
    assert LlamaCppEngine().child_env(docker) == {}


def test_a_program_named_on_path_brings_its_own_folder(tmp_path, monkeypatch):
    (tmp_path / "llama-server").write_bytes(b"")
    (tmp_path / "llama-server").chmod(0o755)
    (tmp_path / "libggml.so").write_bytes(b"")
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("LD_LIBRARY_PATH", raising=False)
    cfg = SimpleNamespace(launcher="subprocess", engine_options={"binary": "llama-server"})
    assert LlamaCppEngine().child_env(cfg) == {"LD_LIBRARY_PATH": str(tmp_path)}


def test_llama_quantize_runs_the_libraries_beside_it_too(tmp_path, monkeypatch):
    """Preparing a requantized draft runs llama-quantize of the same build folder: the same rule."""
    from pytest_llmbench.models import ModelRef

    folder = tmp_path / "bin"
    folder.mkdir()
    (folder / "libllama.so").write_bytes(b"")
    quantize = folder / "llama-quantize"
    quantize.write_text('#!/bin/sh\nprintf "%s" "$LD_LIBRARY_PATH" > "$3"\n')  # args: --allow-requantize in out type
    quantize.chmod(0o755)
    monkeypatch.setenv("LLAMA_CPP_BIN_DIR", str(folder))
    monkeypatch.delenv("LD_LIBRARY_PATH", raising=False)
    base = ModelRef("path", "base.gguf", path=tmp_path / "base.gguf")
    out = tmp_path / "derived" / "draft.Q2_K.gguf"
    cfg = SimpleNamespace(
        model=ModelRef("quantized", "base.gguf@Q2_K", path=out, base=base, quant_type="Q2_K"), models={}
    )
    with open(tmp_path / "server.log", "w") as log:
        LlamaCppEngine().prepare(cfg, log)
    assert out.read_text() == str(folder)


def test_the_options_come_from_the_servers_own_help_with_their_short_forms_and_whether_they_take_a_value():
    cfg = SimpleNamespace(launcher="subprocess", engine_options={})
    options = {o.spellings: o.takes_value for o in LlamaCppEngine().cli_options(cfg)}  # the real llama-server
    assert options[("-hft", "--hf-token")] is True
    assert options[("--api-key",)] is True
    assert options[("-c", "--ctx-size")] is True
    assert options[("--cors-credentials", "--no-cors-credentials")] is False
    assert options[("--metrics",)] is False
