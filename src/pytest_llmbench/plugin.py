"""pytest hooks only: options, marks from configs, parameterization and ordering, cleanup, summary.

Business logic lives in the modules these hooks wire together (config, server, workload, gate,
report); this module decides *when* things happen in a pytest session. The package's own engines,
launchers, noise models and sinks are plugins too (``pytest_plugins`` below): they register through
the hooks in hookspec.py exactly as a third-party conftest would.
"""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path

import pytest
import yaml

from pytest_llmbench import interrupts
from pytest_llmbench.config import CONFIGS, ServerConfig, load_configs
from pytest_llmbench.datasets.fixture import datasets  # noqa: F401  (registered by import)
from pytest_llmbench.errors import ConfigError, RegistryError
from pytest_llmbench.fixtures import _llmbench_server_usable, bench, llm_server  # noqa: F401  (registered by import)
from pytest_llmbench.launchers.base import install_cleanup, stop_all
from pytest_llmbench.records.results import RESULTS, ResultsWriter, new_session_id
from pytest_llmbench.registry import REGISTRY, Registry
from pytest_llmbench.scheduling import server_config_name, start_id, start_param

#: The built-ins, each a plugin module implementing the hooks of hookspec.py.
pytest_plugins = [
    "pytest_llmbench.engines",
    "pytest_llmbench.launchers",
    "pytest_llmbench.preflight",  # the Docker engine checked before any server starts
    "pytest_llmbench.gate.noise",
    "pytest_llmbench.report.junit",
]

CONFIG_ERROR = pytest.StashKey[ConfigError]()
SERVER_TESTS = pytest.StashKey[int]()  # test functions that use llm_server (for the no-config hint)
RESULTS_DIR_KEY = "llmbench_results_dir"
SESSION_KEY = "llmbench_session"  # (id, controller pid): one session id for the controller and its workers


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from pytest_llmbench import hookspec

    pluginmanager.add_hookspecs(hookspec)


def _slo_option(text: str) -> str:
    """Read --llmbench-slo when the command line is parsed: a bad spec is a usage error naming it."""
    import argparse

    from pytest_llmbench.slo_spec import SloError, parse_slo

    try:
        parse_slo(text, "--llmbench-slo")
    except SloError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return text


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("llmbench", "LLM-serving benchmarks (pytest-llmbench)")
    group.addoption(
        "--llmbench-configs",
        action="append",
        default=None,
        metavar="PATH",
        help="server config file or folder (repeatable); default: ini llmbench_configs",
    )
    group.addoption(
        "--results-dir",
        default=None,
        metavar="DIR",
        help="where results.jsonl and per-config server logs go (default results/<timestamp>)",
    )
    group.addoption(
        "--llmbench-data",
        default=None,
        metavar="DIR",
        dest="llmbench_data",
        help="folder of benchmark data that cannot ship in a wheel (gsm8k/, math500/, mbpp/, "
        "speed-bench/, typed-decisions/ …); default: ini llmbench_data, $LLMBENCH_DATA_DIR",
    )
    parser.addini("llmbench_data", default="", help="default --llmbench-data")
    group.addoption(
        "--llmbench-slo",
        default=None,
        metavar="NAME:MS,…",
        dest="llmbench_slo",
        type=_slo_option,
        help="SLOs every scenario is judged by, over the configs' and tests' (ttft, tpot, itl, e2el in ms, "
        "vLLM --goodput semantics): adds slo_attainment, request_goodput, output_token_goodput (docs/SLO.md)",
    )
    parser.addini(
        "llmbench_configs",
        type="paths",
        default=[],
        help="server config files or folders (default: benches/configs if it exists)",
    )
    parser.addini("llmbench_results_dir", default="", help="default --results-dir")
    _add_component_options(parser)


def _add_component_options(parser: pytest.Parser) -> None:
    """Options owned by the gate, reference-vs-candidate comparison, the report and sharding (each module
    declares its own; the launchers' come with their plugin module)."""
    from pytest_llmbench.compare.options import add_options as compare_options
    from pytest_llmbench.gate.options import add_options as gate_options
    from pytest_llmbench.report.session import add_options as report_options
    from pytest_llmbench.shard import add_options as shard_options

    gate_options(parser)
    compare_options(parser)
    report_options(parser)
    shard_options(parser)


def _config_paths(config: pytest.Config) -> list[Path]:
    cli = config.getoption("llmbench_configs")
    if cli:
        return [Path(p) if os.path.isabs(p) else Path(config.invocation_params.dir) / p for p in cli]
    ini = config.getini("llmbench_configs")
    if ini:
        return [Path(p) for p in ini]
    default = Path(config.rootpath) / "benches" / "configs"
    return [default] if default.is_dir() else []


