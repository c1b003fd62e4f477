"""GateSession: the thin pytest layer of the gate — ``bench.check``, the hooks, the summary.

The work is elsewhere, one concern per module: the judge (``judge.py``: entry + observation → verdict),
the baseline store (``store.py``: files, history, refresh), the xdist transport (``transport.py``) and
the error budget (``budget.py``). Wiring — the plugin makes exactly these two calls::

    def pytest_addoption(parser):
        from pytest_llmbench.gate.options import add_options
        add_options(parser)

    def pytest_configure(config):
        from pytest_llmbench.gate.session import GateSession
        config.pluginmanager.register(GateSession(config), "llmbench-gate")

Every check is judged: a regression is recorded and the test fails when it ends, with one message
listing every regressed metric (``pytest_runtest_makereport`` turns the passed call into a failure,
so the test — not a teardown — fails, in the terminal, the JUnit XML and under xdist alike).
"""

from __future__ import annotations

import datetime as _dt
import socket
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from pytest_llmbench import stash
from pytest_llmbench.gate import transport
from pytest_llmbench.gate.baselines import BaselineFileError, Key
from pytest_llmbench.gate.budget import FAMILIES, Budget, parse_alpha
from pytest_llmbench.gate.cases import CasesFileError
from pytest_llmbench.gate.judge import beyond_band, default_noise, direction_for, family_of, judge
from pytest_llmbench.gate.machine import differences, fingerprint
from pytest_llmbench.gate.metric import default_hardware_bound
from pytest_llmbench.gate.noise import NOISE_MODELS, NoiseModel, NoiseModelError, noise_from_dict
from pytest_llmbench.gate.options import alpha_spec, baselines_dir, record_starts
from pytest_llmbench.gate.runner import RunnerProfile, check_name, detect
from pytest_llmbench.gate.store import BaselineStore, Measurement, Written
from pytest_llmbench.gate.types import BaselineEntry, Check, Observation, Verdict, fmt_p
from pytest_llmbench.gate.verdict import fail_at_end
from pytest_llmbench.scheduling import server_config_name
from pytest_llmbench.scheduling import test_key as key_of
from pytest_llmbench.sink import emit

NO_SERVER = "_noserver_"  # the config key of checks in tests that use no llm_server


def provenance_fields(config: pytest.Config) -> dict[str, Any]:
    """What a baseline entry adds to its provenance: the host and the shard (shard.py's option) that measured it."""
    shard = config.getoption("llmbench_shard", None)
    return {"host": socket.gethostname(), **({"shard": str(shard)} if shard else {})}


