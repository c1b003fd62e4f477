"""Candidate lists: from a file, from the local engine's image tags by pattern (real Docker), from the hook;
each candidate pinned to its image ID or binary hash when the store first sees it."""

from __future__ import annotations

import io
import tarfile
import textwrap

import pytest

from pytest_llmbench.cli.nightly import _hook_candidates
from pytest_llmbench.nightly.candidates import (
    Candidate,
    CandidateError,
    between,
    from_docker,
    list_candidates,
    parse_spec,
    resolve_pin,
)
from pytest_llmbench.nightly.store import open_store


def test_a_file_lists_builds_in_order_with_comments(tmp_path):
    f = tmp_path / "builds.txt"
    f.write_text("# tonight's list\nrepo/x:nightly-01\n\nrepo/x:nightly-02  # the one after\nbin:/opt/b3\n")
    assert list_candidates(f"file:{f}") == ["repo/x:nightly-01", "repo/x:nightly-02", "bin:/opt/b3"]
    with pytest.raises(CandidateError, match=r"nope\.txt"):
        list_candidates(f"file:{tmp_path / 'nope.txt'}")
    with pytest.raises(CandidateError, match="file:PATH, docker:PATTERN, hook"):
        list_candidates("registry:x")


def test_between_and_specs(tmp_path):
    specs = ["a:1", "a:2", "a:3", "a:4"]
    assert between(specs, "a:1", "a:4") == ["a:2", "a:3"]
    assert between(specs, "a:3", "a:4") == [] and between(specs, "a:0", "a:4") == []
    assert parse_spec("image:repo/x:1") == Candidate("repo/x:1", "image")
    assert parse_spec(f"bin:{tmp_path}").kind == "bin" and parse_spec(str(tmp_path)).kind == "bin"
    assert Candidate("llmbench-nightly/llama-server:nightly-08", "image").label == "nightly-08"


def test_a_binary_folder_is_pinned_to_its_program_hash(tmp_path):
    (tmp_path / "llama-server").write_text("#!/bin/sh\nexit 0\n")
    pin = resolve_pin(parse_spec(f"bin:{tmp_path}"))
    assert pin.startswith("sha256:") and len(pin) == 7 + 16
    (tmp_path / "llama-server").write_text("#!/bin/sh\nexit 1\n")
    assert resolve_pin(parse_spec(f"bin:{tmp_path}")) != pin
    with pytest.raises(CandidateError, match="no llama-server"):
        resolve_pin(parse_spec(f"bin:{tmp_path / 'empty'}"))


def test_the_hook_lists_the_builds(pytester):
    pytester.makeconftest(
        textwrap.dedent(
            """
            def pytest_llmbench_nightly_candidates(config, reference, candidate):
                return [reference, "registry/x:nightly-02", candidate]
            """
        )
    )
    pytester.chdir()  # the job's own process, in the bench folder: its conftest answers
    found = _hook_candidates([str(pytester.path)], "registry/x:nightly-01", "registry/x:nightly-03")
    assert found == ["registry/x:nightly-01", "registry/x:nightly-02", "registry/x:nightly-03"]
    assert list_candidates("hook", lambda: found) == found
    with pytest.raises(CandidateError, match="no pytest_llmbench_nightly_candidates"):
        list_candidates("hook", lambda: None)


# --- the real Docker engine -----------------------------------------------------------------------
REPO = "llmbench-test-nightly/candidates"


def _engine():
    try:
        import docker

        client = docker.from_env(timeout=10)
        client.ping()
    except Exception as e:  # no engine on this machine: said once, in the skip reason
        pytest.skip(f"no Docker engine answers ({type(e).__name__}); the docker candidate tests need one")
    return client


def _image(client, tag: str, content: str) -> str:
    """A one-file image made with `docker import` (no registry, no base image), returned by its ID."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        data = content.encode()
        info = tarfile.TarInfo("night.txt")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    repo, _, name = tag.rpartition(":")
    client.api.import_image_from_data(buf.getvalue(), repository=repo, tag=name)
    return str(client.images.get(tag).id)


@pytest.fixture
def engine():
    client = _engine()
    yield client
    for img in client.images.list(name=REPO):
        for t in img.tags:
            client.images.remove(t, force=True)


def test_local_images_by_pattern_in_natural_order_pinned_to_their_id(engine, tmp_path):
    ids = {n: _image(engine, f"{REPO}:nightly-{n}", f"night {n}") for n in (2, 9, 10)}
    _image(engine, f"{REPO}:release", "release")
    tags = from_docker(f"{REPO}:nightly-*", engine)
    assert tags == [f"{REPO}:nightly-2", f"{REPO}:nightly-9", f"{REPO}:nightly-10"]  # 9 before 10
    assert list_candidates(f"docker:{REPO}:nightly-*", client=engine) == tags
    with pytest.raises(CandidateError, match="no local image tag matches"):
        from_docker(f"{REPO}:weekly-*", engine)
    c = parse_spec(f"{REPO}:nightly-9")
    assert resolve_pin(c, engine) == ids[9]  # a local image has no RepoDigests: its ID
    store = open_store(tmp_path / "store")
    first = store.pin(c.tag, resolve_pin(c, engine), c.kind)
    moved = _image(engine, f"{REPO}:nightly-9", "night 9, rebuilt")  # the tag moves to new content
    assert moved != ids[9] and resolve_pin(c, engine) == moved
    assert store.pin(c.tag, resolve_pin(c, engine), c.kind)["pinned"] == first["pinned"] == ids[9]
    assert Candidate(c.tag, "image", ids[9]).build().image == ids[9]  # a bisect runs the pin, not the tag