def _marks_in_yaml(paths: list[Path]) -> set[str]:
    """Mark names written in config files, read leniently so a broken file still registers its marks."""
    marks: set[str] = set()

    def walk(node) -> None:
        if isinstance(node, dict):
            for k, v in node.items():
                if k == "marks" and isinstance(v, list):
                    marks.update(m for m in v if isinstance(m, str) and m.isidentifier())
                else:
                    walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    for p in paths:
        for f in [p] if p.is_file() else sorted(p.rglob("*.y*ml")) if p.is_dir() else []:
            try:
                walk(yaml.safe_load(f.read_text(encoding="utf-8")))
            except (OSError, UnicodeDecodeError, yaml.YAMLError):  # load_configs names the file
                pass
    return marks


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "llm_configs(*marks, names=None): run this test only on server configs "
        "that carry all the given marks (and, with names=, only those configs)",
    )
    config.addinivalue_line("markers", "integration: starts a real server")
    paths = _config_paths(config)
    for mark in sorted(_marks_in_yaml(paths)):
        config.addinivalue_line("markers", f"{mark}: server-config mark (from the llmbench config files)")
    registry = _registries(config)
    try:
        configs = load_configs(paths)
        registry.check_all(configs)
    except ConfigError as e:
        config.stash[CONFIG_ERROR] = e
        configs = []
    config.stash[CONFIGS] = {c.name: c for c in configs}
    _register_secrets(configs, registry)
    workerinput = getattr(config, "workerinput", None) or {}
    session_id, owner = workerinput.get(SESSION_KEY) or (new_session_id(), os.getpid())
    results = ResultsWriter(_results_dir(config), os.environ.get("PYTEST_XDIST_WORKER"), session_id, owner)
    problem = results.unwritable()
    if problem:
        raise pytest.UsageError(f"--results-dir / ini llmbench_results_dir: cannot write results to {problem}")
    config.stash[RESULTS] = results
    config.pluginmanager.register(results, "llmbench-results")  # the results.jsonl sink
    from pytest_llmbench.report.session import HeadlineSession, ReportSession

    # the session verdict first: its tryfirst sessionfinish then runs after the gate's and compare's
    config.pluginmanager.register(HeadlineSession(config), "llmbench-headline")
    from pytest_llmbench.gate.session import GateSession

    config.pluginmanager.register(GateSession(config), "llmbench-gate")  # stores itself at stash.GATE
    config.pluginmanager.register(ReportSession(config), "llmbench-report")  # --llmbench-report, pytest-html
    from pytest_llmbench.shard import ShardSelector

    config.pluginmanager.register(ShardSelector(config), "llmbench-shard")  # --llmbench-shard; results origin
    from pytest_llmbench.compare.session import maybe_register

    maybe_register(config, paths)  # registers "llmbench-compare" when arms or a compare: block are given
    install_cleanup()
    if not hasattr(config, "workerinput"):
        interrupts.install()  # SIGTERM as Ctrl-C; a second signal cannot cut the session's end short


def _registries(config: pytest.Config) -> Registry:
    """Engines, launchers and noise models from every ``pytest_llmbench_*`` implementation (built-ins too)."""
    from pytest_llmbench.gate.noise import register_from_hooks

    try:
        registry = Registry.from_hooks(config)
        register_from_hooks(config)
    except (RegistryError, TypeError) as e:
        raise pytest.UsageError(f"llmbench hooks: {e}") from None
    config.stash[REGISTRY] = registry
    return registry


def _register_secrets(configs: list[ServerConfig], registry: Registry) -> None:
    """Every secret a config carries (env values, secret flags' values in any spelling, its API key) and
    the host's secret-named variables are scrubbed from every output, before any is written."""
    from pytest_llmbench import redact
    from pytest_llmbench.server import register_secrets

    redact.register_environ()
    for cfg in configs:
        register_secrets(cfg, registry.engine(cfg.engine))


