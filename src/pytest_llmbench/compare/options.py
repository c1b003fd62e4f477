"""Command-line options and ini keys of reference-vs-candidate comparisons (issue 12)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from pytest_llmbench.compare.arms import ArmError, ArmOptions
from pytest_llmbench.compare.judging import DEFAULT_DECIDE, unknown_size_name
from pytest_llmbench.compare.margins import default_sizes, parse_size, sizes_for
from pytest_llmbench.compare.power import MIN_UNITS, Design

SERVER_MODES = ("auto", "both", "per-block")
DEFAULT_MAX_ROUNDS = 400
DEFAULT_PILOT_UNITS = 12
DEFAULT_RESTART_ROUNDS = 2
DEFAULT_WARMUP_ROUNDS = 1
DEFAULT_BUDGET_S = 300.0
DEFAULT_BLOCK_PROMPTS = 2


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("llmbench-compare", "llmbench reference vs candidate (interleaved A/B in one session)")
    add = group.addoption
    add(
        "--llmbench-reference-image",
        metavar="IMAGE",
        default=None,
        help="compare every selected docker config against this image (the candidate: the config's image "
        "or --llmbench-image)",
    )
    add(
        "--llmbench-reference-bin",
        metavar="DIR",
        default=None,
        help="compare every selected llama.cpp config against the llama-server in DIR",
    )
    add(
        "--llmbench-candidate-bin",
        metavar="DIR",
        default=None,
        help="the candidate's llama-server folder (default: the installed one)",
    )
    add(
        "--llmbench-reference-args",
        metavar="ARGS",
        default=None,
        help="extra server args of the reference arm, one shell-quoted string "
        "(--llmbench-reference-args='--flag …' when it starts with a dash)",
    )
    add(
        "--llmbench-candidate-args",
        metavar="ARGS",
        default=None,
        help="extra server args of the candidate arm, one shell-quoted string (the = form, as above)",
    )
    add(
        "--llmbench-max-rounds",
        metavar="N",
        type=int,
        default=None,
        help=f"most judged rounds per scenario, pilot included (default: ini llmbench_max_rounds, else "
        f"{DEFAULT_MAX_ROUNDS})",
    )
    add(
        "--llmbench-compare-budget",
        metavar="SECONDS",
        default=None,
        help=f"time per scenario, warm-up and pilot included; the pilot plans the rounds for 95%% power at "
        f"each metric's detect size within it, and says 'underpowered' when it cannot (default: ini "
        f"llmbench_compare_budget, else {DEFAULT_BUDGET_S:g}; 'none' for no limit)",
    )
    add(
        "--llmbench-block-prompts",
        metavar="N",
        type=int,
        default=None,
        help=f"prompts per block (one arm's half of a round); the window moves through the scenario's prompts "
        f"round by round (default: ini llmbench_compare_block_prompts, else {DEFAULT_BLOCK_PROMPTS}; at "
        f"least the scenario's concurrency)",
    )
    add(
        "--llmbench-strict",
        action="store_true",
        default=False,
        help="an inconclusive comparison fails its test too (a regressed one always does)",
    )
    add(
        "--llmbench-arm-servers",
        choices=SERVER_MODES,
        default="auto",
        help="both: keep both arms' servers up; per-block: start one arm's server per block (when both do "
        "not fit in GPU memory); auto: both on CPU, and on GPUs while the loaded candidate leaves more "
        "than half of their memory free, else per-block",
    )
    add(
        "--llmbench-compare-alpha",
        metavar="P",
        type=float,
        default=None,
        help="false-alarm rate of one comparison at its ignore size (default: the --gate-alpha family's "
        "alpha divided by the comparisons counted up front, as the gate does)",
    )
    parser.addini("llmbench_max_rounds", "default --llmbench-max-rounds", default=str(DEFAULT_MAX_ROUNDS))
    parser.addini(
        "llmbench_compare_budget",
        "default --llmbench-compare-budget (seconds per scenario)",
        default=str(DEFAULT_BUDGET_S),
    )
    parser.addini(
        "llmbench_compare_block_prompts", "default --llmbench-block-prompts", default=str(DEFAULT_BLOCK_PROMPTS)
    )
    parser.addini(
        "llmbench_compare_pilot",
        f"units whose spread plans the rest (>= {MIN_UNITS}): server pairs of llmbench_compare_restart_rounds rounds, "
        "or rounds where every block starts its server",
        default=str(DEFAULT_PILOT_UNITS),
    )
    parser.addini(
        "llmbench_compare_restart_rounds",
        "while both arms stay up, restart both every N rounds (even; 0: never), so the tests run over "
        "server pairs and a difference between two starts of one build counts as noise",
        default=str(DEFAULT_RESTART_ROUNDS),
    )
    parser.addini(
        "llmbench_compare_warmup_rounds", "rounds run first and never judged", default=str(DEFAULT_WARMUP_ROUNDS)
    )
    parser.addini(
        "llmbench_compare_detect",
        type="linelist",
        default=[],
        help="per metric, the smallest change a comparison must catch (95% power), one "
        "'metric=value' a line: output_throughput=3%, accept_length=0.1, ttft=10% (every TTFT summary)",
    )
    parser.addini(
        "llmbench_compare_ignore",
        type="linelist",
        default=[],
        help="per metric, the largest change a comparison may ignore (regressed means worse than "
        "this), one 'metric=value' a line: output_throughput=1%",
    )
    parser.addini(
        "llmbench_compare_metrics",
        type="args",
        default=list(DEFAULT_DECIDE),
        help="the metrics the pilot plans the rounds for",
    )


@dataclass(frozen=True)
class CompareSettings:
    arms: ArmOptions
    design: Design
    block_prompts: int
    strict: bool
    server_mode: str
    alpha: float | None
    detect: dict[str, str]
    ignore: dict[str, str]
    decide: tuple[str, ...]

    @property
    def max_rounds(self) -> int:
        return self.design.max_rounds


def _int(config: pytest.Config, option: str | None, ini: str, least: int) -> int:
    raw = config.getoption(option, None) if option else None
    where = f"--{option.replace('_', '-')}" if option else ""
    if raw is None:
        raw, where = config.getini(ini), f"ini {ini}"
    try:
        value = int(raw)
    except (TypeError, ValueError):
        raise pytest.UsageError(f"{where}: {raw!r} is not a whole number") from None
    if value < least:
        raise pytest.UsageError(f"{where}: {value} — must be at least {least}")
    return value


def _restart_rounds(config: pytest.Config) -> int:
    value = _int(config, None, "llmbench_compare_restart_rounds", 0)
    if value % 2:
        raise pytest.UsageError(
            f"ini llmbench_compare_restart_rounds: {value} — must be even (whole ABBA pairs per server pair) or 0"
        )
    return value


def _budget(config: pytest.Config) -> float | None:
    raw = config.getoption("llmbench_compare_budget", None)
    where = "--llmbench-compare-budget"
    if raw is None:
        raw, where = config.getini("llmbench_compare_budget"), "ini llmbench_compare_budget"
    text = str(raw).strip().lower().removesuffix("s")
    if text in ("none", "no", "off", "0"):
        return None
    try:
        value = float(text)
    except ValueError:
        raise pytest.UsageError(f"{where}: {raw!r} is not a number of seconds (or 'none')") from None
    if value <= 0:
        raise pytest.UsageError(f"{where}: {raw!r} must be > 0 seconds (or 'none')")
    return value


def parse_sizes(lines: list[str], ini: str) -> dict[str, str]:
    """``metric=value`` lines (values as ``sizes_for`` reads them: 0.05, 3%), checked now so a typo names
    the ini key and the entry."""
    out: dict[str, str] = {}
    for line in lines:
        for part in line.replace(",", " ").split():
            metric, sep, value = part.partition("=")
            if not sep or not metric or not value:
                raise pytest.UsageError(f"ini {ini}: {part!r} is not 'metric=value' (e.g. output_throughput=3%)")
            unknown = unknown_size_name(metric)
            if unknown is not None:
                raise pytest.UsageError(f"ini {ini}: {part!r}: {unknown}")
            try:
                default = default_sizes(metric)
                parse_size(metric, value.strip(), default[0] if default is not None else None)
            except ValueError as e:
                raise pytest.UsageError(f"ini {ini}: {part!r}: {e}") from None
            out[metric] = value.strip()
    return out


def read_settings(config: pytest.Config) -> CompareSettings:
    try:
        arms = ArmOptions.parse(
            reference_image=config.getoption("llmbench_reference_image", None),
            reference_bin=config.getoption("llmbench_reference_bin", None),
            candidate_bin=config.getoption("llmbench_candidate_bin", None),
            reference_args=config.getoption("llmbench_reference_args", None),
            candidate_args=config.getoption("llmbench_candidate_args", None),
            candidate_image=config.getoption("llmbench_image", None),
        )
    except ArmError as e:
        raise pytest.UsageError(str(e)) from None
    alpha = config.getoption("llmbench_compare_alpha", None)
    if alpha is not None and not 0 < alpha < 0.5:
        raise pytest.UsageError(f"--llmbench-compare-alpha {alpha}: must be between 0 and 0.5")
    design = Design(
        warmup_rounds=_int(config, None, "llmbench_compare_warmup_rounds", 0),
        pilot_units=_int(config, None, "llmbench_compare_pilot", MIN_UNITS),
        restart_rounds=_restart_rounds(config),
        max_rounds=_int(config, "llmbench_max_rounds", "llmbench_max_rounds", 2),
        budget_s=_budget(config),
    )
    detect = parse_sizes(config.getini("llmbench_compare_detect"), "llmbench_compare_detect")
    ignore = parse_sizes(config.getini("llmbench_compare_ignore"), "llmbench_compare_ignore")
    for metric in set(detect) | set(ignore):
        try:
            sizes_for(metric, detect, ignore)
        except ValueError as e:
            raise pytest.UsageError(f"ini llmbench_compare_detect/llmbench_compare_ignore: {e}") from None
    return CompareSettings(
        arms=arms,
        design=design,
        block_prompts=_int(config, "llmbench_block_prompts", "llmbench_compare_block_prompts", 1),
        strict=bool(config.getoption("llmbench_strict", False)),
        server_mode=config.getoption("llmbench_arm_servers", "auto") or "auto",
        alpha=alpha,
        detect=detect,
        ignore=ignore,
        decide=tuple(config.getini("llmbench_compare_metrics")),
    )
