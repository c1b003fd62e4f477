"""Baseline files: one reviewable YAML file per server config under ``baselines/``.

Layout (sorted keys, 6 significant digits, lists inline so a changed value is a one-line diff)::

    config: cpu-nodraft
    runners:                      # hardware-bound metrics, per runner profile
      cpu-amd-epyc-2c:
        <test key>:
          output_throughput: {direction, history, n, noise, provenance, se, spread, value}
    shared:                       # quality metrics, the same on every runner
      <test key>:
        accept_length: {...}
    version: 2
    # end: 18 entries

The last line is the writer's end marker: a file cut short at a line boundary (a full disk, a
half-copied artifact) loses it, and is an error instead of loading 8 of its 18 entries. A person may
edit values freely; one who adds or removes entries by hand fixes the count (the error says so).
Version 1 files (no end marker) still load. An empty or comment-only file is cut short too, not "no
baselines" (which would turn every check into "new" and pass).

A file that cannot be read is an error naming it, and is never rewritten: the gate refuses to touch
it until a person fixes or deletes it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import yaml

from pytest_llmbench.errors import LlmbenchError
from pytest_llmbench.gate.noise import NOISE_MODELS, noise_from_dict
from pytest_llmbench.gate.types import HISTORY_LEN, BaselineEntry

VERSION = 2
READABLE_VERSIONS = (1, 2)
HEADER = "# pytest-llmbench baselines"
_END = re.compile(r"^# end: (\d+) entr(?:y|ies)\s*$")
SIG_DIGITS = 6
_TOP_KEYS = {"version", "config", "shared", "runners"}
_ENTRY_KEYS = {"value", "direction", "noise", "n", "se", "spread", "history", "provenance"}

Key = tuple[str | None, str, str]  # (runner or None for shared, test key, metric)


class BaselineFileError(LlmbenchError):
    """A baseline file exists but is not a valid baseline file."""

    def __init__(self, path: Path, reason: str) -> None:
        self.path, self.reason = path, reason
        super().__init__(
            f"baseline file {path} is unreadable: {reason}. Fix or delete it; "
            f"pytest-llmbench never overwrites it (not even with --update-baselines)"
        )


def round_sig(x: float, digits: int = SIG_DIGITS) -> float | int:
    """Fixed precision so reruns do not rewrite digits that are noise; integral values stay ints."""
    x = float(x)
    if not math.isfinite(x):
        return x
    r = float(f"{x:.{digits}g}")
    return int(r) if r.is_integer() and abs(r) < 1e15 else r


@dataclass
class BaselineFile:
    """The entries of one config, by (runner or shared) → test key → metric."""

    path: Path
    config: str
    shared: dict[str, dict[str, BaselineEntry]] = field(default_factory=dict)
    runners: dict[str, dict[str, dict[str, BaselineEntry]]] = field(default_factory=dict)
    exists: bool = False

    def _section(self, runner: str | None) -> dict[str, dict[str, BaselineEntry]]:
        return self.shared if runner is None else self.runners.setdefault(runner, {})

    def get(self, runner: str | None, test_key: str, metric: str) -> BaselineEntry | None:
        section = self.shared if runner is None else self.runners.get(runner, {})
        return section.get(test_key, {}).get(metric)

    def put(self, runner: str | None, test_key: str, metric: str, entry: BaselineEntry) -> None:
        self._section(runner).setdefault(test_key, {})[metric] = entry

    def keys(self, runner: str | None = None, *, include_shared: bool = True) -> Iterator[Key]:
        """The entries a run on ``runner`` could check (its own section plus the shared one)."""
        if include_shared:
            for test, metrics in self.shared.items():
                for metric in metrics:
                    yield (None, test, metric)
        for test, metrics in self.runners.get(runner, {}).items() if runner else ():
            for metric in metrics:
                yield (runner, test, metric)


def config_filename(config: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", config) + ".yaml"


# --- reading -------------------------------------------------------------------------------------------


def load(path: Path, config: str, *, known_noise: bool = True) -> BaselineFile:
    """Read ``path``; a missing file is an empty baseline, anything unreadable a BaselineFileError.

    ``known_noise=False`` lets a noise model name nobody has defined yet pass (the session-start check
    runs before test conftests, where a user's own model may be defined, are imported)."""
    bf = BaselineFile(path=path, config=config)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return bf
    except OSError as e:
        raise BaselineFileError(path, f"cannot read it ({e.strerror or e})") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise BaselineFileError(path, f"invalid YAML ({' '.join(str(e).split())})") from None
    bf.exists = True
    if data is None:  # the writer always writes version and config: nothing here is a file cut to nothing
        what = "empty (0 bytes)" if not text else "empty" if not text.strip() else "only comments, no entries"
        raise BaselineFileError(
            path,
            f"it is {what}, which the writer never leaves: the file was cut short "
            "(restore it from version control or delete it)",
        )
    if not isinstance(data, dict):
        raise BaselineFileError(path, f"expected a mapping at the top, found {type(data).__name__}")
    unknown = set(data) - _TOP_KEYS
    if unknown:
        raise BaselineFileError(path, f"unknown top-level key(s) {sorted(map(str, unknown))}")
    version = data.get("version")
    if version is None and text.startswith(HEADER):
        raise BaselineFileError(
            path,
            "no 'version' line, which the writer puts near the end: the file was cut "
            "short (restore it from version control or delete it)",
        )
    if version is not None and version not in READABLE_VERSIONS:
        raise BaselineFileError(path, f"version {version!r} is not one of {list(READABLE_VERSIONS)}")
    for test, metric, raw in _walk(path, data.get("shared"), "shared"):
        bf.put(None, test, metric, _entry(path, raw, f"shared › {test} › {metric}", known_noise=known_noise))
    runners = data.get("runners") or {}
    if not isinstance(runners, dict):
        raise BaselineFileError(path, "'runners' must map runner profiles to tests")
    for runner, tests in runners.items():
        for test, metric, raw in _walk(path, tests, f"runners › {runner}"):
            bf.put(
                str(runner),
                test,
                metric,
                _entry(path, raw, f"runners › {runner} › {test} › {metric}", known_noise=known_noise),
            )
    if version == 2:
        _check_end(
            path, text, len(list(bf.keys(None))) + sum(len(list(bf.keys(r, include_shared=False))) for r in bf.runners)
        )
    return bf


def _check_end(path: Path, text: str, count: int) -> None:
    lines = text.rstrip("\n").splitlines()
    m = _END.match(lines[-1]) if lines else None
    if m is None:
        raise BaselineFileError(
            path,
            "the last line is not the writer's '# end: N entries' marker: the file was "
            "cut short (restore it from version control or delete it)",
        )
    if int(m.group(1)) != count:
        raise BaselineFileError(
            path,
            f"it holds {count} entries but its end line says {m.group(1)}: entries were "
            f"lost, or added/removed by hand (then correct the number in the last line)",
        )


def _walk(path: Path, tests: Any, where: str) -> Iterator[tuple[str, str, Any]]:
    if tests is None:
        return
    if not isinstance(tests, dict):
        raise BaselineFileError(path, f"{where}: expected a mapping of test keys")
    for test, metrics in tests.items():
        if not isinstance(metrics, dict):
            raise BaselineFileError(path, f"{where} › {test}: expected a mapping of metrics")
        for metric, raw in metrics.items():
            yield str(test), str(metric), raw


def _number(path: Path, raw: Any, key: str, where: str, *, non_negative: bool = False) -> float | None:
    """An optional finite number (absent: None)."""
    return None if raw.get(key) is None else _required_number(path, raw, key, where, non_negative=non_negative)


def _required_number(path: Path, raw: Any, key: str, where: str, *, non_negative: bool = False) -> float:
    """A finite number: a NaN value or SE makes the tolerance NaN, and a NaN tolerance passes anything."""
    v = raw.get(key)
    if isinstance(v, bool) or not isinstance(v, int | float):
        raise BaselineFileError(path, f"{where}: '{key}' must be a number, found {v!r}")
    if not math.isfinite(v):
        raise BaselineFileError(path, f"{where}: '{key}' must be a finite number, found {v!r}")
    if non_negative and v < 0:
        raise BaselineFileError(path, f"{where}: '{key}' must be >= 0, found {v!r}")
    return float(v)


def _entry(path: Path, raw: Any, where: str, *, known_noise: bool = True) -> BaselineEntry:
    if not isinstance(raw, dict):
        raise BaselineFileError(path, f"{where}: expected a mapping with value, direction, noise…")
    unknown = set(raw) - _ENTRY_KEYS
    if unknown:
        raise BaselineFileError(path, f"{where}: unknown key(s) {sorted(map(str, unknown))}")
    value = _required_number(path, raw, "value", where)
    direction = raw.get("direction")
    if direction not in ("higher", "lower"):
        raise BaselineFileError(path, f"{where}: 'direction' must be higher or lower, found {direction!r}")
    noise = raw.get("noise")
    try:
        noise_from_dict(noise)
    except ValueError as e:
        unknown_name = isinstance(noise, dict) and noise.get("name") not in NOISE_MODELS
        if known_noise or not unknown_name:
            raise BaselineFileError(path, f"{where}: noise: {e}") from None
    noise = cast(dict[str, Any], noise)  # a mapping with a name: a known model, or (allowed here) an unknown one
    history = raw.get("history") or []
    if not isinstance(history, list) or any(
        isinstance(h, bool) or not isinstance(h, int | float) or not math.isfinite(h) for h in history
    ):
        raise BaselineFileError(path, f"{where}: 'history' must be a list of finite numbers, found {history!r}")
    n = raw.get("n")
    if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 1):
        raise BaselineFileError(path, f"{where}: 'n' must be a whole number >= 1, found {n!r}")
    prov = raw.get("provenance") or {}
    if not isinstance(prov, dict):
        raise BaselineFileError(path, f"{where}: 'provenance' must be a mapping")
    return BaselineEntry(
        value=value,
        direction=direction,
        noise=noise,
        n=n,
        se=_number(path, raw, "se", where, non_negative=True),
        spread=_number(path, raw, "spread", where, non_negative=True),
        history=tuple(float(h) for h in history),
        provenance=prov,
    )