def _results_dir(config: pytest.Config) -> Path:
    workerinput = getattr(config, "workerinput", None)
    if workerinput and RESULTS_DIR_KEY in workerinput:
        return Path(workerinput[RESULTS_DIR_KEY])
    chosen = config.getoption("results_dir") or config.getini("llmbench_results_dir")
    if chosen:
        p = Path(chosen)
        return p if p.is_absolute() else Path(config.invocation_params.dir) / p
    return Path(config.rootpath) / "results" / datetime.now().strftime("%Y%m%d-%H%M%S")


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node) -> None:
    """xdist controller: every worker writes into the controller's results folder."""
    results = node.config.stash[RESULTS]
    node.workerinput[RESULTS_DIR_KEY] = str(results.dir)
    node.workerinput[SESSION_KEY] = (results.session_id, results.owner_pid)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parameterize ``llm_server`` over *every* config, in one fixed order, for every test.

    pytest groups tests that share a session-scoped parameter by its index, so the index of a config
    must be the same in every test: tests narrowed by ``llm_configs`` are deselected per config in
    :func:`pytest_collection_modifyitems`, never parameterized over a shorter list.
    """
    if "llm_server" not in metafunc.fixturenames:
        return
    stash_ = metafunc.config.stash
    stash_[SERVER_TESTS] = stash_.get(SERVER_TESTS, 0) + 1
    error = stash_.get(CONFIG_ERROR, None)
    if error is not None:  # reported once: a usage error (pytest_collection_modifyitems), not once per module
        if hasattr(metafunc.config, "workerinput"):  # a worker's usage error crashes it (INTERNALERROR)
            raise pytest.Collector.CollectError(f"llmbench config error: {error}")
        return
    from pytest_llmbench.gate.options import record_starts

    starts = record_starts(metafunc.config)
    params = [
        pytest.param(
            start_param(cfg.name, k, starts),
            id=start_id(cfg.name, k, starts),
            marks=[getattr(pytest.mark, m) for m in cfg.marks],
        )
        for cfg in metafunc.config.stash[CONFIGS].values()
        for k in range(1, starts + 1)
    ]
    metafunc.parametrize("llm_server", params, indirect=True, scope="session")


_server_param = server_config_name


def _wanted(item: pytest.Item, cfg: ServerConfig) -> bool:
    marker = item.get_closest_marker("llm_configs")
    if marker is None:
        return True
    names = marker.kwargs.get("names")
    return set(marker.args) <= set(cfg.marks) and (names is None or cfg.name in names)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    """Drop (config, test) pairs a test's ``llm_configs`` marker excludes."""
    error = config.stash.get(CONFIG_ERROR, None)
    if error is not None and config.stash.get(SERVER_TESTS, 0) and not hasattr(config, "workerinput"):
        raise pytest.UsageError(f"llmbench config error: {error}")
    from pytest_llmbench import scenario_select

    configs = config.stash[CONFIGS]
    keep: list[pytest.Item] = []
    drop: list[pytest.Item] = []
    left_out: list[tuple[str, str]] = []  # by a config's scenarios key: said at --collect-only
    for item in items:
        name = _server_param(item)
        if name is not None and _wanted(item, configs[name]) and configs[name].scenarios:
            names = scenario_select.test_names(item, name)
            if scenario_select.left_out_by(configs[name].scenarios, names):
                left_out.append((item.nodeid, scenario_select.reason(name, configs[name].scenarios, names)))
                drop.append(item)
                continue
        (keep if name is None or _wanted(item, configs[name]) else drop).append(item)
    config.stash[LEFT_OUT] = left_out
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


LEFT_OUT = pytest.StashKey[list[tuple[str, str]]]()


def pytest_report_collectionfinish(config: pytest.Config) -> list[str]:
    """After collection (and in --collect-only): the tests a config's ``scenarios`` key left out, and why."""
    from pytest_llmbench.scenario_select import report_lines

    return report_lines(config.stash.get(LEFT_OUT, []))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """xdist controller: all tests of a config on one worker (see scheduling.py)."""
    from pytest_llmbench.scheduling import make_scheduler, wants_own_scheduler

    configs = config.stash[CONFIGS]
    if not wants_own_scheduler(config.getvalue("dist"), configs):
        return None
    return make_scheduler(config, log, configs)


def pytest_collection_finish(session: pytest.Session) -> None:
    """After -m/-k deselection: check the GPU requests of the configs that will run, before any start.
    Under xdist the controller's scheduler checks instead, where the error reaches the user."""
    config = session.config
    if hasattr(config, "workerinput"):
        return
    names = {n for item in session.items if (n := _server_param(item)) is not None}
    if not names:
        return
    from pytest_llmbench.launchers.gpus import check_gpu_requests

    problems = check_gpu_requests(config, [config.stash[CONFIGS][n] for n in sorted(names)])
    if problems:
        raise pytest.UsageError("; ".join(problems))


@pytest.hookimpl(tryfirst=True)
def pytest_keyboard_interrupt(excinfo) -> None:
    interrupts.ending()
    stop_all()


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int):
    interrupts.ending()  # from here a Ctrl-C or SIGTERM no longer cuts the verdict and summary short
    try:
        return (yield)
    finally:
        stop_all()


def pytest_unconfigure(config: pytest.Config) -> None:
    stop_all()
    results = config.stash.get(RESULTS, None)
    if results is not None and not hasattr(config, "workerinput"):
        results.close()
        interrupts.uninstall()


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    from pytest_llmbench.report.table import scenario_table

    if hasattr(config, "workerinput"):
        return
    _no_configs_hint(terminalreporter, config)
    results = config.stash.get(RESULTS, None)
    if results is None or not any(results.dir.glob("results*.jsonl")):
        return
    table = scenario_table(results.dir, session=results.session_id)  # this session's, in a shared folder too
    if table:
        terminalreporter.write_sep("=", "llmbench scenarios")
        for line in table.splitlines():
            terminalreporter.write_line(line)
        terminalreporter.write_line(f"results: {results.dir}")


def _no_configs_hint(terminalreporter, config: pytest.Config) -> None:
    """Say why no server test ran when no config was selected (else only "no tests collected")."""
    from pytest_llmbench.config import why_no_configs

    if config.stash.get(CONFIGS, None) != {} or config.stash.get(CONFIG_ERROR, None) is not None:
        return
    paths, tests = _config_paths(config), config.stash.get(SERVER_TESTS, 0)
    if not paths and not tests:
        return  # no config named and no test that needs one: a plain test session
    which = f"the {tests} test function(s) that use llm_server" if tests else "tests that use llm_server"
    terminalreporter.write_line(
        f"llmbench: no server config selected ({why_no_configs(paths)}): {which} had none to run on",
        yellow=True,
    )
