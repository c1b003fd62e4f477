"""What a server's container is (image, mounts, environment, GPUs, labels) and how a crashed session's
containers are found again; pure apart from the Docker client calls. The launcher is ``docker.py``.

What the container gets, and why:
* exactly the assigned GPUs, as a device request (``--gpus device=…``; CDI ids with
  LLMBENCH_DOCKER_GPU_DRIVER=cdi, as the seeds' rootless Docker + CDI setup needs);
* the host IPC namespace for engines that share tensors between processes (SGLang, vLLM), else a
  large /dev/shm;
* the Hugging Face and llama.cpp caches and every local model folder, at the same paths, so the
  engine's command line is identical inside and out;
* the port published on 127.0.0.1 only, the server listening on 0.0.0.0 inside the container;
* environment from the config, the engine and a short allowlist of host variables (HF_TOKEN …);
  secret values never reach a log, a repr or results — :meth:`ContainerSpec.redacted` is the view
  to print.
Containers carry labels naming this session and its owner process: a session that died without
cleaning up (SIGKILL, power loss) has its containers removed at the next start by
:func:`remove_leftovers`.
"""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TextIO

from pytest_llmbench import redact
from pytest_llmbench.errors import LlmbenchError
from pytest_llmbench.launchers.base import LaunchRequest

LABEL = "pytest-llmbench"
LABEL_SESSION = f"{LABEL}.session"
LABEL_OWNER_PID = f"{LABEL}.owner-pid"
LABEL_OWNER_START = f"{LABEL}.owner-start"
LABEL_HOST = f"{LABEL}.host"
LABEL_CONFIG = f"{LABEL}.config"

#: This process's session id (one per pytest process; xdist workers each have their own).
SESSION_ID = uuid.uuid4().hex[:12]
CONTAINER_HF_HOME = "/root/.cache/huggingface"
CONTAINER_LLAMA_CACHE = "/root/.cache/llama.cpp"
#: Host variables a container inherits when set (model downloads need the token; offline flags).
PASS_THROUGH = (
    "HF_TOKEN",
    "HUGGING_FACE_HUB_TOKEN",
    "HF_HUB_OFFLINE",
    "HF_HUB_ENABLE_HF_TRANSFER",
    "TRANSFORMERS_OFFLINE",
    "HF_ENDPOINT",
)
DEFAULT_SHM = "16g"


class ContainerSpec(dict):
    """Keyword arguments for ``containers.run``; its repr shows the redacted view only."""

    def redacted(self) -> dict[str, Any]:
        out = dict(self)
        out["environment"] = redact.env(self.get("environment", {}))
        if isinstance(self.get("command"), (list, tuple)):
            out["command"] = redact.args(self["command"])
        return out

    def __repr__(self) -> str:
        return f"ContainerSpec({self.redacted()!r})"

    __str__ = __repr__


def _owner_start_time(pid: int) -> str:
    try:
        import psutil

        return f"{psutil.Process(pid).create_time():.2f}"
    except Exception:
        return ""


def _model_mounts(req: LaunchRequest) -> dict[str, dict[str, str]]:
    """Every local model (file → its folder; folder → itself), read-only at the same path."""
    cfg = req.config
    mounts: dict[str, dict[str, str]] = {}
    for ref in [cfg.model, *cfg.models.values()]:
        path = getattr(ref, "path", None)
        if ref.kind == "hub" or path is None:
            continue
        folder = Path(path) if Path(path).is_dir() else Path(path).parent
        mounts[str(folder)] = {"bind": str(folder), "mode": "ro"}
    return mounts


