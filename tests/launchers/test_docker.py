"""The docker launcher: the container spec it builds (pure), its start/stop/cleanup flow against an
in-memory stand-in for the Docker SDK client, and — when a Docker engine is reachable — a real run."""

from __future__ import annotations

import io
import os
import sys
import time
from pathlib import Path

import docker
import httpx
import pytest

from pytest_llmbench.config import ServerConfig
from pytest_llmbench.engines.base import Engine
from pytest_llmbench.engines.llamacpp import LlamaCppEngine
from pytest_llmbench.engines.sglang import SGLangEngine
from pytest_llmbench.launchers import base
from pytest_llmbench.launchers import docker as dl
from pytest_llmbench.launchers.base import LaunchRequest
from pytest_llmbench.models import ModelRef
from pytest_llmbench.registry import Registry


def make_req(
    tmp_path: Path, *, engine=None, gpu_ids=("2", "3"), gpus=2, image="lmsysorg/sglang:nightly", env=None
) -> LaunchRequest:
    model_dir = tmp_path / "models" / "qwen"
    model_dir.mkdir(parents=True, exist_ok=True)
    gguf = tmp_path / "ggufs" / "draft.gguf"
    gguf.parent.mkdir(exist_ok=True)
    gguf.write_bytes(b"")
    cfg = ServerConfig(
        name="nvfp4-dflash8",
        engine="sglang",
        model=ModelRef("path", str(model_dir), path=model_dir),
        models={"draft": ModelRef("path", str(gguf), path=gguf), "hub": ModelRef("hub", "z-lab/D")},
        source=Path("gpu.yaml"),
        launcher="docker",
        gpus=gpus,
        image="cfg/image:1",
        env=env if env is not None else {"SGLANG_X": "1", "MY_API_KEY": "from-config"},
    )
    return LaunchRequest(
        config=cfg,
        engine=engine or SGLangEngine(),
        host="127.0.0.1",
        port=31234,
        log_path=tmp_path / "server.log",
        gpu_ids=gpu_ids,
        image=image,
    )


HOST_ENV = {"HF_TOKEN": "hf_supersecret", "PATH": "/usr/bin", "AWS_SECRET_ACCESS_KEY": "nope", "HF_HUB_OFFLINE": "1"}


def spec_for(tmp_path, **kw):
    req = make_req(tmp_path, **kw)
    cmd = req.engine.command(req.config, "0.0.0.0", req.port)
    return req, dl.container_spec(
        req, command=cmd, session_id="sess1", owner_pid=4242, environ=HOST_ENV, home=tmp_path / "home"
    )


def test_gpus_are_exactly_the_assigned_devices(tmp_path):
    _, spec = spec_for(tmp_path)
    assert spec["device_requests"] == [{"device_ids": ["2", "3"], "capabilities": [["gpu"]]}]
    req = make_req(tmp_path)
    cdi = dl.container_spec(req, command=["x"], environ={}, home=tmp_path, gpu_driver="cdi")
    assert cdi["device_requests"] == [{"driver": "cdi", "device_ids": ["nvidia.com/gpu=2", "nvidia.com/gpu=3"]}]
    _, none = spec_for(tmp_path, gpu_ids=(), gpus=0)
    assert none["device_requests"] == []
    with pytest.raises(ValueError, match="needs 2 GPU"):
        spec_for(tmp_path, gpu_ids=("0",), gpus=2)


def test_port_published_on_loopback_only_and_server_listens_inside(tmp_path):
    _, spec = spec_for(tmp_path)
    assert spec["ports"] == {"31234/tcp": ("127.0.0.1", 31234)}
    assert spec["entrypoint"] == ["python3"]
    assert spec["command"][:3] == ["-m", "sglang.launch_server", "--model-path"]
    assert spec["command"][spec["command"].index("--host") + 1] == "0.0.0.0"


def test_image_override_and_missing_image(tmp_path):
    _, spec = spec_for(tmp_path, image="override:2")
    assert spec["image"] == "override:2"
    _, spec = spec_for(tmp_path, image=None)
    assert spec["image"] == "cfg/image:1"
    req = make_req(tmp_path, image=None)
    req.config = ServerConfig(**{**req.config.__dict__, "image": None})
    with pytest.raises(ValueError, match="needs an image"):
        dl.container_spec(req, command=["x"], environ={}, home=tmp_path)


