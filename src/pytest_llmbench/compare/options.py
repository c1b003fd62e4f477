"""Command-line options and ini keys of reference-vs-candidate comparisons (issue 12)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from pytest_llmbench.compare.arms import ArmError, ArmOptions
from pytest_llmbench.compare.judging import DEFAULT_DECIDE

SERVER_MODES = ("auto", "both", "per-block")
DEFAULT_MAX_ROUNDS = 10
DEFAULT_MIN_ROUNDS = 3


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("llmbench-compare", "llmbench reference vs candidate (interleaved A/B in one session)")
    add = group.addoption
    add("--llmbench-reference-image", metavar="IMAGE", default=None,
        help="compare every selected docker config against this image (the candidate: the config's image "
             "or --llmbench-image)")
    add("--llmbench-reference-bin", metavar="DIR", default=None,
        help="compare every selected llama.cpp config against the llama-server in DIR")
    add("--llmbench-candidate-bin", metavar="DIR", default=None,
        help="the candidate's llama-server folder (default: the installed one)")
    add("--llmbench-reference-args", metavar="ARGS", default=None,
        help="extra server args of the reference arm, one shell-quoted string "
             "(--llmbench-reference-args='--flag …' when it starts with a dash)")
    add("--llmbench-candidate-args", metavar="ARGS", default=None,
        help="extra server args of the candidate arm, one shell-quoted string (the = form, as above)")
    add("--llmbench-max-rounds", metavar="N", type=int, default=None,
        help=f"most interleaved rounds per scenario (default: ini llmbench_max_rounds, else {DEFAULT_MAX_ROUNDS})")
    add("--llmbench-strict", action="store_true", default=False,
        help="an inconclusive comparison fails its test too (a regressed one always does)")
    add("--llmbench-arm-servers", choices=SERVER_MODES, default="auto",
        help="both: keep both arms' servers up; per-block: start one arm's server per block (when both do "
             "not fit in GPU memory); auto: both on CPU, and on GPUs while the loaded candidate leaves more "
             "than half of their memory free, else per-block")
    add("--llmbench-compare-alpha", metavar="P", type=float, default=None,
        help="error rate of one comparison over all its looks (default: the --gate-alpha family's alpha "
             "divided by the comparisons counted up front, as the gate does)")
    parser.addini("llmbench_max_rounds", "default --llmbench-max-rounds", default=str(DEFAULT_MAX_ROUNDS))
    parser.addini("llmbench_min_rounds", "rounds before the first look", default=str(DEFAULT_MIN_ROUNDS))
    parser.addini("llmbench_compare_margins", type="linelist", default=[],
                  help="per-metric margins, one 'metric=value' a line (ratio metrics relative, e.g. "
                       "output_throughput=0.05; accept_length absolute, e.g. accept_length=0.2)")
    parser.addini("llmbench_compare_metrics", type="args", default=list(DEFAULT_DECIDE),
                  help="the metrics whose decision ends a scenario's rounds")


@dataclass(frozen=True)
class CompareSettings:
    arms: ArmOptions
    max_rounds: int
    min_rounds: int
    strict: bool
    server_mode: str
    alpha: float | None
    margins: dict[str, float]
    decide: tuple[str, ...]


def _int(config: pytest.Config, option: str | None, ini: str) -> int:
    raw = config.getoption(option, None) if option else None
    where = f"--{option.replace('_', '-')}" if option else ""
    if raw is None:
        raw, where = config.getini(ini), f"ini {ini}"
    try:
        value = int(raw)
    except (TypeError, ValueError):
        raise pytest.UsageError(f"{where}: {raw!r} is not a whole number") from None
    if value < 2:
        raise pytest.UsageError(f"{where}: {value} — a comparison needs at least 2 rounds")
    return value


def parse_margins(lines: list[str]) -> dict[str, float]:
    out: dict[str, float] = {}
    for line in lines:
        for part in line.replace(",", " ").split():
            metric, sep, value = part.partition("=")
            try:
                if not sep or not metric:
                    raise ValueError
                out[metric] = float(value)
            except ValueError:
                raise pytest.UsageError(f"ini llmbench_compare_margins: {part!r} is not 'metric=number'") from None
            if out[metric] < 0:
                raise pytest.UsageError(f"ini llmbench_compare_margins: {part!r}: a margin is ≥ 0")
    return out


def read_settings(config: pytest.Config) -> CompareSettings:
    try:
        arms = ArmOptions.parse(
            reference_image=config.getoption("llmbench_reference_image", None),
            reference_bin=config.getoption("llmbench_reference_bin", None),
            candidate_bin=config.getoption("llmbench_candidate_bin", None),
            reference_args=config.getoption("llmbench_reference_args", None),
            candidate_args=config.getoption("llmbench_candidate_args", None),
            candidate_image=config.getoption("llmbench_image", None))
    except ArmError as e:
        raise pytest.UsageError(str(e)) from None
    alpha = config.getoption("llmbench_compare_alpha", None)
    if alpha is not None and not 0 < alpha < 1:
        raise pytest.UsageError(f"--llmbench-compare-alpha {alpha}: must be between 0 and 1")
    min_rounds = _int(config, None, "llmbench_min_rounds")
    max_rounds = _int(config, "llmbench_max_rounds", "llmbench_max_rounds")
    if max_rounds < min_rounds:
        raise pytest.UsageError(f"--llmbench-max-rounds {max_rounds} is below ini llmbench_min_rounds {min_rounds}")
    return CompareSettings(arms=arms, max_rounds=max_rounds, min_rounds=min_rounds,
                           strict=bool(config.getoption("llmbench_strict", False)),
                           server_mode=config.getoption("llmbench_arm_servers", "auto") or "auto", alpha=alpha,
                           margins=parse_margins(config.getini("llmbench_compare_margins")),
                           decide=tuple(config.getini("llmbench_compare_metrics")))
