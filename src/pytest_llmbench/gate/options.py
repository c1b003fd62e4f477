"""Command-line options and ini keys of the gate (called from the plugin's pytest_addoption)."""

from __future__ import annotations

from pathlib import Path

import pytest

UPDATE_MODES = ("all", "new", "accept")


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("llmbench-gate", "llmbench baselines and gates")
    group.addoption(
        "--baselines-dir",
        dest="llmbench_baselines_dir",
        metavar="DIR",
        default=None,
        help="folder of baseline YAML files, one per server config (default: ini llmbench_baselines_dir, "
        "else <rootdir>/baselines)",
    )
    group.addoption(
        "--update-baselines",
        dest="llmbench_update_baselines",
        nargs="?",
        const="all",
        default=None,
        choices=UPDATE_MODES,
        metavar="all|new|accept",
        help="record: after the run, add every measured value to its baseline's history (atomic); a value "
        "that would have REGRESSED is shown as such and never fails the run. =new adds only to checks "
        "with no baseline or one still learning its spread. =accept is for a job that accepts a "
        "nightly automatically: checks are judged and fail as usual, and a REGRESSED value written "
        "restarts its history. Put it after the test paths or use the = form.",
    )
    group.addoption(
        "--llmbench-record",
        dest="llmbench_record",
        type=int,
        default=None,
        metavar="N",
        help="start every selected config's server N times in this session and record each start's values "
        "(implies --update-baselines=all unless another mode is given): timing varies more between "
        "starts than within one, and a History learns that spread from separate starts",
    )
    group.addoption(
        "--strict-baselines",
        dest="llmbench_strict_baselines",
        action="store_true",
        default=False,
        help="a check without a baseline (new test, metric or runner) fails instead of passing as 'new'",
    )
    group.addoption(
        "--runner",
        dest="llmbench_runner",
        metavar="NAME",
        default=None,
        help="runner profile that keys hardware-bound baselines (default: detected, e.g. cpu-amd-epyc-2c)",
    )
    group.addoption(
        "--gate-alpha",
        dest="llmbench_gate_alpha",
        metavar="SPEC",
        default=None,
        help="the suite's error budget: alpha per family of gates, e.g. 'timing=0.02,quality=0.02,"
        "decisions=0.01' (the default: 0.05 in all), one number for every family, or 'off' "
        "(each gate at its own level). Holm per family; see docs/BENCHES.md 'The verdict table'.",
    )
    parser.addini("llmbench_gate_alpha", "the suite's error budget (as --gate-alpha)", default=None)
    parser.addini("llmbench_baselines_dir", "folder of baseline YAML files (relative to the ini file)", default=None)


def baselines_dir(config: pytest.Config) -> Path:
    """CLI paths are relative to where pytest was invoked, the ini value to the ini file's folder."""
    cli = config.getoption("llmbench_baselines_dir", None)
    if cli:
        return (config.invocation_params.dir / str(cli)).resolve()
    ini = config.getini("llmbench_baselines_dir")
    if ini:
        base = config.inipath.parent if config.inipath else config.rootpath
        return (base / str(ini)).resolve()
    return config.rootpath / "baselines"


def record_starts(config: pytest.Config) -> int:
    """How many server starts per config ``--llmbench-record`` asks for (1 when it is not given)."""
    n = config.getoption("llmbench_record", None)
    if n is None:
        return 1
    if n < 1:
        raise pytest.UsageError(f"--llmbench-record {n}: give the number of server starts to record, 1 or more")
    return int(n)


def alpha_spec(config: pytest.Config) -> str | None:
    return config.getoption("llmbench_gate_alpha", None) or config.getini("llmbench_gate_alpha") or None
