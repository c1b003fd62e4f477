"""Interleaved rounds: both arms run the same scenario, on the same prompts, in ABBA then BAAB order.

Why ABBA: on a shared machine speed drifts within minutes (thermal state, neighbours); alternating
which arm goes first each round puts a linear drift on both arms equally, so the per-round ratio
stays unbiased. Why BAAB next: so that neither arm always plays a unit's first block on its fresh server,
and the arm whose server starts first alternates too (``start_first``); both orders are recorded on
every block, and experiments/compare/order_lab.py measures their effects. Each block starts from a flushed prefix cache (the block flushes before it, so the
other arm's prompts are never reused). A block sends ``block_prompts`` of the scenario's prompts, the
window moving on each round, so short blocks and many rounds still cover every prompt; the warm-up
round (compare/power.py) runs the scenario's own warmup requests, later blocks run none.

Servers: both arms stay up when both fit (CPU, or GPU with room), restarted together every
``restart_rounds`` rounds so that each unit of the tests is a fresh pair of servers (compare/power.py
says why); the first round on a new pair runs the scenario's warmup requests first. Otherwise each block
starts its arm's server and stops it afterwards (one GPU's memory), and the candidate is started again
into the ``llm_server`` object the test holds.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from pytest_llmbench.compare.arms import ROLES, Arm, ArmPair
from pytest_llmbench.compare.plan import Costs, duration
from pytest_llmbench.compare.power import MIN_UNITS
from pytest_llmbench.compare.rounds import Block, Rounds
from pytest_llmbench.workload.scenario import Scenario, ScenarioResult, WorkloadError, build_prompts, run_scenario

if TYPE_CHECKING:
    from pytest_llmbench.compare.judging import Judge
    from pytest_llmbench.compare.power import Design, Plan
    from pytest_llmbench.compare.stats import Comparison
    from pytest_llmbench.server import LLMServer


def round_order(round_index: int, unit_rounds: int = 2) -> tuple[str, str]:
    """Which arm goes first in a round. Within a unit the rounds follow A B | B A | B A | A B | … (each
    ABBA pair mirrors the one before), and every other unit plays the mirror of that (B A | A B | …), so
    the arm that plays a unit's first block on its fresh server alternates unit by unit whatever the
    unit's length: with the pattern over rounds alone, units of 4, 8, 16 or 24 rounds (lengths the
    planner picks) always began with the reference (issue 55). ``unit_rounds`` 1 (the round is the unit)
    keeps the pattern over rounds, which alternates the first block in ABBA pairs of rounds."""
    m = max(1, unit_rounds)
    unit, j = (0, round_index) if m == 1 else divmod(round_index, m)
    ref_first = (j % 2 == (j // 2) % 2) != (unit % 2 == 1)
    return ROLES if ref_first else (ROLES[1], ROLES[0])


def start_first(unit_index: int) -> str:
    """Which arm's server starts first for a unit's fresh pair: the candidate in even units, the reference
    in odd ones (a start transient tied to the order of the starts is then cancelled, and measurable:
    experiments/compare/compare_pytest_sessions.py --order)."""
    return ROLES[1] if unit_index % 2 == 0 else ROLES[0]


# --- the servers of the two arms ---------------------------------------------------------------------

Starter = Callable[[Arm], "LLMServer"]


@dataclass
class ArmStart:
    """One start of one arm's server: how long it took and what it held once loaded."""

    role: str
    startup_s: float
    host_rss_bytes: int | None = None
    gpu_memory_gb: float | None = None
    build_info: str | None = None
    unit: int | None = None  # the unit whose fresh pair this start began (None: the warm-up's or a block's)
    devices: tuple[str, ...] | None = None  # the set it started on (disjoint placements)