def test_mounts_caches_and_model_folders(tmp_path):
    req, spec = spec_for(tmp_path)
    vols = spec["volumes"]
    assert vols[str(tmp_path / "home" / ".cache" / "huggingface")] == {"bind": dl.CONTAINER_HF_HOME, "mode": "rw"}
    model_dir = str(req.config.model.path)
    assert vols[model_dir] == {"bind": model_dir, "mode": "ro"}, "a model folder mounts at its own path"
    gguf_dir = str(tmp_path / "ggufs")
    assert vols[gguf_dir] == {"bind": gguf_dir, "mode": "ro"}, "a model file mounts its folder"
    assert spec["environment"]["HF_HOME"] == dl.CONTAINER_HF_HOME
    env_home = dl.container_spec(req, command=["x"], environ={"HF_HOME": "/data/hf"}, home=tmp_path)
    assert "/data/hf" in env_home["volumes"]


def test_env_passes_allowlist_and_config_but_never_shows_secrets(tmp_path):
    _, spec = spec_for(tmp_path)
    env = spec["environment"]
    assert env["HF_TOKEN"] == "hf_supersecret" and env["HF_HUB_OFFLINE"] == "1"
    assert env["SGLANG_X"] == "1" and env["MY_API_KEY"] == "from-config"
    assert "PATH" not in env and "AWS_SECRET_ACCESS_KEY" not in env, "only allowlisted host variables"
    shown = spec.redacted()["environment"]
    assert shown["HF_TOKEN"] == "***" and shown["MY_API_KEY"] == "***" and shown["SGLANG_X"] == "1"
    for text in (repr(spec), str(spec), f"{spec}"):
        assert "hf_supersecret" not in text and "from-config" not in text
    assert spec["environment"]["HF_TOKEN"] == "hf_supersecret", "redacted() does not change the spec"


def test_labels_and_name(tmp_path):
    _, spec = spec_for(tmp_path)
    assert spec["labels"][dl.LABEL_SESSION] == "sess1"
    assert spec["labels"][dl.LABEL_OWNER_PID] == "4242"
    assert spec["labels"][dl.LABEL_CONFIG] == "nvfp4-dflash8"
    assert spec["name"] == "llmbench-nvfp4-dflash8-sess1-31234"


def test_ipc_host_for_sglang_shm_for_llamacpp(tmp_path):
    _, spec = spec_for(tmp_path)
    assert spec["ipc_mode"] == "host" and "shm_size" not in spec
    req = make_req(tmp_path, engine=LlamaCppEngine())
    spec = dl.container_spec(req, command=["/app/llama-server", "--port", "1"], environ={}, home=tmp_path)
    assert spec.get("ipc_mode") is None and spec["shm_size"] == dl.DEFAULT_SHM
    assert spec["entrypoint"] == ["/app/llama-server"], "the image's own entrypoint is replaced by the command"


# ---- the start/stop flow against an in-memory Docker client ------------------------------------------
class FakeContainer:
    def __init__(self, name, labels=None, logs=(b"line 1\n", b"line 2\n")):
        self.name, self.labels, self._logs = name, labels or {}, logs
        self.status = "running"
        self.removed = self.stopped = False
        self.attrs = {"State": {"Status": "running", "Running": True, "ExitCode": 0}}

    def reload(self):
        if self.removed:
            raise docker.errors.NotFound("gone")

    def logs(self, stream, follow):
        yield from self._logs

    def stop(self, timeout):
        self.stopped = True
        self.attrs["State"] = {"Status": "exited", "Running": False, "ExitCode": 143}

    def remove(self, force):
        self.removed = True

    def top(self):
        return {"Titles": ["UID", "PID", "CMD"], "Processes": [["root", "111", "python3"], ["root", "112", "x"]]}


class FakeClient:
    def __init__(self, have_image=True, leftovers=()):
        self.have_image, self.run_kwargs, self.pulled = have_image, None, []
        self._leftovers = list(leftovers)
        outer = self

        class Images:
            def get(self, image):
                if not outer.have_image:
                    raise docker.errors.ImageNotFound("no")

        class Containers:
            def list(self, all, filters):
                return outer._leftovers

            def run(self, **kw):
                outer.run_kwargs = kw
                outer.container = FakeContainer(kw["name"])
                return outer.container

        class Api:
            def pull(self, repo, tag, stream, decode):
                outer.pulled.append((repo, tag))
                yield {"status": "Pulling fs layer", "id": "abc"}
                yield {"status": "Downloading", "id": "abc", "progress": "[==>  ] 1MB/2MB"}
                yield {"status": "Pull complete", "id": "abc"}

        self.images, self.containers, self.api = Images(), Containers(), Api()


