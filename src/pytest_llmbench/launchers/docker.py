"""Run the server inside a container image (SGLang nightlies, llama.cpp CUDA images, as the benchmark
posts did): pull it if missing, start it with the spec ``containers.py`` builds, follow its log into
server.log, and stop *and remove* it, saying so loudly when a container outlives its stop.

Options (``--llmbench-candidate-image``, alias ``--llmbench-image``; ``--no-pull``) are declared here and handed to the launcher when the
``pytest_llmbench_launchers`` hook builds it; nothing is read from the environment.
"""

from __future__ import annotations

import signal
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from pytest_llmbench.errors import LlmbenchError
from pytest_llmbench.launchers.base import Handle, LaunchRequest, track, untrack
from pytest_llmbench.launchers.containers import (  # noqa: F401  (the names tests and users reach through here)
    CONTAINER_HF_HOME,
    DEFAULT_SHM,
    LABEL_CONFIG,
    LABEL_HOST,
    LABEL_OWNER_PID,
    LABEL_OWNER_START,
    LABEL_SESSION,
    SESSION_ID,
    ContainerSpec,
    DockerUnavailable,
    container_spec,
    docker_client,
    remove_leftovers,
)
from pytest_llmbench.tell import tell

if TYPE_CHECKING:
    import pytest

    from pytest_llmbench.config import ServerConfig


def add_options(parser: pytest.Parser) -> None:
    """The docker launcher's command-line options (the launchers' ``pytest_addoption``)."""
    group = parser.getgroup("llmbench")
    group.addoption(
        "--llmbench-candidate-image",
        "--llmbench-image",
        dest="llmbench_image",
        default=None,
        metavar="IMAGE",
        help="container image for every docker-launched config (overrides the configs' 'image'); in a "
        "comparison the candidate arm, beside --llmbench-reference-image (--llmbench-image: the same option)",
    )
    group.addoption(
        "--no-pull",
        dest="llmbench_no_pull",
        action="store_true",
        default=False,
        help="never pull a missing container image; fail with the docker pull command instead",
    )


def _split_image(image: str) -> tuple[str, str | None]:
    if "@" in image:
        return image, None
    repo, _, tag = image.rpartition(":")
    if not repo or "/" in tag:
        return image, "latest"
    return repo, tag


def ensure_image(
    client: Any, image: str, *, no_pull: bool, log: TextIO | None, config_name: str, config: Any = None
) -> None:
    """Pull ``image`` if missing, its layer progress on the terminal past pytest's capture (a CI log shows a
    30 GB pull as it goes) and in the server log."""
    import docker

    try:
        client.images.get(image)
        return
    except docker.errors.ImageNotFound:
        pass
    if no_pull:
        raise ImageMissing(
            f"config {config_name}: image {image} is not present and --no-pull is set; run `docker pull {image}` first"
        )
    repo, tag = _split_image(image)

    def say(line: str) -> None:
        tell(config, line)
        if log is not None:
            log.write(line + "\n")
            log.flush()

    say(f"[llmbench] pulling {image} for config {config_name}")
    last_status: dict[str, str] = {}
    last_print = 0.0
    try:
        for ev in client.api.pull(repo, tag=tag, stream=True, decode=True):
            if "error" in ev:
                raise RuntimeError(f"config {config_name}: pulling {image} failed: {ev['error']}")
            layer, status = ev.get("id", ""), ev.get("status", "")
            now = time.monotonic()
            # One line per layer state change, plus download progress at most every 2 s.
            if last_status.get(layer) != status or (ev.get("progress") and now - last_print > 2.0):
                last_status[layer] = status
                last_print = now
                say(f"[llmbench] pull {layer} {status} {ev.get('progress', '')}".rstrip())
    except docker.errors.APIError as e:
        raise RuntimeError(f"config {config_name}: pulling {image} failed: {e}") from None
    say(f"[llmbench] pulled {image}")


class ImageMissing(LlmbenchError, RuntimeError):
    """An image is not present and may not be pulled; the message says the ``docker pull`` to run."""


