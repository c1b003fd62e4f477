"""What a loaded server costs: the seeds' resources.json (GPU memory, host RAM, startup, KV pool).

GPU memory is the device's used memory on each assigned GPU after load (NVML through nvidia-ml-py,
``nvidia-smi`` when NVML is missing) — what the seeds quote as "43.8 GB after load"; it includes any
other process on that GPU, which a benchmark machine should not have. Host RAM is the resident set of
the server's process tree (psutil over the launcher's pids) or, for containers, Docker's memory
usage. The engine adds the sizes it chose (SGLang: KV pool tokens, mamba slots; llama.cpp: n_ctx,
slots).
"""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pytest_llmbench.server import LLMServer

MIB = 1024 * 1024


def _nvml_memory(gpu_ids: Sequence[str]) -> dict[str, tuple[int, int]] | None:
    try:
        import pynvml
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
    except Exception:
        return None
    try:
        out = {}
        for gid in gpu_ids:
            if gid.startswith(("GPU-", "MIG-")):
                h = pynvml.nvmlDeviceGetHandleByUUID(gid)
            else:
                h = pynvml.nvmlDeviceGetHandleByIndex(int(gid))
            info = pynvml.nvmlDeviceGetMemoryInfo(h)
            out[gid] = (int(info.used), int(info.total))
        return out
    except Exception:
        return None
    finally:
        try:
            pynvml.nvmlShutdown()
        except Exception:
            pass


def _smi_memory(gpu_ids: Sequence[str]) -> dict[str, tuple[int, int]] | None:
    try:
        r = subprocess.run(
            ["nvidia-smi", "--query-gpu=index,uuid,memory.used,memory.total", "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            timeout=20,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if r.returncode != 0:
        return None
    rows = {}
    for line in r.stdout.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 4 and parts[2].isdigit() and parts[3].isdigit():
            rows[parts[0]] = rows[parts[1]] = (int(parts[2]) * MIB, int(parts[3]) * MIB)
    if not all(g in rows for g in gpu_ids):
        return None
    return {g: rows[g] for g in gpu_ids}


def gpu_memory(gpu_ids: Sequence[str]) -> tuple[dict[str, tuple[int, int]] | None, str | None]:
    """(used, total) bytes per GPU id and where the numbers came from; (None, None) without GPUs."""
    if not gpu_ids:
        return None, None
    mem = _nvml_memory(gpu_ids)
    if mem is not None:
        return mem, "nvml"
    mem = _smi_memory(gpu_ids)
    return (mem, "nvidia-smi") if mem is not None else (None, None)


def gpu_memory_used(gpu_ids: Sequence[str]) -> tuple[dict[str, int] | None, str | None]:
    """Used bytes per GPU id and where the numbers came from; (None, None) without GPUs."""
    mem, source = gpu_memory(gpu_ids)
    return ({g: used for g, (used, _) in mem.items()} if mem is not None else None), source


def gpu_used_share(gpu_ids: Sequence[str]) -> float | None:
    """The fullest assigned GPU's used share of its memory (0..1); None when it cannot be read."""
    mem, _ = gpu_memory(gpu_ids)
    if not mem:
        return None
    return max(used / total for used, total in mem.values() if total > 0)


def host_rss(pids: Sequence[int]) -> int | None:
    """Resident bytes of ``pids`` and all their descendants, each process counted once."""
    if not pids:
        return None
    import psutil

    seen: set[int] = set()
    total = 0
    for pid in pids:
        try:
            procs = [psutil.Process(pid)]
            procs += procs[0].children(recursive=True)
        except psutil.Error:
            continue
        for p in procs:
            if p.pid in seen:
                continue
            seen.add(p.pid)
            try:
                total += p.memory_info().rss
            except psutil.Error:
                continue
    return total if seen else None


def collect_facts(server: LLMServer) -> dict[str, Any]:
    """resources.json for one loaded server; every probe that cannot run leaves its key None."""
    facts: dict[str, Any] = {
        "config": server.name,
        "engine": server.config.engine,
        "launcher": server.config.launcher,
        "gpu_ids": list(server.gpu_ids),
        "startup_s": round(server.startup_s, 3),
    }
    used, source = gpu_memory_used(server.gpu_ids)
    facts["gpu_memory_used_bytes"] = used
    facts["gpu_memory_used_gb"] = round(sum(used.values()) / 1e9, 2) if used else None
    facts["gpu_memory_source"] = source
    memory = getattr(server.handle, "memory_bytes", None)
    rss = memory() if callable(memory) else None
    facts["host_memory_source"] = "docker stats" if rss is not None else None
    if rss is None:
        try:
            rss = host_rss(server.handle.pids())
        except Exception:
            rss = None
        facts["host_memory_source"] = "psutil rss" if rss is not None else None
    facts["host_rss_bytes"] = rss
    facts["host_rss_gib"] = round(rss / 2**30, 2) if rss is not None else None
    problem = server.problem()
    if problem:  # a dead or hung server: asking it would fail, or wait out a timeout per probe
        facts["engine_facts_error"] = f"server {problem}"
        return facts
    try:
        facts.update(server.facts())  # startup_s + the engine's own sizes (KV pool, mamba slots …)
    except Exception as e:  # a missing log must not lose the other facts
        facts["engine_facts_error"] = f"{type(e).__name__}: {e}"
    return facts
