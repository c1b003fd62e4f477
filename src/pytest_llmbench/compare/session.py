"""CompareSession: the pytest side of reference-vs-candidate comparisons (issue 12).

With any ``--llmbench-reference-*`` / ``--llmbench-candidate-*`` option, or a YAML ``compare:`` block, the
selected configs' bench tests become comparisons without a change to the bench code: ``llm_server`` is the
candidate arm, ``bench.run`` plays the scenario on both arms (compare/interleave.py; one scenario's callbacks
in compare/scenario_run.py), ``bench.check`` of a serving metric returns the comparison, other checks keep their
stored baseline. This module holds what lives across tests (arms, alphas, budget, verdicts, Holm at the end);
servers (and ``auto``'s placement) live in compare/servers.py, records in records.py, words in terminal.py.
"""

from __future__ import annotations

import time
import uuid
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import httpx
import pytest

from pytest_llmbench import sink
from pytest_llmbench.compare import cases as cases_mod
from pytest_llmbench.compare import records, suite, terminal
from pytest_llmbench.compare import servers as servers_mod
from pytest_llmbench.compare.arms import (
    ArmError,
    ArmPair,
    ComparePair,
    arms_from_options,
    block_pairs,
    read_compare_blocks,
)
from pytest_llmbench.compare.checker import ComparisonChecker
from pytest_llmbench.compare.count import comparisons_by_family
from pytest_llmbench.compare.interleave import Outcome, run_rounds
from pytest_llmbench.compare.judging import Judge, compare_metric, family_of, source_of
from pytest_llmbench.compare.margins import sizes_for
from pytest_llmbench.compare.options import CompareSettings, read_settings
from pytest_llmbench.compare.rounds import Rounds
from pytest_llmbench.compare.scenario_run import ScenarioRun
from pytest_llmbench.compare.spend import (
    SessionBudget,
    floor_warning,
)
from pytest_llmbench.compare.stats import not_judged
from pytest_llmbench.config import CONFIGS, ConfigError
from pytest_llmbench.gate.budget import Budget, parse_alpha
from pytest_llmbench.gate.verdict import fail_at_end
from pytest_llmbench.records.results import RESULTS
from pytest_llmbench.registry import REGISTRY
from pytest_llmbench.scheduling import server_config_name
from pytest_llmbench.workload.scenario import WorkloadError

COMPARE = pytest.StashKey["CompareSession"]()
SESSION_KEY = "llmbench_compare_session"  # xdist workerinput: the controller's session id


def maybe_register(config: pytest.Config, config_paths: list[Path]) -> None:
    """Called from the plugin's pytest_configure: a session plugin only when something is compared."""
    settings = read_settings(config)
    try:
        yaml_pairs = [] if settings.arms.active else read_compare_blocks(config_paths)
    except ConfigError as e:
        raise pytest.UsageError(f"llmbench config error: {e}") from None
    if not settings.arms.active and not yaml_pairs:
        return
    session = CompareSession(config, settings, yaml_pairs)
    config.pluginmanager.register(session, "llmbench-compare")
    config.pluginmanager.register(ComparisonChecker(session), "llmbench-compare-checker")  # bench.check, first


def active_for(bench: Any) -> CompareSession | None:
    """The session plugin when ``bench``'s config is compared (the seam fixtures.Bench calls)."""
    session: CompareSession | None = bench.item.config.stash.get(COMPARE, None)
    if session is None or session.pairs.get(bench.config_name) is None:
        return None
    return session


@dataclass
class _LastRun:
    scenario: str
    rounds: Rounds
    comparisons: dict[str, Any]
    outcome: Outcome
    judge: Judge
    own_sizes: set[str] = field(default_factory=set)  # metrics last judged at a check's own sizes


