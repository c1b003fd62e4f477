"""The store of nights: one immutable folder per night on a folder, a git branch and fsspec URLs; two jobs
appending at once (real processes) lose nothing; a pin is the first sighting's."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from pytest_llmbench.nightly.store import GitStore, Store, StoreError, new_id, open_store


def _night(tmp: Path, label: str, value: float = 1.0) -> tuple[Path, dict]:
    folder = tmp / f"src-{label}"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "results.jsonl").write_text(json.dumps({"record": "session", "value": value}) + "\n")
    (folder / "summary.md").write_text(f"# {label}\n")
    return folder, {"id": new_id(label), "night": label, "time": f"2026-12-0{len(label) % 9 + 1}T00:00:00+00:00"}


def _bare_repo(tmp: Path) -> str:
    remote = tmp / "nights.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    return f"git+file://{remote}#llmbench-nights"


def _stores(tmp: Path) -> list[Store]:
    git = open_store(_bare_repo(tmp), clone=tmp / "clone")  # this test's own clone, not the user's cache
    assert isinstance(git, GitStore)
    return [
        open_store(tmp / "folder"),
        open_store(f"file://{tmp / 'fsspec'}"),
        open_store("memory://llmbench-test"),
        git,
    ]


def test_each_backend_appends_lists_fetches_and_never_rewrites_a_night(tmp_path):
    for store in _stores(tmp_path):
        folder, meta = _night(tmp_path, "nightly-01")
        store.add_night(folder, meta)
        (night,) = store.nights()
        assert night.id == meta["id"] and night.meta["night"] == "nightly-01", store.url
        fetched = store.fetch_nights(tmp_path / f"fetch-{len(store.url)}")
        assert [p.name for p in fetched] == [meta["id"]]
        assert json.loads((fetched[0] / "results.jsonl").read_text())["value"] == 1.0
        assert (fetched[0] / "night.json").is_file() and (fetched[0] / "summary.md").is_file()
        with pytest.raises(StoreError, match=meta["id"]):
            store.add_night(folder, meta)  # the same id again: refused, the first one kept
        assert len(store.nights()) == 1
        store.add_bisect(meta["id"], folder)
        assert store.bisect_ids() == [meta["id"]]


def test_a_pin_is_the_first_sighting(tmp_path):
    for store in _stores(tmp_path):
        first = store.pin("llmbench-local/llama-server:nightly-08", "sha256:aaa", "image")
        again = store.pin("llmbench-local/llama-server:nightly-08", "sha256:bbb", "image")  # the tag moved
        assert first["pinned"] == again["pinned"] == "sha256:aaa", store.url
        assert store.pins()["llmbench-local/llama-server:nightly-08"]["pinned"] == "sha256:aaa"


def test_a_night_still_being_written_is_not_read(tmp_path):
    store = open_store(tmp_path / "store")
    half = tmp_path / "store" / "nights" / "20261205T000000Z-nightly-02-abcd"
    half.mkdir(parents=True)
    (half / "results.jsonl").write_text("{}\n")  # an object store's upload cut before night.json
    assert store.nights() == []


def test_bad_urls_are_named(tmp_path):
    with pytest.raises(StoreError, match="git\\+REMOTE#BRANCH"):
        open_store("git+file:///nowhere.git")
    (tmp_path / "f").write_text("x")
    with pytest.raises(StoreError, match="not a folder"):
        open_store(tmp_path / "f")
    with pytest.raises(StoreError, match="nosuchproto"):
        open_store("nosuchproto://bucket/x")


APPENDER = textwrap.dedent(
    """
    import json, sys, time
    from pathlib import Path
    from pytest_llmbench.nightly.store import open_store, new_id
    url, who, n, start, tmp = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), Path(sys.argv[5])
    store = open_store(url, clone=Path(sys.argv[6]) if len(sys.argv) > 6 else None)  # a runner's own clone
    while time.time() < start:
        time.sleep(0.001)
    for i in range(n):
        src = tmp / f"{who}-{i}"
        src.mkdir(parents=True)
        (src / "results.jsonl").write_text(json.dumps({"who": who, "i": i}) + "\\n")
        store.add_night(src, {"id": new_id(f"{who}-{i}"), "night": f"{who}-{i}", "time": f"{time.time():.6f}"})
    """
)


@pytest.mark.parametrize("backend", ["folder", "git", "fsspec-file"])
def test_two_jobs_appending_at_once_lose_nothing(tmp_path, backend):
    url = {
        "folder": str(tmp_path / "store"),
        "git": _bare_repo(tmp_path),
        "fsspec-file": f"file://{tmp_path / 'store'}",
    }[backend]
    n, start = 6, time.time() + 2.0  # both start at the same moment, after their imports
    procs = []
    for who in ("a", "b"):
        extra = [str(tmp_path / f"clone-{who}")] if backend == "git" else []
        cmd = [sys.executable, "-c", APPENDER, url, who, str(n), str(start), str(tmp_path / f"src-{who}"), *extra]
        procs.append(subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    store = open_store(url, clone=tmp_path / "clone-reader")
    nights = store.nights()
    assert sorted(x.meta["night"] for x in nights) == sorted(f"{w}-{i}" for w in "ab" for i in range(n))
    for x in store.fetch_nights(tmp_path / "fetched"):
        rec = json.loads((x / "results.jsonl").read_text())
        assert f"{rec['who']}-{rec['i']}" in x.name  # each folder whole, holding its own night
    if isinstance(store, GitStore):  # each night one commit on the branch: the later pushes rebased, none lost
        log = subprocess.run(["git", "-C", str(store.clone), "log", "--oneline"], capture_output=True, text=True)
        assert len(log.stdout.splitlines()) == 2 * n