@pytest.fixture(autouse=True)
def _fresh_cleanup_flag(monkeypatch):
    monkeypatch.setattr(dl.DockerLauncher, "_cleaned", False)


def test_start_runs_container_streams_logs_and_stop_removes(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    client = FakeClient()
    req = make_req(tmp_path)
    handle = dl.DockerLauncher(client=client).start(req)
    try:
        kw = client.run_kwargs
        assert isinstance(kw["device_requests"][0], docker.types.DeviceRequest)
        assert kw["device_requests"][0]["DeviceIDs"] == ["2", "3"]
        assert handle in base.live_handles(), "tracked, so Ctrl-C cleanup stops it"
        assert handle.alive() and handle.pids() == [111, 112]
        handle.log_thread.join(5)
        log = req.log_path.read_text()
        assert "line 1\nline 2\n" in log and "docker run" in log
    finally:
        handle.stop(grace=1)
    assert client.container.stopped and client.container.removed
    assert not handle.alive() and handle not in base.live_handles()


class StuckContainer(FakeContainer):
    """The daemon refuses to stop or remove it (a hung driver, a busy device): it stays."""

    def stop(self, timeout):
        raise docker.errors.APIError("driver busy")

    def remove(self, force):
        raise docker.errors.APIError("removal of container stuck is already in progress")


def test_a_container_that_survives_stop_is_an_error_and_still_alive(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    client = FakeClient()
    handle = dl.DockerLauncher(client=client).start(make_req(tmp_path))
    handle.container = stuck = StuckContainer(client.container.name)
    try:
        with pytest.raises(
            dl.ContainerCleanupError,
            match=rf"container {stuck.name} could not be removed "
            r"\(stop: driver busy; remove: .*\).*docker rm -f",
        ):
            handle.stop(grace=1)
        assert handle.alive(), "a container that is still there is not reported dead"
        assert handle in base.live_handles(), "still tracked, so session cleanup tries again"
    finally:
        base.untrack(handle)


def test_leftover_that_cannot_be_removed_is_named_in_the_log():
    import socket

    stuck = StuckContainer(
        "stuck", {dl.LABEL_SESSION: "old", dl.LABEL_OWNER_PID: "999999999", dl.LABEL_HOST: socket.gethostname()}
    )
    log = io.StringIO()
    assert dl.remove_leftovers(FakeClient(leftovers=[stuck]), log=log) == []
    assert "could not remove leftover container stuck" in log.getvalue() and "docker rm -f stuck" in log.getvalue()


def test_missing_image_pulled_with_progress(tmp_path, capsys):
    client = FakeClient(have_image=False)
    log = io.StringIO()
    dl.ensure_image(client, "lmsysorg/sglang:nightly-x", no_pull=False, log=log, config_name="c")
    assert client.pulled == [("lmsysorg/sglang", "nightly-x")]
    err = capsys.readouterr().err
    assert "pulling lmsysorg/sglang:nightly-x for config c" in err and "Pull complete" in err
    assert "1MB/2MB" in log.getvalue()


def test_missing_image_with_no_pull_is_a_clear_error(tmp_path):
    with pytest.raises(RuntimeError, match=r"image img:1 is not present and --no-pull is set; run `docker pull img:1`"):
        dl.ensure_image(FakeClient(have_image=False), "img:1", no_pull=True, log=io.StringIO(), config_name="c")


def test_leftovers_of_dead_sessions_are_removed(tmp_path):
    import socket

    host = socket.gethostname()
    dead = FakeContainer("dead", {dl.LABEL_SESSION: "old", dl.LABEL_OWNER_PID: "999999999", dl.LABEL_HOST: host})
    alive = FakeContainer(
        "alive", {dl.LABEL_SESSION: "other", dl.LABEL_OWNER_PID: str(os.getppid()), dl.LABEL_HOST: host}
    )
    reused = FakeContainer(
        "reused",
        {
            dl.LABEL_SESSION: "x",
            dl.LABEL_OWNER_PID: str(os.getpid()),
            dl.LABEL_OWNER_START: "1.00",
            dl.LABEL_HOST: host,
        },
    )
    mine = FakeContainer(
        "mine", {dl.LABEL_SESSION: dl.SESSION_ID, dl.LABEL_OWNER_PID: "999999999", dl.LABEL_HOST: host}
    )
    foreign = FakeContainer(
        "foreign", {dl.LABEL_SESSION: "y", dl.LABEL_OWNER_PID: "999999999", dl.LABEL_HOST: "elsewhere"}
    )
    log = io.StringIO()
    removed = dl.remove_leftovers(FakeClient(leftovers=[dead, alive, reused, mine, foreign]), log=log)
    assert removed == ["dead", "reused"], "dead owner, or a pid reused by another process"
    assert "dead, reused" in log.getvalue()


def test_no_docker_engine_names_the_config(monkeypatch):
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    with pytest.raises(RuntimeError, match=r"config nvfp4 \(gpu.yaml\) uses launcher: docker, but no Docker engine"):
        dl.docker_client("nvfp4", "gpu.yaml")


# ---- a real container, when a Docker engine is reachable ---------------------------------------------
def _engine_or_skip():
    try:
        return dl.docker_client()
    except RuntimeError as e:
        pytest.skip(f"no Docker engine reachable here ({e})")


class HttpServerEngine(Engine):
    """``python -m http.server`` as a stand-in server: GET / answers 200 once it listens."""

    name = "httpserver"
    health_path = "/"

    def command(self, cfg, host, port):
        return ["python3", "-m", "http.server", str(port), "--bind", host]


@pytest.mark.skipif(sys.platform != "linux", reason="needs a Linux Docker engine")
def test_real_container_lifecycle(tmp_path, monkeypatch):
    client = _engine_or_skip()
    from pytest_llmbench.server import start_server

    registry = Registry.builtin()
    registry.engines[HttpServerEngine.name] = HttpServerEngine
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    image = os.environ.get("LLMBENCH_TEST_IMAGE", "python:3.12-alpine")
    try:
        client.images.get(image)
    except docker.errors.ImageNotFound:  # no registry here: tests/launchers/test_docker_engine.py makes its own
        pytest.skip(f"{image} is not present (no registry reachable to pull it); set LLMBENCH_TEST_IMAGE")
    cfg = ServerConfig(
        name="docker-it",
        engine="httpserver",
        model=ModelRef("hub", "none/none"),
        source=Path("it.yaml"),
        launcher="docker",
        image=image,
        startup_timeout=300,
        env={"HF_TOKEN": "hf_never_logged"},
    )
    server = start_server(cfg, tmp_path / "docker-it", poll_interval=0.2, registry=registry)
    try:
        name = server.handle.container.name
        assert httpx.get(f"{server.base_url}/").status_code == 200
        attrs = client.api.inspect_container(name)
        assert attrs["HostConfig"]["PortBindings"][f"{server.port}/tcp"][0]["HostIp"] == "127.0.0.1"
        assert attrs["Config"]["Labels"][dl.LABEL_SESSION] == dl.SESSION_ID
        time.sleep(0.5)
        assert "hf_never_logged" not in server.log_path.read_text()
    finally:
        server.stop(grace=2)
    with pytest.raises(docker.errors.NotFound):
        client.containers.get(name)


def test_options_reach_the_launcher_through_the_hook_not_the_environment(pytester, monkeypatch):
    """``--no-pull`` and ``--llmbench-image`` are handed to the DockerLauncher the hook builds."""
    monkeypatch.delenv("LLMBENCH_NO_PULL", raising=False)
    pytester.makepyfile(
        test_opts="""
        import os
        from pytest_llmbench.registry import REGISTRY

        def test_docker_options(request):
            docker = request.config.stash[REGISTRY].launcher("docker")
            assert (docker.no_pull, docker.image) == (True, "img:1")
            assert "LLMBENCH_NO_PULL" not in os.environ
    """
    )
    pytester.runpytest("--no-pull", "--llmbench-image", "img:1", "-p", "no:cacheprovider").assert_outcomes(passed=1)


def test_the_image_option_replaces_the_configs_image(tmp_path):
    client = FakeClient(have_image=False)
    with pytest.raises(RuntimeError, match="image other:2 is not present and --no-pull is set"):
        dl.DockerLauncher(client=client, no_pull=True, image="other:2").start(make_req(tmp_path, image=None))


def test_an_image_named_by_the_start_wins_over_the_image_option(tmp_path):
    """A comparison's reference arm (``--llmbench-reference-image``) runs its own image, not the candidate's
    ``--llmbench-image``: otherwise every image comparison would be the candidate against itself."""
    client = FakeClient(have_image=False)
    with pytest.raises(RuntimeError, match=r"image lmsysorg/sglang:v0\.5\.9 is not present"):
        dl.DockerLauncher(client=client, no_pull=True, image="nightly:2").start(
            make_req(tmp_path, image="lmsysorg/sglang:v0.5.9")
        )
