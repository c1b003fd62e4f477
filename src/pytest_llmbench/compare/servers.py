"""The arms' server lifecycle for a comparison session: whether both arms fit, and a start that is
retried once and recorded.

Why apart from the session plugin: starting servers is the part that fails, retries and costs minutes on a
GPU; the session only asks for a starter and closes what it got.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_llmbench import sink
from pytest_llmbench.compare import records
from pytest_llmbench.compare.interleave import ArmServers
from pytest_llmbench.compare.terminal import say
from pytest_llmbench.records.results import RESULTS, server_line

if TYPE_CHECKING:
    from pytest_llmbench.compare.arms import Arm, ArmPair
    from pytest_llmbench.compare.placement import AutoPlacement
    from pytest_llmbench.server import LLMServer

#: ``auto``'s placement for a loaded candidate on GPUs (compare/placement.py), None: the shared / per-block rule
AutoPlacer = Callable[[Any], "AutoPlacement | None"]

#: auto mode keeps both arms up when the loaded candidate uses at most this share of its GPUs' memory (the
#: reference is assumed the same size; engines that reserve most of the GPU, as SGLang does, go per block).
BOTH_FIT_SHARE = 0.45


def both_fit(candidate: Any) -> bool:
    """Can the reference start beside the running candidate? Always on CPU; on GPUs when the candidate's
    devices are under half full (unreadable memory: no, one arm at a time is the safe side)."""
    if not candidate.gpu_ids:
        return True
    from pytest_llmbench.server_facts import gpu_used_share

    share = gpu_used_share(candidate.gpu_ids)
    return share is not None and share <= BOTH_FIT_SHARE


def facts(server: Any) -> dict[str, Any]:
    """What a loaded server holds (memory, build); never fails a comparison."""
    from pytest_llmbench.server_facts import collect_facts

    try:
        return collect_facts(server)
    except Exception:  # facts are informative; never fail a comparison over them
        return {}


def pin(server: Any, cores: tuple[str, ...]) -> None:
    """Every thread of the server's processes onto ``cores`` (a CPU set standing in for a GPU set); threads
    made later inherit it. Linux only: elsewhere it says so instead of comparing on unpinned servers."""
    if not hasattr(os, "sched_setaffinity"):
        raise pytest.UsageError("--llmbench-compare-sets cpu:...: pinning needs Linux (os.sched_setaffinity)")
    mask = {int(c) for c in cores}
    for pid in server.handle.pids():
        for task in Path(f"/proc/{pid}/task").glob("*"):
            try:
                os.sched_setaffinity(int(task.name), mask)
            except (ProcessLookupError, FileNotFoundError):  # a thread that ended meanwhile
                continue


def starter(config: pytest.Config, gpu_ids: Any, session_id: str, retried: list[str]) -> Callable[[Arm], LLMServer]:
    """A start of an arm's server on ``gpu_ids``; a start that fails is retried once (a session that
    restarts servers dozens of times meets a flaky one: the units already played are kept), noted in
    ``retried`` and recorded; a second failure fails the test."""
    from pytest_llmbench.server import ServerStartError, start_server

    results = config.stash[RESULTS]

    def start(arm: Arm) -> LLMServer:
        for attempt in (1, 2):
            try:
                on_gpus = arm.devices if arm.devices is not None and arm.device_kind == "gpu" else gpu_ids
                server = start_server(arm.config, results.server_dir(arm.server_name), gpu_ids=on_gpus, image=arm.image)
                if arm.devices is not None and arm.device_kind == "cpu":
                    pin(server, arm.devices)
                break
            except ServerStartError as e:
                if attempt == 2:
                    pytest.fail(f"{arm.role} arm ({arm.label}), started again after a failed start: {e}", pytrace=False)
                note = (
                    f"{arm.role} arm ({arm.label}) failed to start once and was started again: "
                    + (str(e).splitlines() or [""])[0]
                )
                retried.append(note)
                say(config, f"llmbench compare: {note}")
                sink.emit(
                    config,
                    {
                        "record": "arm_start_retry",
                        "compare_session": session_id,
                        "config": arm.server_name,
                        "role": arm.role,
                        "label": arm.label,
                        "error": str(e)[:2000],
                    },
                )
        sink.emit(config, {**server_line(server), "config": arm.server_name, "role": arm.role})
        return server

    return start


def auto_placer(config: pytest.Config, settings: Any, alphas: Callable[[], Mapping[str, float]]) -> AutoPlacer:
    """``auto`` on this worker's GPUs (its xdist slice): where they hold a second set of the candidate's, the
    placement compare/placement.py prices cheapest; the disjoint ones are refused where the ini's unit
    length is not two halves of whole ABBA pairs."""

    def place(candidate: Any) -> AutoPlacement | None:
        from pytest_llmbench.compare.placement import auto_placement
        from pytest_llmbench.compare.plan import Noise
        from pytest_llmbench.compare.spend import target_for
        from pytest_llmbench.launchers.gpus import worker_slice

        design = settings.design
        aim = target_for(settings.decide, alphas(), detect=settings.detect, ignore=settings.ignore, power=design.power)
        if aim is None:
            return None
        refused = (
            None
            if design.halves_fit
            else f"ini llmbench_compare_restart_rounds = {design.restart_rounds} is not two halves of whole ABBA "
            "pairs (4, 8, ... or auto)"
        )
        return auto_placement(
            candidate.gpu_ids,
            worker_slice(config),
            both_fit=both_fit(candidate),
            start_s=float(getattr(candidate, "startup_s", 0.0) or 0.0),
            noise=Noise(design.prior_sd_between, design.prior_sd_within),
            target=aim[1],
            disjoint_refused=refused,
        )

    return place


class SessionServers:
    """The servers of the config being compared (one :class:`ArmServers` at a time): both arms kept up or one
    at a time by ``server_mode`` (``auto``: both where they fit), each start recorded as ``arm_start``."""

    def __init__(
        self,
        config: pytest.Config,
        server_mode: str,
        session_id: str,
        retried: list[str],
        *,
        sets: tuple[tuple[str, ...], tuple[str, ...]] | None = None,
        device_kind: str = "gpu",
        auto: AutoPlacer | None = None,
    ) -> None:
        self.config, self.server_mode, self.session_id, self.retried = config, server_mode, session_id, retried
        self.sets, self.device_kind, self.auto = sets, device_kind, auto
        self.current: ArmServers | None = None
        self.mode = server_mode  # the running pair's placement: ``auto`` resolved where it chose one

    def for_pair(self, pair: ArmPair, candidate: Any) -> ArmServers:
        """The pair's servers; another pair or another ``llm_server`` closes the last one's first."""
        if self.current is not None and (self.current.pair is not pair or self.current.candidate is not candidate):
            self.close()
        if self.current is None:
            mode, sets = self.server_mode, self.sets
            chosen = self.auto(candidate) if mode == "auto" and candidate.gpu_ids and self.auto is not None else None
            if chosen is not None:  # a runner with a second set: the planner's cheapest placement
                mode, sets = chosen.mode, chosen.sets
                for line in chosen.lines:
                    say(self.config, line)
            keep_both = mode == "both" or (mode == "auto" and both_fit(candidate))
            self.mode = mode if mode != "auto" else ("both" if keep_both else "per-block")
            self.current = ArmServers(
                pair,
                candidate,
                self.starter(candidate),
                keep_both=keep_both,
                facts=facts,
                sets=sets,
                device_kind=self.device_kind,
                parallel=mode == "disjoint-parallel",
            )
        return self.current

    def starter(self, candidate: Any) -> Callable[[Arm], LLMServer]:
        """A start of an arm's server on the test's GPUs, retried once (a seam the tests replace)."""
        return starter(self.config, candidate.gpu_ids, self.session_id, self.retried)

    def write_starts(self, pair: ArmPair, servers: ArmServers) -> None:
        for s in servers.starts:
            sink.emit(self.config, records.arm_start(self.session_id, pair, s))
        servers.starts.clear()

    def close(self) -> None:
        if self.current is not None:
            self.current.close()
            self.current = None