class DockerHandle:
    """A running container; ``stop`` stops and removes it, and its log thread ends with it."""

    def __init__(self, container: Any, description: str, log_thread: threading.Thread | None = None):
        self.container = container
        self.description = description
        self.log_thread = log_thread
        self._removed = False
        self.identity: dict[str, str] = {}  # the image and its digest (image_identity)

    def _state(self) -> dict[str, Any]:
        if self._removed:
            return {}
        try:
            self.container.reload()
        except Exception:
            return {}
        return self.container.attrs.get("State", {})

    def alive(self) -> bool:
        return self._state().get("Status") in ("created", "running", "restarting")

    def exit_code(self) -> int | None:
        """As a subprocess's: ``-N`` for a death by signal N. Docker reports it as 128 + N (``docker kill``,
        the OOM killer: 137), which read as "code 137" named no signal."""
        state = self._state()
        code = None if not state or state.get("Running") else state.get("ExitCode")
        return 128 - code if isinstance(code, int) and 128 < code < 128 + signal.NSIG else code

    def pids(self) -> list[int]:
        """Host pids of the container's processes (``docker top``); empty when unavailable."""
        try:
            top = self.container.top()
            col = top["Titles"].index("PID")
            return [int(p[col]) for p in top["Processes"]]
        except Exception:
            return []

    def memory_bytes(self) -> int | None:
        """The container's memory usage from ``docker stats`` (host RAM of the server)."""
        try:
            return int(self.container.stats(stream=False)["memory_stats"]["usage"])
        except Exception:
            return None

    def stop(self, grace: float = 15.0) -> None:
        """Stop (SIGTERM, SIGKILL after ``grace``) and remove the container. A container that is still
        there afterwards is an error naming it: it may hold a GPU, and ``alive()`` must keep saying so."""
        try:
            if not self._removed:
                failures = []
                try:
                    self.container.stop(timeout=int(max(1, grace)))
                except Exception as e:
                    failures.append(f"stop: {e}")
                try:
                    self.container.remove(force=True)
                except Exception as e:
                    failures.append(f"remove: {e}")
                self._removed = self._gone()
                if not self._removed:
                    raise ContainerCleanupError(
                        f"container {self.container.name} could not be removed ({'; '.join(failures)}); it may still "
                        f"hold its GPUs: run `docker rm -f {self.container.name}`"
                    )
            if self.log_thread is not None:
                self.log_thread.join(timeout=5)
        finally:
            if self._removed:
                untrack(self)

    def _gone(self) -> bool:
        import docker

        try:
            self.container.reload()
        except docker.errors.NotFound:
            return True
        except Exception:
            return False  # cannot tell: assume it is still there
        return False


class ContainerCleanupError(LlmbenchError, RuntimeError):
    """A container outlived its stop: the message names it and the command that removes it."""


def _follow_logs(container: Any, log_path: Path) -> threading.Thread:
    def run() -> None:
        try:
            with open(log_path, "ab") as f:
                for chunk in container.logs(stream=True, follow=True):
                    f.write(chunk)
                    f.flush()
        except Exception as e:  # the container went away (the stream ends) or the daemon failed
            import docker

            if not isinstance(e, docker.errors.NotFound):
                with open(log_path, "a") as f:
                    f.write(f"[llmbench] stopped following the container's log: {type(e).__name__}: {e}\n")

    t = threading.Thread(target=run, name=f"llmbench-logs-{container.name}", daemon=True)
    t.start()
    return t


def image_identity(client: Any, image: str) -> dict[str, str]:
    """What names the image a container runs: ``image`` (its tag, also when it was run by id or digest),
    ``build`` (the repo digest it was pulled by, else its local id, short: two pulls of one nightly tag
    read as two builds), and the full ``digest`` / ``id``. A locally made image has no repo digest."""
    out = {"image": image}
    try:
        attrs = client.images.get(image).attrs
    except Exception:  # identity is informative; the container runs either way
        return out
    by_ref = image.startswith("sha256:") or "@" in image
    tags = [str(t) for t in attrs.get("RepoTags") or [] if not str(t).endswith("<none>")]
    if by_ref and tags:
        out["image"] = tags[0]
    digests = [str(d) for d in attrs.get("RepoDigests") or []]
    repo = _split_image(out["image"])[0].split("@", 1)[0]
    mine = [d for d in digests if d.split("@", 1)[0] == repo] or digests
    image_id = str(attrs.get("Id") or "")
    if mine and "@" in mine[0]:
        out["digest"] = mine[0].split("@", 1)[1]
        out["build"] = short_ref(out["digest"])
    elif image_id:
        out["build"] = f"id {short_ref(image_id)}"
    if image_id:
        out["id"] = image_id
    return out