class CompareSession:
    def __init__(self, config: pytest.Config, settings: CompareSettings, yaml_pairs: list[ComparePair]) -> None:
        self.config = config
        self.settings = settings
        self.yaml_pairs = yaml_pairs
        self.pairs: dict[str, ArmPair] = {}
        self.alphas: dict[str, float] = {}
        self._last: dict[str, _LastRun] = {}
        self._failing: dict[str, list[str]] = {}
        self.records: list[dict[str, Any]] = []  # this process's comparison records
        self.is_worker = hasattr(config, "workerinput")
        #: On every record it writes; the table and Holm read only its own (a reused --results-dir appends).
        self.session_id: str = (getattr(config, "workerinput", None) or {}).get(SESSION_KEY) or uuid.uuid4().hex[:12]
        self.counted: Counter[str] = Counter()  # comparisons per family counted up front
        self.made: Counter[str] = Counter()  # comparisons per family made (this process)
        self.budget = SessionBudget(settings.session_budget_s, settings.design.budget_s, 1)
        self.last_budget_s: float | None = None  # the running scenario's share of the budget (its records)
        self.retried: list[str] = []  # starts that failed once and were retried (named in the table)
        self.servers = servers_mod.SessionServers(
            config,
            settings.server_mode,
            self.session_id,
            self.retried,
            sets=settings.sets,
            device_kind=settings.device_kind,
            auto=servers_mod.auto_placer(config, settings, lambda: self.alphas),
        )
        config.stash[COMPARE] = self

    # --- set-up once the selected tests are known ---------------------------------------------------

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        configs = self.config.stash[CONFIGS]
        registry = self.config.stash[REGISTRY]
        named = [(i, name) for i in session.items if (name := server_config_name(i)) is not None]
        items = [i for i, _ in named]
        selected = sorted({name for _, name in named})
        try:
            if self.settings.arms.active:
                for name in selected:
                    pair = arms_from_options(configs[name], self.settings.arms, registry)
                    self.pairs[name] = pair
                    configs[name] = pair.candidate.config  # llm_server starts the candidate
            else:
                chosen = block_pairs(self.yaml_pairs, configs, registry, self.settings.arms.candidate_image)
                self.pairs = {k: v for k, v in chosen.items() if k in selected}
        except (ArmError, ConfigError) as e:
            raise pytest.UsageError(str(e)) from None
        self.alphas = self._alphas(items, session.items)

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        """xdist controller: the workers' records carry the controller's session id."""
        node.workerinput[SESSION_KEY] = self.session_id

    def _alphas(self, items: list[pytest.Item], every: list[pytest.Item]) -> dict[str, float]:
        """Per-comparison alpha by family: given, or the family's budget over the comparisons counted up
        front: every serving ``bench.check`` of each compared test (compare/count.py)."""
        self.counted = Counter()
        compared = [
            i for i in items if server_config_name(i) in self.pairs and "bench" in getattr(i, "fixturenames", ())
        ]
        self.budget.scenarios = max(1, len(compared))
        for i in compared:
            self.counted += comparisons_by_family(
                getattr(i, "function", None), family_of=cases_mod.compared_family, fallback=self.settings.decide
            )
        shared = self._shared_budget(every)  # the gate counts all the session's tests, server-less ones too
        return suite.comparison_alphas(self.settings.alpha, parse_alpha(self._gate_alpha_spec()), self.counted, shared)

    def _shared_budget(self, items: list[pytest.Item] | None = None) -> Budget | None:
        """The gate's error budget, joined by this session's comparisons (None: a fixed comparison alpha)."""
        if self.settings.alpha is not None:
            return None
        p_values = lambda: suite.p_values_by_family(self._all_records("comparison"))  # noqa: E731
        return suite.join_gate_budget(self.config, self.counted if items is not None else None, items, p_values)

    def _gate_alpha_spec(self) -> str | None:
        from pytest_llmbench.gate.options import alpha_spec

        return alpha_spec(self.config)

    def pytest_report_collectionfinish(self, config: pytest.Config, start_path: Any, items: Any) -> list[str]:
        """After collection (the arms exist only once the selected configs are known)."""
        return terminal.collection_lines(self.pairs.values(), self.settings, self.alphas)

    # --- bench.run and bench.check of a compared config ---------------------------------------------

    def run(self, bench: Any, scenario: Any, *, prompts: Any = None) -> Any:
        pair = self.pairs[bench.config_name]
        servers = self.servers.for_pair(pair, bench.server)
        design = replace(self.settings.design, budget_s=self.budget.share_s())
        self.last_budget_s = design.budget_s
        judge = Judge(
            self.settings.decide,
            self.alphas,
            design=design,
            detect=self.settings.detect,
            ignore=self.settings.ignore,
        )
        run = ScenarioRun(
            self.config,
            self.session_id,
            self.settings,
            self.alphas,
            self.budget,
            pair,
            bench,
            scenario.name,
            design,
            lambda: self.servers.write_starts(pair, servers),
            unit_rounds=design.unit_rounds(servers.keep_both),
        )
        start_s = getattr(bench.server, "startup_s", None)
        if isinstance(start_s, (int, float)):  # before the first start of the comparison: the budget is a cap
            warning = floor_warning(run.name, float(start_s), design, servers.keep_both)
            if warning:
                run.say(warning)

        try:
            rounds, comps, outcome = run_rounds(
                servers,
                scenario,
                design=design,
                judge=judge,
                prompts=prompts,
                block_prompts=self.settings.block_prompts,
                on_block=run.on_block,
                on_plan=run.on_plan,
                choose_unit=run.on_costs,
            )
        except (httpx.TransportError, WorkloadError):
            for role, server in (("reference", servers.reference), ("candidate", servers.candidate)):
                if server is not None and server.problem():
                    pytest.fail(server.gone_message(f"during scenario {scenario.name} ({role} arm)"), pytrace=False)
            raise
        except KeyboardInterrupt as e:  # Ctrl-C or SIGTERM: the units played still give their comparison
            self._conclude_interrupted(bench, scenario, judge, Rounds(scenario, run.played, run.unit_rounds), e)
            raise
        finally:
            self.servers.write_starts(pair, servers)
            self.budget.finished(time.monotonic() - run.t_run)
        run.show_set_effect(rounds, self.servers.mode, servers.sets)
        if outcome.note:  # the budget (a cap) could not hold the floor: nothing was judged
            terminal.say(self.config, f"llmbench compare: {pair.config_name} {scenario.name}: {outcome.note}")
        for role in ("reference", "candidate"):
            failed = [b for b in rounds.blocks if b.role == role and b.result.metrics.get("failed")]
            server = servers.reference if role == "reference" else servers.candidate
            if failed and server is not None and not server.settled_alive():
                pytest.fail(server.gone_message(f"during scenario {scenario.name} ({role} arm)"), pytrace=False)
        self._last[bench.nodeid] = _LastRun(scenario.name, rounds, {c.metric: c for c in comps}, outcome, judge)
        result = rounds.merged("candidate")
        bench._keep(result)  # the candidate's numbers are the test's measurements (and its scenario record)
        return result

    def judges(self, bench: Any, metric: str, detect: object = None, ignore: object = None) -> bool:
        """Does this check become a comparison? A serving metric both arms measured in the last run.
        ``detect``/``ignore`` (``bench.check``'s) judge it at those sizes (the rounds were planned at the
        ini's)."""
        last = self._last.get(bench.nodeid)
        if last is None or source_of(metric) is None:
            return False
        own = detect is not None or ignore is not None
        if metric not in last.comparisons or own or metric in last.own_sizes:
            try:  # a metric outside llmbench_compare_metrics, or sizes of its own: on the rounds that ran
                c = last.judge.compare(
                    metric,
                    last.rounds,
                    last.outcome.plan,
                    **cases_mod.check_sizes(metric, self.settings, detect, ignore),
                )
            except ValueError as e:
                pytest.fail(f"bench.check({metric!r}) as a comparison: {e}", pytrace=False)
            if c is None and last.outcome.note:  # the budget held less than the floor: said, not silent
                sizes = sizes_for(metric, **cases_mod.check_sizes(metric, self.settings, detect, ignore))
                hib = source_of(metric).higher_is_better  # type: ignore[union-attr]  # checked above
                c = not_judged(
                    metric, sizes, higher_is_better=hib, why=last.outcome.note, alpha=last.judge.alpha(metric)
                )
            if c is None:
                return False
            last.comparisons[metric] = c
            (last.own_sizes.add if own else last.own_sizes.discard)(metric)
        return True

    def check(self, bench: Any, metric: str) -> Any:
        last = self._last[bench.nodeid]
        c, rounds, prompts = last.comparisons[metric], len(last.rounds.complete), last.rounds.prompts_used()
        return self._conclude(
            bench, c, family_of(metric), scenario=last.scenario, rounds=rounds, prompts=prompts, outcome=last.outcome
        )

    def check_cases(
        self,
        bench: Any,
        metric: str,
        cases: Mapping[str, float],
        reference_cases: Mapping[str, float],
        *,
        noise: Any = None,
        direction: str | None = None,
        family: str | None = None,
        detect: object = None,
        ignore: object = None,
    ) -> Any:
        """A per-case check measured on both arms (``bench.arms()``): the same cases paired — exact McNemar
        for pass/fail (``noise=McNemar``), paired bootstrap for decisions (``PairedBootstrap``), paired t
        otherwise — judged once, at the family's alpha."""
        fam = cases_mod.family_for(noise, family)
        try:
            sizes = sizes_for(metric, **cases_mod.check_sizes(metric, self.settings, detect, ignore))
            c, n = cases_mod.judge_cases(
                metric,
                cases,
                reference_cases,
                noise=noise,
                direction=direction,
                sizes=sizes,
                alpha=self.alphas.get(fam, suite.DEFAULT_ALPHA),
            )
        except ValueError as e:
            where = "" if str(e).startswith("bench.check(") else f"bench.check({metric!r}) as a comparison: "
            pytest.fail(f"{where}{e}", pytrace=False)
        return self._conclude(bench, c, fam, scenario=None, rounds=1, prompts=2 * n)

    def _conclude_interrupted(self, bench: Any, scenario: Any, judge: Judge, rounds: Rounds, e: BaseException) -> None:
        """Each metric judged on the rounds both arms finished before the interrupt, recorded with stop
        "interrupted" (what the report's comparison row shows); never in the interrupt's way."""
        why = f"interrupted ({type(e).__name__}) after {len(rounds.complete)} rounds both arms finished"
        for metric in judge.metrics:
            try:
                c = compare_metric(metric, rounds, alpha=judge.alpha(metric), detect=judge.detect, ignore=judge.ignore)
                if c is not None:
                    self._conclude(
                        bench,
                        c,
                        family_of(metric),
                        scenario=scenario.name,
                        rounds=len(rounds.complete),
                        prompts=rounds.prompts_used(),
                        interrupted=why,
                    )
            except Exception:  # the interrupt goes on; a row it cannot make is left out
                continue

    def _conclude(
        self,
        bench: Any,
        c: Any,
        family: str,
        *,
        scenario: str | None,
        rounds: int,
        prompts: int,
        outcome: Outcome | None = None,
        interrupted: str | None = None,
    ) -> Any:
        """The comparison record, the JUnit property, and the test's failure when it regressed."""
        pair = self.pairs[bench.config_name]
        record = records.comparison(
            self.session_id,
            pair,
            bench,
            c,
            family,
            scenario=scenario,
            rounds=rounds,
            prompts=prompts,
            outcome=outcome,
            interrupted=interrupted,
            max_rounds=self.settings.max_rounds,
            strict=self.settings.strict,
            budget_s=self.last_budget_s,
        )
        bench.emit(record)  # results.jsonl and the JUnit properties (report/junit.py)
        self.records.append(record)
        self.made[family] += 1
        if interrupted:
            return c  # the session is interrupted: the row is kept, the test is not judged by it
        message = terminal.message(record)
        if c.verdict == "regressed" or (c.verdict == "inconclusive" and self.settings.strict):
            why = "" if c.verdict == "regressed" else " (--llmbench-strict)"
            self._failing.setdefault(bench.nodeid, []).append(message + why)
        return c

    def arm_servers(self, bench: Any) -> Iterator[tuple[str, Any]]:
        """The reference arm's server, then the candidate's (``bench.arms()``); in per-block mode one is up
        at a time, and the test's ``llm_server`` is up again afterwards."""
        pair = self.pairs[bench.config_name]
        servers = self.servers.for_pair(pair, bench.server)
        try:
            yield "reference", servers.acquire("reference")
            servers.release("reference")
            yield "candidate", servers.acquire("candidate")
        finally:
            servers.finish()
            self.servers.write_starts(pair, servers)

    def pytest_fixture_post_finalizer(self, fixturedef: Any, request: Any) -> None:
        """The config's ``llm_server`` stopped: its reference stops too (the next config starts clean)."""
        if fixturedef.argname == "llm_server":
            self.servers.close()

    # --- outcome, table, budget ----------------------------------------------------------------------

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
        report = yield
        if report.when in ("call", "teardown"):
            fail_at_end(report, self._failing.pop(item.nodeid, None), "comparison(s) failed", "llmbench comparisons")
        return report

    def _all_records(self, kind: str) -> list[dict[str, Any]]:
        """This session's records of ``kind`` from every process's results file (never an earlier
        session's that shares the folder)."""
        results = self.config.stash.get(RESULTS, None)
        if results is None or not any(results.dir.glob("results*.jsonl")):
            return []
        from pytest_llmbench.records.results import iter_records

        return [r for r in iter_records(results.dir, kind) if r.get("compare_session") == self.session_id]

    @pytest.hookimpl(tryfirst=True)  # before the session verdict (report/session.py) reads the records
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """Servers down, then Holm across comparisons; a suite-level regression fails the run through the
        session verdict (records/verdict.py), which reads this ``comparison_budget`` record."""
        self.servers.close()
        if self.is_worker:
            return
        budget = suite.family_alphas(self.settings.alpha, self.counted, parse_alpha(self._gate_alpha_spec()))
        self.adjusted = suite.adjust(self._all_records("comparison"), budget, self._shared_budget())
        for r in self.adjusted:  # what a report joins onto each comparison record (compare/suite.py: joined)
            sink.emit(self.config, suite.suite_record(r, self.session_id))
        if self.adjusted:
            sink.emit(self.config, records.budget(self.session_id, budget, self.alphas, self.adjusted))

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.is_worker:
            return
        rows = getattr(self, "adjusted", None) or []
        starts = self._all_records("arm_start")
        if not rows and not starts and not self.retried:
            return
        # comparisons made, from every process's records (an xdist controller counts nothing up front)
        made = Counter(str(r.get("family")) for r in rows) if self.counted else Counter()
        budgeted = self.settings.alpha is None and bool(parse_alpha(self._gate_alpha_spec()))
        terminal.summary(
            terminalreporter,
            rows,
            starts,
            self._all_records("arm_start_retry"),
            blocks=self._all_records("comparison_block"),
            made=made,
            counted=self.counted,
            budgeted=budgeted,
        )