class ArmServers:
    """The running servers of one pair. ``keep_both``: start each once and keep it up; otherwise only
    one arm is up at a time and every block starts its own server."""

    def __init__(
        self,
        pair: ArmPair,
        candidate: LLMServer,
        start: Starter,
        *,
        keep_both: bool,
        facts: Callable[[LLMServer], dict[str, Any]] | None = None,
        sets: tuple[tuple[str, ...], tuple[str, ...]] | None = None,
        device_kind: str = "gpu",
        parallel: bool = False,
    ) -> None:
        self.pair = pair
        self.keep_both = keep_both or sets is not None
        #: Disjoint placement (compare/placement.py): the reference on sets[0] and the candidate on sets[1] in
        #: a unit's first half, swapped in its second; ``parallel`` plays both arms' blocks at once.
        self.sets, self.device_kind, self.parallel = sets, device_kind, parallel and sets is not None
        self.swapped = False
        self._start = start
        self._facts = facts
        self.candidate = candidate  # the llm_server object the test holds; never replaced, restarted in place
        self.reference: LLMServer | None = None
        self.starts: list[ArmStart] = []
        self._noted_candidate = False
        self.started_first: str | None = None  # the current pair's first start (renew's order)
        self.unit: int | None = None  # the unit the current pair serves (renew's)
        self.last_start_s: dict[str, float] = {}  # each arm's latest start, seconds (what a fresh pair costs)

    @property
    def halves(self) -> int:
        """Fresh pairs per unit: 2 on disjoint sets (the arms swap sets between them), else 1."""
        return 2 if self.sets is not None else 1

    def devices_for(self, role: str) -> tuple[str, ...] | None:
        """The set ``role``'s server runs on now (None: not a disjoint placement)."""
        if self.sets is None:
            return None
        return self.sets[(role == "candidate") != self.swapped]

    def _placed(self, arm: Arm) -> Arm:
        devices = self.devices_for(arm.role)
        return arm if devices is None else replace(arm, devices=devices, device_kind=self.device_kind)

    def _note(self, role: str, server: LLMServer) -> None:
        facts = self._facts(server) if self._facts else {}
        self.last_start_s[role] = float(server.startup_s)
        self.starts.append(
            ArmStart(
                role,
                float(server.startup_s),
                facts.get("host_rss_bytes"),
                facts.get("gpu_memory_used_gb"),
                _build_of(server),
                self.unit,
                self.devices_for(role),
            )
        )

    def acquire(self, role: str) -> LLMServer:
        if role == "candidate":
            if not self.keep_both:
                self._stop_reference()
                if not self.candidate.alive():
                    self._restart_candidate()
            if not self._noted_candidate and self.keep_both:
                self._note("candidate", self.candidate)
                self._noted_candidate = True
            return self.candidate
        if not self.keep_both:
            self.candidate.stop()
        if self.reference is None:
            self.reference = self._start(self._placed(self.pair.reference))
            self._note("reference", self.reference)
        return self.reference

    def renew(self, first: str = "candidate", unit: int | None = None, *, swapped: bool = False) -> None:
        """A fresh pair of servers for the next unit (both arms up): stop both, then start ``first``'s
        server and the other's (the candidate again in place), on swapped sets where ``swapped`` (a disjoint
        unit's second half). Per-block servers are fresh every block."""
        if not self.keep_both:
            return
        self.unit = unit
        self.swapped = swapped and self.sets is not None
        self._stop_reference()
        self.candidate.stop()
        for role in (first, ROLES[0] if first == ROLES[1] else ROLES[1]):
            if role == "candidate":
                self._restart_candidate()
            else:
                self.reference = self._start(self._placed(self.pair.reference))
                self._note("reference", self.reference)
        self.started_first = first

    def release(self, role: str) -> None:
        """After a block: in per-block mode its server stops (the next block starts one afresh)."""
        if self.keep_both:
            return
        if role == "reference":
            self._stop_reference()
        else:
            self.candidate.stop()

    def finish(self) -> None:
        """After the rounds: the test's ``llm_server`` is up again (per-block mode stopped it)."""
        if not self.keep_both:
            self._stop_reference()
            if not self.candidate.alive():
                self._restart_candidate()

    def close(self) -> None:
        self._stop_reference()

    def _stop_reference(self) -> None:
        if self.reference is not None:
            self.reference.stop()
            self.reference = None

    def _restart_candidate(self) -> None:
        fresh = self._start(self._placed(self.pair.candidate))
        self._note("candidate", fresh)
        server = self.candidate
        server.handle, server.port, server.log_path = fresh.handle, fresh.port, fresh.log_path
        server.startup_s, server.info, server.not_responding = fresh.startup_s, fresh.info, None
        if server._client is not None:
            server._client.close()
        server._client = None


# --- the rounds ------------------------------------------------------------------------------------


RunBlock = Callable[["LLMServer", Scenario, Sequence[Any]], ScenarioResult]


def _run_block(server: LLMServer, scenario: Scenario, prompts: Sequence[Any]) -> ScenarioResult:
    server.flush_cache()
    return run_scenario(server, scenario, prompts=prompts)


def block_window(round_index: int, size: int, total: int) -> list[int]:
    """The scenario prompts of a round's blocks: ``size`` of ``total``, moving on by ``size`` each round
    (round -1, the warm-up, takes the last window)."""
    size = max(1, min(size, total))
    start = (round_index * size) % total
    return [(start + i) % total for i in range(size)]


