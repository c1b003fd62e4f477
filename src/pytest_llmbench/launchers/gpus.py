"""Which GPUs a server gets: the machine's visible GPUs, split into disjoint slices per xdist worker.

Visible GPUs, first match wins: ``--llmbench-gpus 0,1``; $LLMBENCH_GPUS; $CUDA_VISIBLE_DEVICES (its
entries are physical ids or UUIDs, so a child given a subset still names the right devices); the
NVML device count; ``nvidia-smi -L``; else none. Under ``pytest -n N`` worker gwK takes the K-th of
N equal slices, so two workers never share a GPU; a config takes the first ``gpus`` of its worker's
slice. All tests of one config must run on one worker (the plugin's ``xdist_group`` per config and
``--dist loadgroup``) so its server starts once.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterable, Mapping
from typing import Any

from pytest_llmbench.errors import LlmbenchError

ENV_GPUS = "LLMBENCH_GPUS"


class GPUAssignmentError(LlmbenchError, RuntimeError):
    """A config cannot get the GPUs it asks for; the message says what to change."""


def add_options(parser: Any) -> None:
    """The GPU runner's command-line options (call from the plugin's pytest_addoption)."""
    group = parser.getgroup("llmbench")
    group.addoption(
        "--llmbench-gpus",
        dest="llmbench_gpus",
        default=None,
        metavar="IDS",
        help="comma-separated GPU ids the run may use (default: $LLMBENCH_GPUS, "
        "$CUDA_VISIBLE_DEVICES, else every GPU NVML sees); split across xdist workers",
    )


def parse_ids(text: str) -> tuple[str, ...]:
    return tuple(p.strip() for p in text.split(",") if p.strip())


def _nvml_count() -> int | None:
    try:
        import pynvml
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
        try:
            return int(pynvml.nvmlDeviceGetCount())
        finally:
            pynvml.nvmlShutdown()
    except Exception:
        return None


def _smi_count() -> int | None:
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if out.returncode != 0:
        return None
    return sum(1 for line in out.stdout.splitlines() if line.startswith("GPU "))


def visible_gpus(
    pytest_config: Any = None, environ: Mapping[str, str] | None = None, detect: bool = True
) -> tuple[str, ...]:
    """The GPU ids this run may use (see the module docstring for the order)."""
    environ = os.environ if environ is None else environ
    opt = pytest_config.getoption("llmbench_gpus", None) if pytest_config is not None else None
    if opt:
        return parse_ids(opt)
    if environ.get(ENV_GPUS):
        return parse_ids(environ[ENV_GPUS])
    if "CUDA_VISIBLE_DEVICES" in environ:
        return parse_ids(environ["CUDA_VISIBLE_DEVICES"])  # "" means: no GPU
    if not detect:
        return ()
    count = _nvml_count()
    if count is None:
        count = _smi_count()
    return tuple(str(i) for i in range(count or 0))


def worker_slot(environ: Mapping[str, str] | None = None) -> tuple[int, int]:
    """(index, count) of this xdist worker; (0, 1) without xdist."""
    environ = os.environ if environ is None else environ
    m = re.fullmatch(r"gw(\d+)", environ.get("PYTEST_XDIST_WORKER", ""))
    if not m:
        return 0, 1
    return int(m.group(1)), max(1, int(environ.get("PYTEST_XDIST_WORKER_COUNT", "1") or 1))


def worker_gpus(visible: tuple[str, ...], index: int, count: int) -> tuple[str, ...]:
    """Worker ``index`` of ``count``'s disjoint slice of ``visible`` (leftovers stay unused)."""
    per = len(visible) // count
    return visible[index * per : (index + 1) * per]


def worker_slice(pytest_config: Any = None) -> tuple[str, ...]:
    """This process's GPUs: its xdist worker's slice of the visible ones (all of them without xdist)."""
    index, count = worker_slot()
    return worker_gpus(visible_gpus(pytest_config), index, count)


def pick(cfg: Any, visible: tuple[str, ...], index: int = 0, count: int = 1) -> tuple[str, ...]:
    """The GPUs config ``cfg`` gets on worker ``index`` of ``count``, or a clear error."""
    need = int(getattr(cfg, "gpus", 0) or 0)
    if need == 0:
        return ()
    if need > len(visible):
        raise GPUAssignmentError(
            f"config {cfg.name} ({cfg.source}) needs {need} GPU(s), this machine has "
            f"{len(visible)}{' ' + str(list(visible)) if visible else ''}; set --llmbench-gpus or deselect it"
        )
    mine = worker_gpus(visible, index, count)
    if need > len(mine):
        raise GPUAssignmentError(
            f"config {cfg.name} needs {need} GPU(s) but xdist worker gw{index} has {len(mine)} "
            f"({len(visible)} GPUs split over {count} workers); run with -n {max(1, len(visible) // need)} or fewer"
        )
    return mine[:need]


def assign_gpus(pytest_config: Any, server_config: Any) -> tuple[str, ...]:
    """The GPUs for ``server_config`` in this process (called when its server starts)."""
    visible = visible_gpus(pytest_config) if int(getattr(server_config, "gpus", 0) or 0) else ()
    index, count = worker_slot()
    return pick(server_config, visible, index, count)


def check_gpu_requests(
    pytest_config: Any, configs: Iterable[Any], visible: tuple[str, ...] | None = None, workers: int | None = None
) -> list[str]:
    """Errors before any start, one line per selected config that cannot get its GPUs: more than the
    machine has, or (split over ``workers`` xdist workers) more than one worker's slice."""
    configs = [c for c in configs if int(getattr(c, "gpus", 0) or 0)]
    if not configs or getattr(getattr(pytest_config, "option", None), "collectonly", False):
        return []  # --collect-only lists a GPU matrix on any machine; nothing will start
    visible = visible_gpus(pytest_config) if visible is None else visible
    count = workers if workers is not None else worker_slot()[1]
    per = len(visible) // count
    errors = []
    for cfg in configs:
        need = int(cfg.gpus)
        if need > len(visible):
            errors.append(
                f"config {cfg.name} ({cfg.source}) needs {need} GPU(s), this machine has {len(visible)}"
                f"{' ' + str(list(visible)) if visible else ''}"
            )
        elif need > per:
            errors.append(
                f"config {cfg.name} needs {need} GPU(s) but each of {count} xdist workers gets {per} "
                f"of the {len(visible)} GPUs; run with -n {max(1, len(visible) // need)} or fewer"
            )
    return errors