def short_ref(ref: str, chars: int = 12) -> str:
    """``sha256:0123456789ab``: a digest or id as ``docker images`` shows it."""
    algo, _, hexdigest = ref.rpartition(":")
    return f"{algo or 'sha256'}:{hexdigest[:chars]}"


def _run(client: Any, run_kwargs: dict[str, Any], port: int) -> Any:
    """``containers.run``; a container created but not started (its port taken, a bad entrypoint) is removed
    before the error goes on, so a failed start leaves nothing behind."""
    import docker

    try:
        return client.containers.run(**run_kwargs)
    except docker.errors.APIError as e:
        try:
            client.containers.get(run_kwargs["name"]).remove(force=True)
        except Exception:
            pass  # never created, or already gone
        text = str(e.explanation or e)
        if "address already in use" in text or "port is already allocated" in text:
            raise RuntimeError(f"port {port} on 127.0.0.1 is already in use: address already in use ({text})") from None
        raise


class DockerLauncher:
    name = "docker"
    runs_images = True
    _cleaned = False

    def __init__(
        self, *, client: Any = None, no_pull: bool = False, image: str | None = None, config: Any = None
    ) -> None:
        self._client = client
        self.no_pull = no_pull  # --no-pull
        self.image = image  # --llmbench-candidate-image: replaces the config's image where no start names another
        self.config = config  # the session's pytest config: pull progress and clean-up reach its terminal

    @classmethod
    def from_options(cls, config: pytest.Config | None) -> DockerLauncher:
        if config is None:
            return cls()
        return cls(
            no_pull=bool(config.getoption("llmbench_no_pull", False)),
            image=config.getoption("llmbench_image", None),
            config=config,
        )

    def clean_up(self, client: Any, log: TextIO | None = None) -> list[str]:
        """Once per process: remove the containers of sessions that died without stopping them (SIGKILL,
        power loss), said on the terminal as well as in the log: they may have held GPUs until now."""
        DockerLauncher._cleaned = True
        removed = remove_leftovers(client, log=log)
        if removed:
            tell(
                self.config,
                f"[llmbench] removed {len(removed)} container(s) left by dead sessions: {', '.join(removed)}",
            )
        return removed

    def preflight(self, configs: list[ServerConfig]) -> None:
        """Before any server starts: the engine answers (else one line naming the address tried), and the
        leftovers of dead sessions are gone."""
        if not configs:
            return
        client = self._client or docker_client(configs[0].name, configs[0].source)
        if not DockerLauncher._cleaned:
            self.clean_up(client)

    def validate(self, cfg: ServerConfig) -> tuple[str, str] | None:
        if not cfg.image:
            return "image", "the docker launcher needs an image"
        return None

    def start(self, req: LaunchRequest) -> Handle:
        if self.image and not req.image:  # a comparison's reference arm names its own image: that one runs
            req = replace(req, image=self.image)
        cfg = req.config
        client = self._client or docker_client(cfg.name, cfg.source)
        command = req.engine.command(cfg, "0.0.0.0", req.port)
        spec = container_spec(req, command=command)
        with open(req.log_path, "a") as log:
            if not DockerLauncher._cleaned:
                self.clean_up(client, log)
            ensure_image(client, spec["image"], no_pull=self.no_pull, log=log, config_name=cfg.name, config=self.config)
            for host_dir, m in spec["volumes"].items():
                if m["mode"] == "rw":
                    Path(host_dir).mkdir(parents=True, exist_ok=True)  # else Docker creates it root-owned
            log.write(f"[llmbench] docker run {spec.redacted()}\n")
        run_kwargs = dict(spec)
        if run_kwargs.get("device_requests"):
            import docker

            run_kwargs["device_requests"] = [docker.types.DeviceRequest(**d) for d in run_kwargs["device_requests"]]
        container = _run(client, run_kwargs, req.port)
        handle = DockerHandle(
            container,
            f"container {container.name} ({spec['image']}): {' '.join(command)}",
            _follow_logs(container, req.log_path),
        )
        track(handle)
        handle.identity = image_identity(client, spec["image"])
        return handle