@dataclass(frozen=True)
class Outcome:
    """How the rounds ended: the pilot's plan, the rounds run, and why they stopped."""

    plan: Plan
    rounds: int
    stop: str  # planned (the power is reached) | underpowered (the limit is below the need) | budget (out of time)
    elapsed_s: float  # | too-small (the budget, a cap, holds fewer than MIN_UNITS units: nothing judged)
    note: str = ""  # too-small: what the floor would have cost

    def describe(self) -> str:
        if self.note:
            return self.note
        if self.stop == "budget" and self.rounds < self.plan.rounds:
            return f"budget: stopped after {self.rounds} of {self.plan.rounds} planned rounds; " + self.plan.describe()
        return self.plan.describe()


UnitChooser = Callable[[Costs], tuple[int, int]]


def run_rounds(
    servers: ArmServers,
    scenario: Scenario,
    *,
    design: Design,
    judge: Judge,
    prompts: Sequence[Any] | None = None,
    block_prompts: int | None = None,
    run_block: RunBlock = _run_block,
    on_block: Callable[[Block], None] | None = None,
    on_plan: Callable[[Plan], None] | None = None,
    choose_unit: UnitChooser | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> tuple[Rounds, list[Comparison], Outcome]:
    """Warm-up rounds, the pilot, then the rounds the pilot's plan asks for (compare/power.py), each an
    ABBA pair of blocks on the same prompts, in units of one server pair each; the comparisons are judged
    once, after the last round.

    A unit chosen by cost (``design.planned_unit`` with both arms up): the first pilot pair plays one ABBA
    pair of rounds, then ``choose_unit`` gets what it cost (the pair's start, a round, the first round's
    warmup requests) and answers the rounds per unit and the pilot's units (compare/plan.py); that pair
    plays on to the chosen length, and every unit after it has the same length (units of one length: the
    t over units assumes one variance)."""
    unit = design.unit_rounds(servers.keep_both)
    rounds = Rounds(scenario, unit_rounds=unit)
    if prompts is None:
        prompts = build_prompts(servers.acquire("candidate"), scenario)
    prompts = list(prompts)[: scenario.num_prompts]
    size = max(block_prompts or len(prompts), scenario.concurrency)
    size = min(size, len(prompts))
    quiet = replace(scenario, warmup=0, num_prompts=size)
    warm = replace(scenario, num_prompts=size)
    restarting = unit > 1
    choosing = restarting and design.planned_unit and choose_unit is not None
    step = max(2, unit)  # rounds played at a time: a whole unit, and whole ABBA pairs
    t0 = clock()
    too_small = ""  # set where the budget (a cap) cannot hold the floor: the rounds stop, nothing is judged

    def one(role: str, played: Scenario, chosen: list[Any]) -> tuple[LLMServer, ScenarioResult, float]:
        server = servers.acquire(role)
        t = clock()
        return server, run_block(server, played, chosen), clock() - t

    def play(r: int, *, fresh: bool = False) -> float:
        began = clock()
        ids = block_window(r, size, len(prompts))
        order = round_order(r, rounds.unit_rounds)
        played, chosen = (warm if fresh else quiet), [prompts[i] for i in ids]
        at_once = None
        if servers.parallel:  # both arms' blocks at once, each on its own set
            with ThreadPoolExecutor(max_workers=2) as pool:
                at_once = [f.result() for f in [pool.submit(one, role, played, chosen) for role in order]]
        for k, role in enumerate(order):
            server, result, wall = at_once[k] if at_once is not None else one(role, played, chosen)
            if result.metrics.get("failed") and server.problem():  # an arm's server died: no more rounds on it
                raise WorkloadError(f"{role} arm: server {server.name} {server.problem()} in round {r}")
            block = Block(
                r,
                role,
                result,
                ids,
                servers.started_first if restarting else None,
                rounds.unit_of(r) if r >= 0 else None,
                wall,
                servers.devices_for(role),
            )
            servers.release(role)
            rounds.add(block)
            if on_block is not None:
                on_block(block)
        return clock() - began

    # Unit 0 plays on the pair the warm-up rounds ran on when there were any: both arms are up, and that
    # pair's offset is in unit 0 alone (the warm-up is never judged), so a restart would cost two starts
    # (minutes for a big model) and buy nothing. Its first server was the candidate's (the test's
    # llm_server), as start_first(0) asks.
    reuse = restarting and design.warmup_rounds > 0

    def begin_unit(first: int) -> bool:
        """A fresh pair for the unit starting at round ``first``; False where unit 0 keeps the warm-up's."""
        if first == 0 and reuse:
            servers.started_first = start_first(0)
            return False
        servers.renew(start_first(rounds.unit_of(first)), rounds.unit_of(first))
        return True

    def swap_at(r: int, first: int) -> bool:
        """Disjoint sets: a fresh pair on swapped sets where round ``r`` begins its unit's second half."""
        if servers.halves < 2 or r - first != step // 2:
            return False
        servers.renew(start_first(rounds.unit_of(first) + 1), rounds.unit_of(first), swapped=True)
        return True

    def play_unit(first: int) -> None:
        fresh = begin_unit(first) if restarting else False
        for r in range(first, first + step):
            swapped = swap_at(r, first)
            play(r, fresh=(r == first and fresh) or swapped)

    def timed_first_unit() -> int:
        """Unit 0 when its length is chosen by cost: one ABBA pair timed, the choice, then the rest."""
        nonlocal unit, step, design, too_small
        began = clock()
        fresh = begin_unit(0)
        start_s = clock() - began if fresh else sum(servers.last_start_s.values())
        first = play(0, fresh=fresh)
        second = play(1)
        assert choose_unit is not None
        costs = Costs(start_s, second, max(0.0, first - second) if fresh else 0.0)
        unit, pilot_units = choose_unit(costs)
        if pilot_units == 0:  # the floor does not fit the budget: the two timed rounds are all that runs
            floor_s = clock() - t0 + costs.seconds(MIN_UNITS, max(unit, 2)) - (clock() - began)
            too_small = f"budget too small to judge: the {MIN_UNITS}-unit floor would cost ~{duration(floor_s)}"
            rounds.unit_rounds = 2
            return 2
        if servers.halves > 1:  # two halves of whole ABBA pairs, the arms swapped between them
            unit = max(4, -(-unit // 4) * 4)
        step = unit
        rounds.unit_rounds = unit
        # max_rounds was written for units of 2 rounds: with a unit chosen by cost it caps the units at
        # max_rounds / 2, not the rounds (rounds are the cheap part of a long unit; the budget is the limit)
        most = max(design.max_rounds, design.max_rounds // 2 * unit)
        design = replace(design, restart_rounds=unit, pilot_units=pilot_units, max_rounds=most)
        judge.design = replace(judge.design, max_rounds=most)
        for r in range(2, unit):
            play(r, fresh=swap_at(r, 0))
        return unit

    def over_budget(next_s: float) -> bool:
        return design.budget_s is not None and clock() - t0 + next_s > design.budget_s

    try:
        if servers.sets is not None and design.warmup_rounds > 0:  # the warm-up pair on its sets already
            servers.renew(start_first(0), None)
        for w in range(design.warmup_rounds):
            play(w - design.warmup_rounds, fresh=w == 0)
        t_pilot = clock()
        r = timed_first_unit() if choosing else 0
        pilot, floor = design.pilot(unit), design.floor(unit)
        # whole units; the budget is a cap: below the floor (power.MIN_UNITS) it stops the pilot too, and
        # nothing is judged, unless design.force_floor (--llmbench-compare-floor) plays the floor anyway
        while r < pilot and not too_small:
            per = (clock() - t_pilot) / r if r else 0.0
            if r and over_budget(step * per) and (r >= floor or not design.force_floor):
                if r < floor:
                    floor_s = t_pilot - t0 + floor * per
                    too_small = f"budget too small to judge: the {MIN_UNITS}-unit floor would cost ~{duration(floor_s)}"
                break
            play_unit(r)
            r += step
        per_round = (clock() - t_pilot) / max(r, 1)
        plan = judge.plan(rounds, seconds_per_round=per_round, elapsed_s=clock() - t0)
        if on_plan is not None:
            on_plan(plan)
        stop = "too-small" if too_small else "underpowered" if plan.underpowered else "planned"
        while r < plan.rounds and not too_small:
            if over_budget(step * per_round):
                stop = "budget"
                break
            play_unit(r)
            r += step
            per_round = (clock() - t_pilot) / r
    finally:
        servers.finish()
    return rounds, judge.judge(rounds, plan), Outcome(plan, r, stop, clock() - t0, too_small)


def _build_of(server: LLMServer) -> str | None:
    """What tells this arm's build from the other's: the launcher's identity (package version, image
    digest, program hash: launchers/identity.py), else what the server says of itself."""
    build = getattr(server, "build", None) or {}
    return build.get("build") or (server.info or {}).get("build_info")