# --- writing -------------------------------------------------------------------------------------------


class _Dumper(yaml.SafeDumper):
    """Block mappings, inline lists (a history is one line), no aliases."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _list_inline(dumper: yaml.SafeDumper, data: list[Any]) -> yaml.Node:
    return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=True)


_Dumper.add_representer(list, _list_inline)


def _clean(v: Any) -> Any:
    if isinstance(v, bool) or v is None or isinstance(v, str):
        return v
    if isinstance(v, int | float):
        return round_sig(v)
    if isinstance(v, dict):
        return {str(k): _clean(x) for k, x in v.items() if x is not None}
    if isinstance(v, list | tuple):
        return [_clean(x) for x in v]
    return str(v)


def entry_to_dict(e: BaselineEntry) -> dict[str, Any]:
    out: dict[str, Any] = _clean(
        {
            "value": e.value,
            "direction": e.direction,
            "noise": e.noise,
            "n": e.n,
            "se": e.se,
            "spread": e.spread,
            "history": list(e.history[-HISTORY_LEN:]) or None,
            "provenance": e.provenance or None,
        }
    )
    return out


def dumps(bf: BaselineFile) -> str:
    """The file's text: stable for equal content, so unchanged baselines give empty diffs."""
    data: dict[str, Any] = {"version": VERSION, "config": bf.config}
    if bf.shared:
        data["shared"] = {t: {m: entry_to_dict(e) for m, e in ms.items()} for t, ms in bf.shared.items() if ms}
    runners = {
        r: {t: {m: entry_to_dict(e) for m, e in ms.items()} for t, ms in tests.items() if ms}
        for r, tests in bf.runners.items()
    }
    runners = {r: t for r, t in runners.items() if t}
    if runners:
        data["runners"] = runners
    header = (
        f"{HEADER} for config {bf.config!r}. Written by --update-baselines;\n"
        f"# review changes like code. Hardware-bound metrics are under runners/<profile>.\n"
    )
    count = sum(len(ms) for ms in bf.shared.values()) + sum(len(ms) for t in bf.runners.values() for ms in t.values())
    body = yaml.dump(data, Dumper=_Dumper, sort_keys=True, allow_unicode=True, width=110, default_flow_style=False)
    return header + body + f"# end: {count} {'entry' if count == 1 else 'entries'}\n"