def container_spec(
    req: LaunchRequest,
    *,
    command: list[str],
    session_id: str = SESSION_ID,
    owner_pid: int | None = None,
    environ: Mapping[str, str] | None = None,
    home: Path | None = None,
    gpu_driver: str | None = None,
    shm_size: str = DEFAULT_SHM,
) -> ContainerSpec:
    """Everything ``docker run`` needs for ``req``; pure (no Docker, no filesystem writes).

    ``command`` is the engine's command line built for host 0.0.0.0 (the server must accept the
    published port's traffic inside the container); its first word becomes the entrypoint, so an
    image whose entrypoint is already the server (llama.cpp's) runs exactly this command.
    """
    cfg = req.config
    environ = os.environ if environ is None else environ
    home = Path(home) if home is not None else Path.home()
    owner_pid = os.getpid() if owner_pid is None else owner_pid
    gpu_driver = gpu_driver if gpu_driver is not None else environ.get("LLMBENCH_DOCKER_GPU_DRIVER", "")
    image = req.image or cfg.image
    if not image:
        raise ValueError(
            f"config {cfg.name} ({cfg.source}): the docker launcher needs an image (key 'image' or --llmbench-image)"
        )
    if cfg.gpus and len(req.gpu_ids) < cfg.gpus:
        raise ValueError(f"config {cfg.name} needs {cfg.gpus} GPU(s) but was assigned {list(req.gpu_ids)}")

    hf_home = Path(environ.get("HF_HOME") or home / ".cache" / "huggingface")
    llama_cache = Path(environ.get("LLAMA_CACHE") or home / ".cache" / "llama.cpp")
    volumes = {
        str(hf_home): {"bind": CONTAINER_HF_HOME, "mode": "rw"},
        str(llama_cache): {"bind": CONTAINER_LLAMA_CACHE, "mode": "rw"},
    }
    volumes.update(_model_mounts(req))

    env = {k: environ[k] for k in PASS_THROUGH if environ.get(k)}
    env.update({"HF_HOME": CONTAINER_HF_HOME, "LLAMA_CACHE": CONTAINER_LLAMA_CACHE})
    env.update(req.engine.child_env(cfg))
    env.update(cfg.env)
    env.update(req.env)

    device_requests: list[dict[str, Any]] = []
    if req.gpu_ids:
        if gpu_driver == "cdi":
            device_requests.append({"driver": "cdi", "device_ids": [f"nvidia.com/gpu={g}" for g in req.gpu_ids]})
        else:
            device_requests.append({"device_ids": list(req.gpu_ids), "capabilities": [["gpu"]]})

    spec = ContainerSpec(
        image=image,
        entrypoint=command[:1],
        command=command[1:],
        name=f"llmbench-{cfg.name}-{session_id}-{req.port}"[:128],  # two arms of one config run at once
        detach=True,
        environment=env,
        ports={f"{req.port}/tcp": ("127.0.0.1", req.port)},
        volumes=volumes,
        labels={
            LABEL_SESSION: session_id,
            LABEL_OWNER_PID: str(owner_pid),
            LABEL_OWNER_START: _owner_start_time(owner_pid),
            LABEL_HOST: socket.gethostname(),
            LABEL_CONFIG: cfg.name,
        },
        device_requests=device_requests,
    )
    if req.engine.docker_host_ipc:
        spec["ipc_mode"] = "host"  # /dev/shm is the host's; a shm_size would conflict with it
    else:
        spec["shm_size"] = shm_size
    return spec


# ---- Docker engine access -------------------------------------------------------------------
DEFAULT_SOCKET = "unix:///var/run/docker.sock"


class DockerUnavailable(LlmbenchError, RuntimeError):
    """No Docker engine answers; one line naming the address tried (DOCKER_HOST or the default socket)."""


def engine_address(environ: Mapping[str, str] | None = None) -> str:
    """Where the SDK looks for the engine, as a user would set it: ``DOCKER_HOST=…`` or the default socket."""
    environ = os.environ if environ is None else environ
    host = environ.get("DOCKER_HOST")
    return f"DOCKER_HOST={host}" if host else f"the socket {DEFAULT_SOCKET[len('unix://') :]}"


def docker_client(config_name: str = "", source: Any = "", *, timeout: float = 60.0) -> Any:
    """A connected client, or :class:`DockerUnavailable` in one line naming the config that needs Docker
    and the address tried. Called before any server starts (the preflight) and again at each start."""
    who = f"config {config_name} ({source}) uses launcher: docker" if config_name else "the docker launcher"
    try:
        import docker
    except ImportError:
        raise DockerUnavailable(
            f"{who}, but the docker SDK is not installed: pip install 'pytest-llmbench[gpu]'"
        ) from None
    try:
        client = docker.from_env(timeout=int(timeout))
        client.ping()
    except Exception as e:
        reason = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise DockerUnavailable(
            f"{who}, but no Docker engine answers at {engine_address()} ({type(e).__name__}: {reason[:160]}); "
            "start dockerd or set DOCKER_HOST"
        ) from None
    return client


def _owner_alive(labels: Mapping[str, str]) -> bool:
    try:
        import psutil
    except ImportError:  # pragma: no cover - psutil is a dependency of the GPU extra
        return True
    try:
        pid = int(labels.get(LABEL_OWNER_PID, ""))
    except ValueError:
        return False
    if not psutil.pid_exists(pid):
        return False
    started = labels.get(LABEL_OWNER_START)
    return not started or _owner_start_time(pid) == started  # a reused pid is not the owner


def remove_leftovers(client: Any, *, log: TextIO | None = None) -> list[str]:
    """Remove this host's llmbench containers whose owning pytest process is gone."""
    removed = []
    for c in client.containers.list(all=True, filters={"label": LABEL_SESSION}):
        labels = c.labels or {}
        if labels.get(LABEL_SESSION) == SESSION_ID or labels.get(LABEL_HOST) != socket.gethostname():
            continue
        if _owner_alive(labels):
            continue
        try:
            c.remove(force=True)
            removed.append(c.name)
        except Exception as e:
            if log is not None:
                log.write(
                    f"[llmbench] could not remove leftover container {c.name} ({e}); run `docker rm -f {c.name}`\n"
                )
    if removed and log is not None:
        log.write(f"[llmbench] removed leftover containers of dead sessions: {', '.join(removed)}\n")
    return removed
