"""Command-line options and ini keys of reference-vs-candidate comparisons (issue 12)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from pytest_llmbench.compare.arms import ArmError, ArmOptions
from pytest_llmbench.compare.judging import DEFAULT_DECIDE, unknown_size_name
from pytest_llmbench.compare.margins import default_sizes, parse_size, sizes_for
from pytest_llmbench.compare.power import MIN_UNITS, Design
from pytest_llmbench.compare.spend import parse_seconds

SERVER_MODES = ("auto", "both", "per-block", "disjoint", "disjoint-parallel")
DISJOINT_MODES = ("disjoint", "disjoint-parallel")
DEFAULT_MAX_ROUNDS = 400
DEFAULT_PILOT_UNITS = 12
DEFAULT_RESTART_ROUNDS = "auto"
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
        metavar="TIME",
        default=None,
        help="time for the whole session's comparisons (300, 300s, 20m, 1.5h), shared across the selected "
        "scenarios and said up front in a plan table; 'scenario=TIME' for a time per scenario instead "
        f"(default: ini llmbench_compare_budget per scenario, else {DEFAULT_BUDGET_S:g} s; 'none' for no limit). "
        "Warm-up and pilot included; the pilot plans the rest for 95%% power at each metric's detect size "
        "within it, and says 'underpowered' when it cannot",
    )
    add(
        "--llmbench-compare-floor",
        action="store_true",
        default=False,
        help=f"play the {MIN_UNITS}-unit floor even where the budget cannot hold it (default: the budget is a "
        "cap: such a comparison ends 'budget too small to judge' with what the floor would cost)",
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
        "not fit in GPU memory); auto: disjoint-parallel where the worker's GPUs hold a second set of the "
        "config's, else both on CPU and on GPUs while the loaded candidate leaves more than half of their "
        "memory free, else per-block; disjoint / disjoint-parallel: each arm on its own "
        "set of --llmbench-compare-sets, swapped between the two halves of every unit, blocks interleaved or "
        "at once (issue 57)",
    )
    add(
        "--llmbench-compare-sets",
        metavar="A|B",
        default=None,
        help="the two disjoint device sets of --llmbench-arm-servers disjoint[-parallel]: GPU ids '0,1|2,3', "
        "or CPU cores 'cpu:0|1' (each server pinned to its cores)",
    )
    add(
        "--llmbench-compare-alpha",
        metavar="P",
        type=float,
        default=None,
        help="false-alarm rate of one comparison at its ignore size (default: the --gate-alpha family's "
        "alpha divided by the comparisons counted up front, as the gate does); given, the suite level's "
        "Holm works at P times those comparisons",
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
        "server pairs and a difference between two starts of one build counts as noise; 'auto': N chosen by "
        "cost once the first pair's start and rounds are timed (compare/plan.py)",
        default=DEFAULT_RESTART_ROUNDS,
    )
    parser.addini(
        "llmbench_compare_noise",
        "the noise the unit is chosen for before the pilot measures it: 'offset=1% round=3.5%' (a fresh "
        "pair's offset SD and a round's SD; the H200's round SD, the CPU's offset)",
        default="offset=1% round=3.5%",
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
    session_budget_s: float | None = None  # --llmbench-compare-budget TIME: the session's, across scenarios
    sets: tuple[tuple[str, ...], tuple[str, ...]] | None = None  # --llmbench-compare-sets (disjoint placements)
    device_kind: str = "gpu"  # what the sets name: GPU ids, or CPU cores ("cpu:")

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


def _restart_rounds(config: pytest.Config) -> int | None:
    raw = str(config.getini("llmbench_compare_restart_rounds")).strip().lower()
    if raw == "auto":
        return None
    value = _int(config, None, "llmbench_compare_restart_rounds", 0)
    if value % 2:
        raise pytest.UsageError(
            f"ini llmbench_compare_restart_rounds: {value} — must be even (whole ABBA pairs per server pair), "
            "0 or 'auto'"
        )
    return value


def _budgets(config: pytest.Config) -> tuple[float | None, float | None]:
    """(the session's budget, each scenario's): ``--llmbench-compare-budget TIME`` is the session's,
    ``scenario=TIME`` (or the ini, seconds per scenario) each scenario's."""
    raw = config.getoption("llmbench_compare_budget", None)
    try:
        ini = parse_seconds(config.getini("llmbench_compare_budget"), "ini llmbench_compare_budget")
        if raw is None:
            return None, ini
        key, sep, value = str(raw).partition("=")
        if sep:
            if key.strip() != "scenario":
                raise ValueError(f"--llmbench-compare-budget: {raw!r}: the one key is 'scenario' (scenario=300)")
            return None, parse_seconds(value, "--llmbench-compare-budget scenario=")
        session = parse_seconds(str(raw), "--llmbench-compare-budget")
    except ValueError as e:
        raise pytest.UsageError(str(e)) from None
    return session, None  # 'none': no limit at all


