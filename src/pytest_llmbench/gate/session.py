"""GateSession: ``bench.check`` → baseline lookup → noise model → verdict; and ``--update-baselines``.

Wiring — the plugin makes exactly these two calls, nothing else (GateSession stores itself at
``config.stash[stash.GATE]``)::

    def pytest_addoption(parser):
        from pytest_llmbench.gate.options import add_options
        add_options(parser)

    def pytest_configure(config):
        from pytest_llmbench.gate.session import GateSession
        config.pluginmanager.register(GateSession(config), "llmbench-gate")

Under pytest-xdist the workers never write baselines: each check's verdict and measurement go into
``config.workeroutput``; the controller merges them in ``pytest_testnodedown`` and writes each baseline
file once, atomically, in ``pytest_sessionfinish``.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any

import pytest

from pytest_llmbench import stash
from pytest_llmbench.gate import table
from pytest_llmbench.gate.baselines import BaselineFileError, BaselineStore, Key, dumps, load, write_atomic
from pytest_llmbench.gate.entry import HISTORY_LEN, BaselineEntry
from pytest_llmbench.gate.metric import Observation, default_hardware_bound, resolve_direction
from pytest_llmbench.gate.noise import Binomial, NoiseModel, NoiseModelError, Relative, StdErr, noise_from_dict
from pytest_llmbench.gate.options import baselines_dir
from pytest_llmbench.gate.runner import RunnerProfile, check_name, detect
from pytest_llmbench.gate.verdict import Verdict
from pytest_llmbench.shard import provenance_fields

NO_SERVER = "_noserver_"  # the config key of checks in tests that use no llm_server
DEFAULT_RELATIVE = 0.05
_WIRE = "llmbench_gate"  # key in xdist's workeroutput
_UNTOUCHED_SHOWN = 20


@dataclass(frozen=True)
class Measurement:
    """What ``--update-baselines`` writes for one check; plain data so it crosses from xdist workers."""

    config: str
    runner: str | None
    test_key: str
    metric: str
    value: float
    direction: str
    noise: dict[str, Any]
    n: int | None
    se: float | None
    provenance: dict[str, Any]

    @property
    def key(self) -> tuple[str, str | None, str, str]:
        return (self.config, self.runner, self.test_key, self.metric)


def default_noise(obs: Observation) -> NoiseModel:
    """Per-sample values → StdErr(k=2); a whole count with n → Binomial; a single number → Relative(5%)."""
    if obs.samples > 1 or obs.se is not None:
        return StdErr()
    if obs.n is not None and float(obs.value).is_integer():
        return Binomial()
    return Relative(DEFAULT_RELATIVE)


class GateSession:
    """The pytest plugin object behind ``bench.check``; one per pytest process."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.store = BaselineStore(baselines_dir(config))
        self.update: str | None = config.getoption("llmbench_update_baselines", None)
        self.strict: bool = bool(config.getoption("llmbench_strict_baselines", False))
        name = config.getoption("llmbench_runner", None)
        try:
            self._runner_name = check_name(name) if name else None
        except ValueError as e:
            raise pytest.UsageError(str(e)) from None
        self._runner: RunnerProfile | None = None
        self.is_worker = hasattr(config, "workerinput")
        self.verdicts: list[Verdict] = []
        self.measurements: dict[tuple[str, str | None, str, str], Measurement] = {}
        self.written: list[tuple[Path, int]] = []
        self.errors: list[str] = []
        config.stash[stash.GATE] = self

    @property
    def runner(self) -> RunnerProfile:
        if self._runner is None:
            self._runner = detect(self._runner_name)
        return self._runner

    # --- the check --------------------------------------------------------------------------------------

    def check(self, bench: Any, metric: str, observed: float | Sequence[float], *,
              noise: NoiseModel | None = None, n: int | None = None, direction: str | None = None,
              hardware_bound: bool | None = None, se: float | None = None) -> Verdict:
        """Gate one metric of ``bench``'s test against its baseline.

        ``observed`` is a number, a sequence of per-sample values (mean, SE and n come from them), or a
        count with ``n=`` (Binomial). Without ``noise=`` the baseline's recorded model is used, else a
        default from the observation (see ``default_noise``). A regression fails the test after the
        verdict is recorded; a missing baseline is "new" (a failure only with --strict-baselines).
        """
        config_name = bench.config_name or NO_SERVER
        test_key = bench.test_key
        try:
            obs = Observation.of(observed, n=n, se=se)
            dirn = resolve_direction(metric, direction)
        except (TypeError, ValueError) as e:
            pytest.fail(f"bench.check({metric!r}): {e}", pytrace=False)
        hw = default_hardware_bound(metric) if hardware_bound is None else bool(hardware_bound)
        runner = self.runner.slug if hw else None
        try:
            entry = self.store.file(config_name).get(runner, test_key, metric)
        except BaselineFileError as e:
            pytest.fail(f"bench.check({metric!r}): {e}", pytrace=False)
        try:
            model = noise or (noise_from_dict(entry.noise) if entry else None) or default_noise(obs)
            if entry is None:
                where = f"runner {runner}" if runner else "shared"
                v = Verdict(metric=metric, observed=obs.value, baseline=None, tolerance=None,
                            rule=f"no baseline ({where}) in {self.store.path_for(config_name)}; "
                                 f"record one with --update-baselines",
                            status="new", direction=dirn, noise=model.describe())
            else:
                v = model.verdict(entry, obs, dirn)
        except NoiseModelError as e:
            pytest.fail(f"bench.check({metric!r}, noise={(noise or model).describe()}): {e}", pytrace=False)
        v = replace(v, metric=metric, config=config_name, test_key=test_key, runner=runner)
        self._record(bench, v)
        if self.update and not (self.update == "new" and entry is not None):
            self._measure(bench, v, obs, model, hw)
        if v.status == "REGRESSED" and self.update != "all":
            pytest.fail(v.message(), pytrace=False)
        if v.status == "new" and self.strict and not self.update:
            pytest.fail(f"{v.message()} — --strict-baselines makes a missing baseline a failure",
                        pytrace=False)
        return v

    def _record(self, bench: Any, v: Verdict) -> None:
        self.verdicts.append(v)
        bench.item.user_properties.append((f"llmbench.verdict.{v.metric}", v.status))
        bench.item.user_properties.append((f"llmbench.verdict.{v.metric}.message", v.message()))
        if stash.RESULTS in self.config.stash:
            self.config.stash[stash.RESULTS].write({"record": "verdict", "nodeid": bench.item.nodeid,
                                                    **v.as_dict()})
        if self.is_worker:
            self._wire()["verdicts"].append(v.as_dict())

    def _measure(self, bench: Any, v: Verdict, obs: Observation, model: NoiseModel, hw: bool) -> None:
        m = Measurement(config=v.config, runner=v.runner, test_key=v.test_key, metric=v.metric,
                        value=obs.value, direction=v.direction, noise=model.to_dict(), n=obs.n, se=obs.se,
                        provenance=self._provenance(bench, hw))
        self.measurements[m.key] = m
        if self.is_worker:
            self._wire()["measurements"].append(asdict(m))

    def _provenance(self, bench: Any, hw: bool) -> dict[str, Any]:
        """Where the number came from: engine build or image, model, date (no time: it diffs), runner."""
        p: dict[str, Any] = {"date": _dt.date.today().isoformat(), "runner": self.runner.slug}
        p.update(provenance_fields(self.config))  # host and shard that measured it
        server = getattr(bench, "server", None)
        cfg = getattr(server, "config", None)
        if cfg is not None:
            p["engine"] = getattr(cfg, "engine", None)
            model = getattr(cfg, "model", None)
            p["model"] = model.describe() if hasattr(model, "describe") else (str(model) if model else None)
            p["image"] = getattr(cfg, "image", None)
            info = getattr(server, "info", None) or {}
            build = info.get("build_info") or info.get("version")
            p["engine_build"] = str(build) if build else None
        return {k: v for k, v in p.items() if v is not None}

    def _wire(self) -> dict[str, list[dict[str, Any]]]:
        out = self.config.workeroutput  # type: ignore[attr-defined]
        return out.setdefault(_WIRE, {"verdicts": [], "measurements": []})

    # --- hooks ------------------------------------------------------------------------------------------

    def pytest_report_header(self, config: pytest.Config) -> str:
        update = f", update baselines: {self.update}" if self.update else ""
        return f"llmbench gate: baselines {self.store.dir}, runner {self.runner.slug}{update}"

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        """Controller side of xdist: merge what a worker measured (never written by the worker)."""
        data = getattr(node, "workeroutput", {}).get(_WIRE)
        if not data:
            return
        names = {f.name for f in fields(Verdict)}
        self.verdicts.extend(Verdict(**{k: d[k] for k in names}) for d in data["verdicts"])
        for d in data["measurements"]:
            m = Measurement(**d)
            self.measurements[m.key] = m

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.is_worker or not self.update or not self.measurements:
            return
        self.write_baselines()
        if self.errors and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def write_baselines(self) -> None:
        """Merge this session's measurements into each config's file, read fresh from disk; atomic."""
        by_config: dict[str, list[Measurement]] = {}
        for m in self.measurements.values():
            by_config.setdefault(m.config, []).append(m)
        for config_name in sorted(by_config):
            path = self.store.path_for(config_name)
            try:
                bf = load(path, config_name)
            except BaselineFileError as e:
                self.errors.append(str(e))
                continue
            changed = 0
            for m in by_config[config_name]:
                old = bf.get(m.runner, m.test_key, m.metric)
                if self.update == "new" and old is not None:
                    continue
                history = ((old.accepted if old else ()) + (m.value,))[-HISTORY_LEN:]
                bf.put(m.runner, m.test_key, m.metric, BaselineEntry(
                    value=m.value, direction=m.direction, noise=m.noise, n=m.n, se=m.se,  # type: ignore[arg-type]
                    spread=noise_from_dict(m.noise).stored_spread(history), history=history,
                    provenance=m.provenance,
                ))
                changed += 1
            if changed:
                write_atomic(path, dumps(bf))
                self.written.append((path, changed))

    def untouched(self) -> dict[Path, list[Key]]:
        """Entries this runner could have checked but this run did not (kept, never deleted)."""
        checked = {(v.config, v.runner, v.test_key, v.metric) for v in self.verdicts}
        out: dict[Path, list[Key]] = {}
        if not self.store.dir.is_dir():
            return out
        for path in sorted(self.store.dir.glob("*.yaml")):
            try:
                bf = load(path, path.stem)
            except BaselineFileError:
                continue  # reported when a check reads it
            config_name = bf.config
            keys = [k for k in bf.keys(self.runner.slug) if (config_name, *k) not in checked]
            if keys:
                out[path] = keys
        return out

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.is_worker or not (self.verdicts or self.errors or self.written):
            return
        tr = terminalreporter
        tr.write_sep("=", "llmbench verdicts")
        for line in table.render(self.verdicts):
            tr.write_line(line)
        tr.write_line(table.counts(self.verdicts))
        for path, count in self.written:
            tr.write_line(f"baselines written: {_rel(path, self.config)} ({count} entries)")
        for err in self.errors:
            tr.write_line(f"ERROR {err}", red=True)
        untouched = self.untouched()
        total = sum(len(k) for k in untouched.values())
        if total:
            tr.write_line(f"{total} baseline entries were not checked in this run (kept):")
            shown = 0
            for path, keys in untouched.items():
                for runner, test, metric in keys:
                    if shown == _UNTOUCHED_SHOWN:
                        break
                    where = f"runners/{runner}" if runner else "shared"
                    tr.write_line(f"  {_rel(path, self.config)}: {where} {test} {metric}")
                    shown += 1
            if total > shown:
                tr.write_line(f"  … and {total - shown} more")


def _rel(path: Path, config: pytest.Config) -> str:
    try:
        return str(path.relative_to(config.invocation_params.dir))
    except ValueError:
        return str(path)