class GateSession:
    """The pytest plugin object behind ``bench.check``; one per pytest process."""

    def __init__(self, config: pytest.Config, store: BaselineStore | None = None) -> None:
        self.config = config
        self.store = store or BaselineStore(baselines_dir(config))
        self.update: str | None = config.getoption("llmbench_update_baselines", None)
        if self.update is None and record_starts(config) > 1:
            self.update = "all"  # --llmbench-record N records
        #: recording (``all``) is the user's decision: verdicts are shown, never fail the run
        self.recording = self.update == "all"
        self.strict: bool = bool(config.getoption("llmbench_strict_baselines", False))
        name = config.getoption("llmbench_runner", None)
        try:
            self._runner_name = check_name(name) if name else None
            alphas = parse_alpha(alpha_spec(config))
        except ValueError as e:
            raise pytest.UsageError(str(e)) from None
        self.budget = Budget(alphas) if alphas else None
        self._counted: list[pytest.Item] | None = None  # the items the budget's gate counts are of
        if self.budget is not None:
            self.budget.sources["gate"] = self._p_values
        self._runner: RunnerProfile | None = None
        self._machine: dict[str, Any] | None = None
        self.is_worker = hasattr(config, "workerinput")
        self.checks: list[tuple[str, Verdict]] = []  # (nodeid, verdict), in run order
        self.measurements: list[Measurement] = []  # in run order; one per server start and entry
        self.not_recorded: list[str] = []  # values --update-baselines left out, and why
        self.written: list[Written] = []
        self.errors: list[str] = []
        self.suite_regressed: list[tuple[str, Verdict]] = []  # REGRESSED by Holm although the test passed
        self._failing: dict[str, list[str]] = {}  # nodeid → messages of its regressed checks
        config.stash[stash.GATE] = self

    @property
    def verdicts(self) -> list[Verdict]:
        return [v for _, v in self.checks]

    @property
    def runner(self) -> RunnerProfile:
        if self._runner is None:
            self._runner = detect(self._runner_name)
        return self._runner

    @property
    def machine(self) -> dict[str, Any]:
        """This machine's fingerprint (gate/machine.py), recorded with every timing entry."""
        if self._machine is None:
            self._machine = fingerprint(self.runner)
        return self._machine

    # --- the check --------------------------------------------------------------------------------------

    @pytest.hookimpl(trylast=True)
    def pytest_llmbench_check(self, bench: Any, check: Check) -> Verdict:
        """The last checker (hookspec ``pytest_llmbench_check``): what no other judged, against its baseline."""
        return self.check(
            bench,
            check.metric,
            check.observed,
            noise=check.noise,
            n=check.n,
            direction=check.direction,
            hardware_bound=check.hardware_bound,
            se=check.se,
            family=check.family,
            reference=check.reference,
            cases=check.cases,
        )

    def check(
        self,
        bench: Any,
        metric: str,
        observed: float | Sequence[float] | None = None,
        *,
        noise: NoiseModel | None = None,
        n: int | None = None,
        direction: str | None = None,
        hardware_bound: bool | None = None,
        se: float | None = None,
        family: str | None = None,
        reference: float | None = None,
        cases: Mapping[str, float] | None = None,
    ) -> Verdict:
        """Gate one metric of ``bench``'s test against its baseline; never stops the test.

        ``observed`` is a number, a sequence of per-sample values (mean, SE and n come from them), or a
        count with ``n=`` (Binomial). ``cases={case id: value}`` adds the per-case values the paired
        models (PairedT, McNemar, PairedBootstrap) pair with the baseline's sidecar; alone, they are
        also the per-sample values. Without ``noise=`` the baseline's recorded model is used, else a
        default from the observation (see ``judge.default_noise``). A regression is recorded and fails
        the test when it ends; a missing baseline is "new" (a failure only with --strict-baselines).
        Arguments that cannot be judged (a NaN ``se=``, an unknown family) fail the test at once.
        ``reference=`` judges against a value measured in this run instead of a stored entry (a paired gap
        against the baseline's own answers is judged against 0); nothing is written for it.
        """
        config_name = bench.config_name or NO_SERVER
        test_key = bench.test_key
        call = f"bench.check({metric!r})"
        try:
            obs = Observation.of(observed, n=n, se=se, cases=cases)
        except (TypeError, ValueError) as e:
            pytest.fail(f"{call}: {e}", pytrace=False)
        if family is not None and family not in FAMILIES:
            pytest.fail(f"{call}: family={family!r} is not one of {', '.join(FAMILIES)}", pytrace=False)
        hw = default_hardware_bound(metric) if hardware_bound is None else bool(hardware_bound)
        runner = self.runner.slug if hw else None
        path = self.store.path_for(config_name)
        where = f"{path} › {f'runners › {runner}' if runner else 'shared'} › {test_key} › {metric}"
        try:
            entry = self.store.file(config_name).get(runner, test_key, metric) if reference is None else None
            if entry is not None:  # the per-case values the paired models pair on (gate/cases.py)
                entry = replace(entry, cases=self.store.cases(config_name, runner, test_key, metric))
            dirn = direction_for(metric, direction, entry, overwrite=self.update == "all")
        except (BaselineFileError, CasesFileError) as e:
            pytest.fail(f"{call}: {e}", pytrace=False)
        except ValueError as e:
            pytest.fail(f"{call}: {e}" + (f" (baseline {where})" if entry else ""), pytrace=False)
        try:
            model = noise or (noise_from_dict(entry.noise) if entry else None) or default_noise(obs)
        except ValueError as e:
            pytest.fail(f"{call}: {where}: noise: {e}", pytrace=False)
        missing = (
            f"no baseline ({f'runner {runner}' if runner else 'shared'}) in {path}; record one with --update-baselines"
        )
        busy = bench.host_busy() if hw and hasattr(bench, "host_busy") else None
        why = busy or (self._not_comparable(entry, config_name) if hw and reference is None else None)
        if reference is not None:
            entry = BaselineEntry(
                value=float(reference),
                direction=dirn,
                noise=model.to_dict(),
                provenance={"source": "reference measured in this run"},
            )
        fam = family_of(test_key, hw, family)
        threshold = self.budget.threshold(fam) if self.budget else None
        if why:
            v = Verdict(
                metric="",
                observed=obs.value,
                baseline=entry.value if entry else None,
                tolerance=None,
                rule=why,
                status="not comparable",
                direction=dirn,
                noise=model.describe(),
            )
        else:
            try:
                v = judge(entry, obs, model, dirn, threshold=threshold, missing=missing)
            except NoiseModelError as e:
                pytest.fail(f"{call[:-1]}, noise={model.describe()}): {e}", pytrace=False)
        v = replace(
            v,
            metric=metric,
            config=config_name,
            test_key=test_key,
            runner=runner,
            family=fam,
            recorded=self.recording and reference is None and not busy,  # a busy host's value is not written
        )
        self._record(bench, v)
        if self.update and reference is None:
            if busy:
                self.not_recorded.append(f"{config_name} {test_key} {metric}: {busy}")
            else:
                self._measure(bench, v, obs, model, hw, config_name)
        if v.status == "REGRESSED" and not v.recorded:
            self._failing.setdefault(bench.item.nodeid, []).append(v.message())
        if v.status == "new" and self.strict and not self.update:
            self._failing.setdefault(bench.item.nodeid, []).append(
                f"{v.message()} — --strict-baselines makes a missing baseline a failure"
            )
        return v

    def _not_comparable(self, entry: BaselineEntry | None, config_name: str) -> str | None:
        """Why a stored timing entry cannot be judged here: recorded on another machine, or with no machine
        record (gate/machine.py). Checks of tests without a server skip this unless the entry has one."""
        if entry is None:
            return None
        recorded = entry.provenance.get("machine")
        if config_name == NO_SERVER and not recorded:
            return None
        return differences(recorded, self.machine)

    def _record(self, bench: Any, v: Verdict) -> None:
        self.checks.append((bench.item.nodeid, v))
        # As it happens (a crash keeps it; JUnit gets it from this line too); q comes at session end.
        bench.emit({"record": "check", "nodeid": bench.item.nodeid, **v.as_dict(), "message": v.message()})
        if self.is_worker:
            transport.send_check(self.config, bench.item.nodeid, v)

    def _measure(self, bench: Any, v: Verdict, obs: Observation, model: NoiseModel, hw: bool, config_name: str) -> None:
        provenance = self._provenance(bench, hw)
        if hw and config_name != NO_SERVER:
            provenance["machine"] = self.machine
        m = Measurement(
            config=v.config,
            runner=v.runner,
            test_key=v.test_key,
            metric=v.metric,
            value=obs.value,
            direction=v.direction,
            noise=model.to_dict(),
            n=obs.n,
            se=obs.se,
            provenance=provenance,
            status=v.status,
            cases=dict(obs.cases) if obs.cases else None,  # the sidecar's content
            nodeid=bench.item.nodeid,
        )
        self.measurements.append(m)
        if self.is_worker:
            transport.send_measurement(self.config, m)

    def _provenance(self, bench: Any, hw: bool) -> dict[str, Any]:
        """Where the number came from: engine build or image, model, date (no time: it diffs), runner."""
        p: dict[str, Any] = {"date": _dt.date.today().isoformat(), "runner": self.runner.slug}
        p.update(provenance_fields(self.config))  # host and shard that measured it
        server = getattr(bench, "server", None)
        cfg = getattr(server, "config", None)
        if cfg is not None:
            p["engine"] = getattr(cfg, "engine", None)
            model: Any = getattr(cfg, "model", None)
            p["model"] = model.describe() if hasattr(model, "describe") else (str(model) if model else None)
            p["image"] = getattr(cfg, "image", None)
            info = getattr(server, "info", None) or {}
            ident = getattr(server, "build", None) or {}  # tells two builds apart (launchers/identity.py)
            build = ident.get("build") or info.get("build_info") or info.get("version")
            p["engine_build"] = str(build) if build else None
        return {k: v for k, v in p.items() if v is not None}

    # --- hooks ------------------------------------------------------------------------------------------

    def pytest_report_header(self, config: pytest.Config) -> list[str]:
        update = f", update baselines: {self.update}" if self.update else ""
        budget = (
            "off (each gate at its own level)"
            if self.budget is None
            else " ".join(f"{f} α={a:g}" for f, a in self.budget.alphas.items()) + " (Holm per family)"
        )
        return [
            f"llmbench gate: baselines {self.store.dir}, runner {self.runner.slug}{update}",
            f"llmbench error budget: {budget}",
        ]

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        """Every baseline file is read before any server starts (on the xdist controller, before workers)."""
        if self.is_worker:
            return
        errors = self.store.validate()
        if errors:
            raise pytest.UsageError("\n".join(str(e) for e in errors))

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """Count, per family, the gates with a p-value that the selected tests can check (the budget's m)."""
        if self.budget is None:
            return
        self.count_gates(session.items)
        if self.is_worker:
            transport.send_counts(self.config, self.budget.counts)

    def count_gates(self, items: list[pytest.Item]) -> None:
        """The budget's gate counts for ``items`` (a comparison session asks first, to share the budget; the
        gate's own count of the same items then reads no baseline file again)."""
        if self.budget is None or items is self._counted:
            return
        self._counted = items
        pairs = set()
        for item in items:
            if "bench" not in getattr(item, "fixturenames", ()):
                continue
            config_name = server_config_name(item)
            pairs.add((config_name or NO_SERVER, key_of(item, config_name)))
        counts = dict.fromkeys(FAMILIES, 0)
        for config_name, test_key in sorted(pairs):
            try:
                bf = self.store.file(config_name)
            except BaselineFileError:
                continue  # reported by the check that reads it
            for runner, tkey, metric in bf.keys(self.runner.slug):
                entry = bf.get(runner, tkey, metric)
                if tkey != test_key or entry is None:
                    continue
                cls = NOISE_MODELS.get(str(entry.noise.get("name")))
                if cls is None or cls.gives_p:
                    counts[family_of(test_key, runner is not None)] += 1
        self.budget.counts = counts

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
        """The test's end: a call that passed but has regressed checks fails, listing every one of them."""
        report = yield
        if report.when in ("call", "teardown"):
            fail_at_end(report, self._failing.pop(item.nodeid, None), "regressed check(s)", "llmbench regressed checks")
        return report

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        """Controller side of xdist: merge what a worker judged and measured (never written by the worker)."""
        checks, measurements, counts = transport.receive(node)
        self.checks.extend(checks)
        if self.budget is not None:
            for fam, c in counts.items():
                self.budget.counts[fam] = max(self.budget.counts.get(fam, 0), c)
        self.measurements.extend(measurements)

    @pytest.hookimpl(tryfirst=True)  # before the session verdict (report/session.py) reads the records
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """Holm, the verdict records, the baseline files; the exit status follows from the records (a
        suite-level REGRESSED verdict, a baseline file not written) in records/verdict.py."""
        if self.is_worker:
            return
        self.adjust()
        self._write_verdicts()
        if self.update and self.measurements:
            status = {(nodeid, v.metric): v.status for nodeid, v in self.checks}
            ms = [replace(m, status=status.get((m.nodeid, m.metric), m.status)) for m in self.measurements]
            self.written, self.errors = self.store.write(ms, self.update)
        for err in self.errors:
            emit(self.config, {"record": "session_error", "source": "baselines", "message": err})

    def adjust(self) -> None:
        """Holm's q per family; a band exceeded with q ≤ alpha is REGRESSED at suite level."""
        if self.budget is None:
            return
        for fam in FAMILIES:
            judged = [
                (i, v.p_value) for i, (_, v) in enumerate(self.checks) if v.family == fam and v.p_value is not None
            ]
            alpha = self.budget.alphas[fam]
            # one pass with the session's comparisons of the family, if any (gate/budget.py)
            for (i, _), q in zip(judged, self.budget.joint_q(fam, "gate", [p for _, p in judged]), strict=True):
                nodeid, v = self.checks[i]
                v = replace(v, q_value=q)
                if q <= alpha and beyond_band(v) and v.status not in ("REGRESSED", "learning", "not comparable"):
                    v = replace(
                        v,
                        status="REGRESSED",
                        rule=f"{v.rule}; Holm q={fmt_p(q)} ≤ α={alpha:g}: REGRESSED at suite level",
                    )
                    self.suite_regressed.append((nodeid, v))
                self.checks[i] = (nodeid, v)

    def _p_values(self) -> dict[str, list[float]]:
        """This session's raw p-values per family (what a comparison's Holm pass joins)."""
        out: dict[str, list[float]] = {}
        for _, v in self.checks:
            if v.p_value is not None:
                out.setdefault(v.family, []).append(v.p_value)
        return out

    def _write_verdicts(self) -> None:
        if not self.checks:
            return
        for nodeid, v in self.checks:
            emit(self.config, {"record": "verdict", "nodeid": nodeid, **v.as_dict()})
        if self.budget is not None:
            emit(
                self.config,
                {
                    "record": "gate_budget",
                    "method": "holm",
                    "alphas": dict(self.budget.alphas),
                    "counted": dict(self.budget.counts),
                    "compared": dict(self.budget.compared),  # the session's comparisons share the budget
                    "judged": {
                        f: sum(v.family == f and v.p_value is not None for v in self.verdicts) for f in FAMILIES
                    },
                },
            )

    def untouched(self) -> dict[Path, list[Key]]:
        """Entries this runner could have checked but this run did not (kept, never deleted)."""
        checked = {(v.config, v.runner, v.test_key, v.metric) for v in self.verdicts}
        out: dict[Path, list[Key]] = {}
        for bf in self.store.files():
            keys = [k for k in bf.keys(self.runner.slug) if (bf.config, *k) not in checked]
            if keys:
                out[bf.path] = keys
        return out

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.is_worker or not (self.checks or self.errors or self.written):
            return
        from pytest_llmbench.gate import terminal

        terminal.summary(terminalreporter, self)
