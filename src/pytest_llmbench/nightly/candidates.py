"""The builds a nightly job knows of, in order, each pinned to what it was when first seen.

Three sources (``--candidates-from``), all giving tags or build specs oldest first:

    file:PATH       one per line, '#' comments (a list a release script writes)
    docker:PATTERN  the local engine's image tags matching a glob (``llmbench-local/llama-server:nightly-*``),
                    in natural order (``nightly-9`` before ``nightly-10``), through the docker SDK
    hook            the ``pytest_llmbench_nightly_candidates`` hook (a registry listing, a build farm)

A tag is a name that moves; a bisect must compare what the nights ran. So each candidate is pinned when the
store first sees it: an image to its digest (its image ID where it has none, as a locally made image), a
binary folder to the hash of its program and libraries. A bisect runs the pins, never the tags.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_llmbench.bisect.builds import SERVER_PROGRAM, BinaryFolder, BuildError, ImageTag, binary_sha256
from pytest_llmbench.errors import LlmbenchError


class CandidateError(LlmbenchError):
    """A candidate list or a build cannot be read; the message names the source or the tag."""


@dataclass(frozen=True)
class Candidate:
    """One build as a nightly names it: ``tag`` as typed, ``kind`` image or bin, ``pinned`` what it is."""

    tag: str
    kind: str  # "image" or "bin"
    pinned: str = ""

    @property
    def label(self) -> str:
        """What tables call it: an image's tag after its repository, a folder's name."""
        if self.kind == "image":
            return self.tag.rsplit("/", 1)[-1].split(":", 1)[-1] if ":" in self.tag.rsplit("/", 1)[-1] else self.tag
        return BinaryFolder(Path(self.tag)).label

    def build(self) -> Any:
        """The bisect build that runs the pin (a moved tag cannot change what a step compares)."""
        if self.kind == "image":
            return ImageTag(self.pinned or self.tag, label=self.label)
        return BinaryFolder(Path(self.tag), label=self.label)

    def arm(self, role: str) -> list[str]:
        """The comparison options that put this build on ``role`` (reference or candidate)."""
        if self.kind == "image":
            ref = self.pinned or self.tag
            return [f"--llmbench-{'reference-image' if role == 'reference' else 'image'}", ref]
        return [f"--llmbench-{role}-bin", str(Path(self.tag).expanduser().resolve())]


def parse_spec(spec: str) -> Candidate:
    """``bin:DIR`` or an existing folder is a binary folder; ``image:REF`` or anything else an image ref."""
    text = spec.strip()
    if not text:
        raise CandidateError("an empty build name")
    if text.startswith("bin:"):
        return Candidate(str(Path(text[4:]).expanduser()), "bin")
    if text.startswith("image:"):
        return Candidate(text[6:], "image")
    if Path(text).expanduser().is_dir():
        return Candidate(str(Path(text).expanduser()), "bin")
    return Candidate(text, "image")


def resolve_pin(c: Candidate, client: Any = None) -> str:
    """What the build is now: an image's digest (``repo@sha256:…``) or image ID, a folder's binary hash."""
    if c.kind == "bin":
        folder = Path(c.tag).expanduser()
        if not (folder / SERVER_PROGRAM).is_file():
            raise CandidateError(f"build {c.tag}: no {SERVER_PROGRAM} in that folder")
        return f"sha256:{binary_sha256(folder / SERVER_PROGRAM)}"
    try:
        m = ImageTag(c.tag, client=client).materialize(Path("."))
    except BuildError as e:
        raise CandidateError(str(e)) from None
    image_id = m.identity.get("id", "")
    digest = m.identity.get("digest", "")
    return digest or image_id or c.tag  # a local image has no digest: its ID is what runs


def natural_key(text: str) -> list[Any]:
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", text)]


def from_file(path: Path) -> list[str]:
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as e:
        raise CandidateError(f"--candidates-from file:{path}: {e.strerror or e}") from None
    return [s for line in lines if (s := line.split("#", 1)[0].strip())]


def from_docker(pattern: str, client: Any = None) -> list[str]:
    """Local image tags matching ``pattern`` (a glob over ``repo:tag``), in natural order."""
    if client is None:
        from pytest_llmbench.launchers.containers import docker_client

        try:
            client = docker_client()
        except RuntimeError as e:
            raise CandidateError(f"--candidates-from docker:{pattern}: {e}") from None
    tags = {t for img in client.images.list() for t in (getattr(img, "tags", None) or [])}
    found = sorted((t for t in tags if fnmatch.fnmatchcase(t, pattern)), key=natural_key)
    if not found:
        raise CandidateError(f"--candidates-from docker:{pattern}: no local image tag matches")
    return found


def list_candidates(
    source: str, hook: Callable[[], Sequence[str] | None] | None = None, client: Any = None
) -> list[str]:
    """The ordered candidate specs from ``source`` (see the module doc)."""
    kind, _, arg = source.partition(":")
    if kind == "file" and arg:
        return from_file(Path(arg))
    if kind == "docker" and arg:
        return from_docker(arg, client)
    if source == "hook":
        found = hook() if hook is not None else None
        if found is None:
            raise CandidateError(
                "--candidates-from hook: no pytest_llmbench_nightly_candidates implementation answered"
            )
        return [str(s) for s in found]
    raise CandidateError(f"--candidates-from {source!r}: one of file:PATH, docker:PATTERN, hook")


def between(specs: Sequence[str], good: str, bad: str) -> list[str]:
    """The candidates strictly between ``good`` and ``bad`` in list order; [] when either is not listed."""
    try:
        i, j = list(specs).index(good), list(specs).index(bad)
    except ValueError:
        return []
    return list(specs[i + 1 : j]) if i < j else []


__all__ = [
    "Candidate",
    "CandidateError",
    "between",
    "from_docker",
    "from_file",
    "list_candidates",
    "natural_key",
    "parse_spec",
    "resolve_pin",
]
