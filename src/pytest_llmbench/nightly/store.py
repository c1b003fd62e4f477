"""Where the nights live after the CI run that made them is gone: one immutable folder per night.

A store is a URL::

    nightly-store/                     a local folder (a mounted volume, a shared disk)
    file:///srv/nights                 the same, through fsspec
    s3://bucket/llmbench, gs://…, memory://…   any fsspec filesystem (pip install 'pytest-llmbench[nightly]')
    git+file:///srv/nights.git#llmbench-nights, git+https://github.com/org/repo.git#llmbench-nights
                                       a branch of a git repository (pushed with the runner's own credentials)

Its layout, the same on every backend::

    nights/<id>/night.json             written last: a folder without it is a night still being written
    nights/<id>/results.jsonl …        the night's results folder, as `history` reads it
    bisects/<id>/results.jsonl …       the bisect a night started (its night's id)
    pins/<tag slug>.json               each candidate's digest or image ID, as first seen

Nothing is ever rewritten: a night id that exists is an error, and a pin that exists is kept (the first
sighting wins). Two jobs appending at once each write their own folder under a fresh id; on a branch the
later push rebases onto the earlier one (different folders never conflict) and tries again.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pytest_llmbench.errors import LlmbenchError
from pytest_llmbench.paths import cache_dir

NIGHT_FILE = "night.json"
NIGHTS, BISECTS, PINS = "nights", "bisects", "pins"


class StoreError(LlmbenchError):
    """The store cannot be read or written; the message names the store URL and the path."""


def new_id(label: str, now: datetime | None = None) -> str:
    """``20261205T093000Z-nightly-08-1a2b``: sorts by time; the random tail keeps two jobs' ids apart."""
    stamp = (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%SZ")
    return f"{stamp}-{slug(label)}-{uuid.uuid4().hex[:4]}"


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_.")[:60] or "night"


def pin_name(tag: str) -> str:
    """A pin's file name: readable, and unique per tag (two tags that slug alike differ in the hash)."""
    return f"{slug(tag.rsplit('/', 1)[-1])}-{hashlib.sha256(tag.encode()).hexdigest()[:8]}.json"


@dataclass(frozen=True)
class StoredNight:
    """A night in the store: its id and its ``night.json``."""

    id: str
    meta: Mapping[str, Any]

    @property
    def time(self) -> str:
        return str(self.meta.get("time") or "")


class _Files:
    """The few file operations a store needs, on one backend."""

    def listdir(self, path: str) -> list[str]:
        raise NotImplementedError

    def exists(self, path: str) -> bool:
        raise NotImplementedError

    def read_text(self, path: str) -> str:
        raise NotImplementedError

    def put_folder(self, local: Path, path: str) -> None:
        """Copy ``local`` to ``path`` whole: readers see all of it or none of it (``night.json`` last)."""
        raise NotImplementedError

    def put_new_text(self, path: str, text: str) -> bool:
        """Write ``path`` only if it does not exist; False when it already did."""
        raise NotImplementedError

    def get_folder(self, path: str, local: Path) -> None:
        raise NotImplementedError


class _LocalFiles(_Files):
    """A plain folder: each night is built beside its place and renamed in (atomic on one filesystem)."""

    def __init__(self, root: Path):
        self.root = root

    def _p(self, path: str) -> Path:
        return self.root / path

    def listdir(self, path: str) -> list[str]:
        p = self._p(path)
        return sorted(c.name for c in p.iterdir() if not c.name.startswith(".")) if p.is_dir() else []

    def exists(self, path: str) -> bool:
        return self._p(path).exists()

    def read_text(self, path: str) -> str:
        return self._p(path).read_text(encoding="utf-8")

    def put_folder(self, local: Path, path: str) -> None:
        dest = self._p(path)
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", dir=dest.parent))
        try:
            shutil.copytree(local, tmp, dirs_exist_ok=True)
            os.rename(tmp, dest)  # fails if dest exists (a non-empty folder): nothing is overwritten
        except OSError as e:
            shutil.rmtree(tmp, ignore_errors=True)
            raise StoreError(f"{dest}: cannot add ({e.strerror or e}); a night's folder is written once") from None

    def put_new_text(self, path: str, text: str) -> bool:
        p = self._p(path)
        p.parent.mkdir(parents=True, exist_ok=True)
        try:
            with open(p, "x", encoding="utf-8") as f:
                f.write(text)
        except FileExistsError:
            return False
        return True

    def get_folder(self, path: str, local: Path) -> None:
        shutil.copytree(self._p(path), local, dirs_exist_ok=True)


class _FsspecFiles(_Files):
    """Any fsspec filesystem (s3, gcs, azure, memory, file): object stores have no rename, so a reader
    counts a night only once its ``night.json``, uploaded last, is there."""

    def __init__(self, url: str):
        try:
            import fsspec
        except ImportError:
            raise StoreError(f"store {url}: needs fsspec: pip install 'pytest-llmbench[nightly]'") from None
        try:
            self.fs, self.root = fsspec.core.url_to_fs(url)
        except (ImportError, ValueError) as e:
            raise StoreError(f"store {url}: {e}") from None
        self.root = self.root.rstrip("/")

    def _p(self, path: str) -> str:
        return f"{self.root}/{path}" if path else self.root

    def listdir(self, path: str) -> list[str]:
        p = self._p(path)
        if not self.fs.exists(p):
            return []
        names = [str(e).rstrip("/").rsplit("/", 1)[-1] for e in self.fs.ls(p, detail=False)]
        return sorted(n for n in names if not n.startswith("."))

    def exists(self, path: str) -> bool:
        return bool(self.fs.exists(self._p(path)))

    def read_text(self, path: str) -> str:
        with self.fs.open(self._p(path), "r", encoding="utf-8") as f:
            return str(f.read())

    def put_folder(self, local: Path, path: str) -> None:
        if self.exists(path):
            raise StoreError(f"{self._p(path)}: already exists; a night's folder is written once")
        files = sorted(p for p in local.rglob("*") if p.is_file())
        last = [p for p in files if p.name == NIGHT_FILE and p.parent == local]
        for f in [p for p in files if p not in last] + last:
            self.fs.makedirs(self._p(f"{path}/{f.parent.relative_to(local).as_posix()}"), exist_ok=True)
            self.fs.put_file(str(f), self._p(f"{path}/{f.relative_to(local).as_posix()}"))

    def put_new_text(self, path: str, text: str) -> bool:
        if self.exists(path):  # no create-if-absent on object stores: two first sightings at once both write
            return False
        self.fs.makedirs(self._p(path).rsplit("/", 1)[0], exist_ok=True)
        with self.fs.open(self._p(path), "w", encoding="utf-8") as f:
            f.write(text)
        return True

    def get_folder(self, path: str, local: Path) -> None:
        local.mkdir(parents=True, exist_ok=True)
        src = self._p(path)
        for f in self.fs.find(src):
            name = str(f)
            rel = name[len(src) :] if name.startswith(src) else name[len(src.lstrip("/")) :]
            rel = rel.lstrip("/")
            (local / rel).parent.mkdir(parents=True, exist_ok=True)
            self.fs.get_file(f, str(local / rel))


class Store:
    """One store of nights; every backend has the same layout and the same operations."""

    def __init__(self, url: str, files: _Files):
        self.url = url
        self.files = files

    # --- reading ---------------------------------------------------------------------------------
    def refresh(self) -> None:
        """See what other jobs added since (a branch is fetched again; folders are always current)."""

    def nights(self) -> list[StoredNight]:
        """Every complete night, oldest first (by the time its job started, then id)."""
        self.refresh()
        out = []
        for name in self.files.listdir(NIGHTS):
            if not self.files.exists(f"{NIGHTS}/{name}/{NIGHT_FILE}"):
                continue  # still being written by another job (an object store has no rename)
            try:
                meta = json.loads(self.files.read_text(f"{NIGHTS}/{name}/{NIGHT_FILE}"))
            except (OSError, ValueError) as e:
                raise StoreError(f"store {self.url}: {NIGHTS}/{name}/{NIGHT_FILE}: {e}") from None
            out.append(StoredNight(name, meta))
        return sorted(out, key=lambda n: (n.time, n.id))

    def bisect_ids(self) -> list[str]:
        return self.files.listdir(BISECTS)

    def fetch_nights(self, dest: Path) -> list[Path]:
        """Each night's folder copied under ``dest/<id>`` (a local store's own folders, as they are):
        what ``history`` reads, one results folder per night, named by the night."""
        if isinstance(self.files, _LocalFiles):
            return [self.files.root / NIGHTS / n.id for n in self.nights()]
        out = []
        for n in self.nights():
            local = dest / n.id
            if not (local / NIGHT_FILE).is_file():  # a night never changes: fetched once
                self.files.get_folder(f"{NIGHTS}/{n.id}", local)
            out.append(local)
        return out

    def fetch_bisect(self, night_id: str, dest: Path) -> Path | None:
        if night_id not in self.bisect_ids():
            return None
        if isinstance(self.files, _LocalFiles):
            return self.files.root / BISECTS / night_id
        self.files.get_folder(f"{BISECTS}/{night_id}", dest / night_id)
        return dest / night_id

    def regression(self, night_id: str) -> dict[str, Any] | None:
        """The finding a regressed night's job recorded beside it (``bisects/<id>/regression.json``)."""
        path = f"{BISECTS}/{night_id}/regression.json"
        if not self.files.exists(path):
            return None
        try:
            return dict(json.loads(self.files.read_text(path)))
        except (OSError, ValueError) as e:
            raise StoreError(f"store {self.url}: {path}: {e}") from None

    def pins(self) -> dict[str, dict[str, Any]]:
        """tag → its pin record (``{"tag", "pinned", "kind", "first_seen"}``)."""
        out = {}
        for name in self.files.listdir(PINS):
            try:
                rec = json.loads(self.files.read_text(f"{PINS}/{name}"))
            except (OSError, ValueError) as e:
                raise StoreError(f"store {self.url}: {PINS}/{name}: {e}") from None
            out[str(rec["tag"])] = rec
        return out

    # --- appending -------------------------------------------------------------------------------
    def add_night(self, folder: Path, meta: Mapping[str, Any]) -> str:
        """Append one night (``folder`` holds its results; ``meta`` becomes its ``night.json``)."""
        night_id = str(meta["id"])
        with tempfile.TemporaryDirectory(prefix="llmbench-night-") as tmp:
            staged = Path(tmp) / night_id
            shutil.copytree(folder, staged)
            (staged / NIGHT_FILE).write_text(json.dumps(dict(meta), indent=1, sort_keys=True) + "\n", encoding="utf-8")
            self._put(staged, f"{NIGHTS}/{night_id}", f"night {night_id}")
        return night_id

    def add_bisect(self, night_id: str, folder: Path) -> None:
        self._put(folder, f"{BISECTS}/{night_id}", f"bisect of night {night_id}")

    def pin(self, tag: str, pinned: str, kind: str) -> dict[str, Any]:
        """Record ``tag`` → ``pinned`` unless the store already has a pin for it; the stored pin is returned
        (the first sighting: a tag moved since then is the stored digest's business, and is reported)."""
        known = self.pins().get(tag)
        if known is not None:
            return known
        rec = {"tag": tag, "pinned": pinned, "kind": kind, "first_seen": datetime.now(UTC).isoformat()}
        self._put_text(f"{PINS}/{pin_name(tag)}", json.dumps(rec, sort_keys=True) + "\n", f"pin {tag}")
        return self.pins().get(tag, rec)

    def _put(self, folder: Path, path: str, what: str) -> None:
        self.files.put_folder(folder, path)

    def _put_text(self, path: str, text: str, what: str) -> None:
        self.files.put_new_text(path, text)


class GitStore(Store):
    """A branch of a git repository: a clone kept in the cache (one job at a time per clone: a lock), every
    append a commit pushed at once; a rejected push (another job pushed first) pulls with rebase and tries
    again: two jobs never write the same path, so the rebase never conflicts."""

    def __init__(self, url: str, remote: str, branch: str, clone: Path | None = None, attempts: int = 8):
        self.remote, self.branch, self.attempts = remote, branch, attempts
        key = hashlib.sha256(f"{remote}#{branch}".encode()).hexdigest()[:12]
        self.clone = clone or cache_dir() / "stores" / key
        super().__init__(url, _LocalFiles(self.clone))
        self._ready = False

    def _git(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "GIT_TERMINAL_PROMPT": "0"}
        proc = subprocess.run(["git", "-C", str(self.clone), *args], capture_output=True, text=True, env=env)
        if check and proc.returncode != 0:
            words = (proc.stderr.strip() or proc.stdout.strip()).splitlines()[-1:] or ["no output"]
            raise StoreError(f"store {self.url}: git {args[0]}: {words[0]}")
        return proc

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        self.clone.parent.mkdir(parents=True, exist_ok=True)
        with open(self.clone.parent / f"{self.clone.name}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def _sync(self) -> None:
        """The clone at the branch's tip (a new branch starts empty, with no history of the repository's)."""
        if not (self.clone / ".git").is_dir():
            self.clone.mkdir(parents=True, exist_ok=True)
            self._git("init", "-q")
            self._git("remote", "add", "origin", self.remote)
            self._git("config", "user.name", os.environ.get("GIT_AUTHOR_NAME", "llmbench nightly"))
            self._git("config", "user.email", os.environ.get("GIT_AUTHOR_EMAIL", "llmbench-nightly@localhost"))
        fetched = self._git("fetch", "-q", "origin", self.branch, check=False)
        if fetched.returncode == 0:
            self._git("checkout", "-q", "-B", self.branch, "FETCH_HEAD")
        elif "couldn't find remote ref" in fetched.stderr or "not found" in fetched.stderr.lower():
            if self._git("rev-parse", "-q", "--verify", "HEAD", check=False).returncode != 0:
                self._git("checkout", "-q", "--orphan", self.branch)
        else:
            self._git("fetch", "origin", self.branch)  # raises with git's own words

    def refresh(self) -> None:
        with self._locked():
            self._sync()

    def _commit_and_push(self, path: str, message: str) -> None:
        self._git("add", "--", path)
        self._git("commit", "-q", "-m", message, "--", path)
        for attempt in range(self.attempts):
            if self._git("push", "-q", "origin", f"HEAD:refs/heads/{self.branch}", check=False).returncode == 0:
                return
            time.sleep(0.2 * (attempt + 1))
            if self._git("pull", "-q", "--rebase", "origin", self.branch, check=False).returncode != 0:
                self._git("rebase", "--abort", check=False)
                raise StoreError(f"store {self.url}: {path}: the rebase onto the branch failed; nothing pushed")
        raise StoreError(
            f"store {self.url}: {path}: push rejected {self.attempts} times; the commit is in {self.clone}"
        )

    def _put(self, folder: Path, path: str, what: str) -> None:
        with self._locked():
            self._sync()
            self.files.put_folder(folder, path)
            self._commit_and_push(path, f"llmbench: {what}")

    def _put_text(self, path: str, text: str, what: str) -> None:
        with self._locked():
            self._sync()
            if self.files.put_new_text(path, text):
                self._commit_and_push(path, f"llmbench: {what}")


def open_store(url: str | Path, clone: Path | None = None) -> Store:
    """The store a ``--store`` URL names (see the module doc); a bad URL is a :class:`StoreError`.
    ``clone``: where a git store keeps its clone (default: the cache, one per remote and branch)."""
    text = str(url).strip()
    if not text:
        raise StoreError("--store: empty")
    if text.startswith("git+"):
        remote, sep, branch = text[4:].partition("#")
        if not sep or not branch:
            raise StoreError(f"store {text}: a git store names its branch: git+REMOTE#BRANCH")
        return GitStore(text, remote, branch, clone=clone)
    if "://" in text:
        return Store(text, _FsspecFiles(text))
    root = Path(text).expanduser()
    if root.exists() and not root.is_dir():
        raise StoreError(f"store {text}: not a folder")
    return Store(text, _LocalFiles(root))


__all__ = ["GitStore", "Store", "StoreError", "StoredNight", "new_id", "open_store", "pin_name"]