def _noise(config: pytest.Config) -> tuple[float, float]:
    """ini llmbench_compare_noise: 'offset=1% round=3.5%' → (0.01, 0.035)."""
    text = str(config.getini("llmbench_compare_noise"))
    out = {"offset": 0.01, "round": 0.035}
    for part in text.replace(",", " ").split():
        key, sep, value = part.partition("=")
        try:
            if not sep or key not in out:
                raise ValueError
            number = float(value.strip().removesuffix("%")) / (100 if value.strip().endswith("%") else 1)
            if not (0 <= number < 1):
                raise ValueError
        except ValueError:
            raise pytest.UsageError(
                f"ini llmbench_compare_noise: {part!r} is not 'offset=SD' or 'round=SD' (e.g. offset=1% round=3.5%)"
            ) from None
        out[key] = number
    if out["round"] <= 0:
        raise pytest.UsageError("ini llmbench_compare_noise: the round SD must be > 0")
    return out["offset"], out["round"]


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


def parse_sets(text: str | None, mode: str, where: str = "--llmbench-compare-sets") -> tuple[Any, str]:
    """``0,1|2,3`` (GPU ids) or ``cpu:0|1`` (CPU cores) → the two sets and their kind; required by the
    disjoint modes, refused elsewhere, and the sets must be non-empty and share no device."""
    if mode not in DISJOINT_MODES:
        if text:
            raise pytest.UsageError(f"{where} {text!r}: only with --llmbench-arm-servers disjoint or disjoint-parallel")
        return None, "gpu"
    if not text:
        raise pytest.UsageError(
            f"--llmbench-arm-servers {mode} needs {where} (two disjoint sets: '0,1|2,3' GPUs or 'cpu:0|1' cores)"
        )
    raw = text.strip()
    kind = "cpu" if raw.lower().startswith("cpu:") else "gpu"
    parts = raw[4:].split("|") if kind == "cpu" else raw.split("|")
    sets = tuple(tuple(d.strip() for d in part.split(",") if d.strip()) for part in parts)
    if len(sets) != 2 or not all(sets):
        raise pytest.UsageError(f"{where} {text!r}: two non-empty sets separated by '|' (e.g. 0,1|2,3 or cpu:0|1)")
    if set(sets[0]) & set(sets[1]):
        raise pytest.UsageError(f"{where} {text!r}: the sets share {sorted(set(sets[0]) & set(sets[1]))}")
    if kind == "cpu" and not all(d.isdigit() for s in sets for d in s):
        raise pytest.UsageError(f"{where} {text!r}: CPU cores are whole numbers (cpu:0|1, cpu:0,1|2,3)")
    return sets, kind


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
    session_budget, scenario_budget = _budgets(config)
    offset_sd, round_sd = _noise(config)
    design = Design(
        warmup_rounds=_int(config, None, "llmbench_compare_warmup_rounds", 0),
        pilot_units=_int(config, None, "llmbench_compare_pilot", MIN_UNITS),
        restart_rounds=_restart_rounds(config),
        max_rounds=_int(config, "llmbench_max_rounds", "llmbench_max_rounds", 2),
        budget_s=scenario_budget,
        prior_sd_between=offset_sd,
        prior_sd_within=round_sd,
        force_floor=bool(config.getoption("llmbench_compare_floor", False)),
    )
    detect = parse_sizes(config.getini("llmbench_compare_detect"), "llmbench_compare_detect")
    ignore = parse_sizes(config.getini("llmbench_compare_ignore"), "llmbench_compare_ignore")
    for metric in set(detect) | set(ignore):
        try:
            sizes_for(metric, detect, ignore)
        except ValueError as e:
            raise pytest.UsageError(f"ini llmbench_compare_detect/llmbench_compare_ignore: {e}") from None
    server_mode = config.getoption("llmbench_arm_servers", "auto") or "auto"
    sets, device_kind = parse_sets(config.getoption("llmbench_compare_sets", None), server_mode)
    if sets is not None and not design.halves_fit:
        raise pytest.UsageError(
            f"--llmbench-arm-servers {server_mode}: a unit is two halves of whole ABBA pairs, so its rounds "
            f"(ini llmbench_compare_restart_rounds = {design.restart_rounds}) must be a multiple of 4 (not 0), or auto"
        )
    return CompareSettings(
        arms=arms,
        design=design,
        block_prompts=_int(config, "llmbench_block_prompts", "llmbench_compare_block_prompts", 1),
        strict=bool(config.getoption("llmbench_strict", False)),
        server_mode=server_mode,
        alpha=alpha,
        detect=detect,
        ignore=ignore,
        decide=tuple(config.getini("llmbench_compare_metrics")),
        session_budget_s=session_budget,
        sets=sets,
        device_kind=device_kind,
    )
