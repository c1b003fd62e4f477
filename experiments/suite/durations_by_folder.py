"""Where the README's test command spends its time: per-folder totals and the slowest tests of one run.

Reads the JUnit XML of ``pytest tests/ -p no:cacheprovider --junitxml=FILE`` (each testcase's time is its
setup + call + teardown, so a module-scoped server's start lands on the module's first test) and prints a
markdown table per ``tests/<folder>`` (top-level test files count as ``tests/``) and the ``--top`` slowest
tests. Under xdist the sum is work, not wall time: the wall time is the run's own line, given with ``--wall``.

    python experiments/suite/durations_by_folder.py run.xml --top 40 --command "pytest tests/ ..." --wall "14 min"
    python experiments/suite/durations_by_folder.py after.xml --before before.xml   # + a before/after table
    python experiments/suite/durations_by_folder.py run.xml --workers run.log   # -n 2 -v: each worker's phases

``--workers`` reads the ``-v`` output of an xdist run (``[gw0] [ 5%] PASSED tests/…``) and sums each worker's
test times over the modules that start servers (marked ``integration``, as the root conftest.py sorts them) and
the rest: the run's wall time is about the longer worker's server-free share plus the server phase.
"""

from __future__ import annotations

import argparse
import re
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path, PurePosixPath

ROOT = Path(__file__).resolve().parents[2]
WORKER_LINE = re.compile(r"^\[(gw\d+)\] \[\s*\d+%\] (?:PASSED|FAILED|SKIPPED|ERROR|XFAIL|XPASS) (\S+)")


def testcases(junit: str) -> list[tuple[str, str, float, str]]:
    """(file, test name, seconds, outcome) of every testcase in the XML."""
    out = []
    for case in ET.parse(junit).getroot().iter("testcase"):
        file = case.get("file") or case.get("classname", "").replace(".", "/") + ".py"
        outcome = "passed"
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                outcome = child.tag
        out.append((file, case.get("name", ""), float(case.get("time", 0.0)), outcome))
    return out


def folder_of(file: str) -> str:
    parts = PurePosixPath(file).parts
    return "/".join(parts[:2]) if len(parts) > 2 else parts[0] if parts else "?"


def table(cases: list[tuple[str, str, float, str]], top: int) -> str:
    per: dict[str, list[float]] = defaultdict(list)
    for file, _, seconds, _ in cases:
        per[folder_of(file)].append(seconds)
    total = sum(seconds for _, _, seconds, _ in cases)
    outcomes: dict[str, int] = defaultdict(int)
    for *_, outcome in cases:
        outcomes[outcome] += 1
    lines = [
        f"{len(cases)} testcases ({', '.join(f'{n} {o}' for o, n in sorted(outcomes.items()))}); "
        f"sum of test times {total:.0f} s ({total / 60:.1f} min)",
        "",
        "| folder | tests | seconds | share |",
        "|---|---:|---:|---:|",
    ]
    for folder, times in sorted(per.items(), key=lambda kv: -sum(kv[1])):
        lines.append(f"| {folder} | {len(times)} | {sum(times):.1f} | {sum(times) / total:.0%} |")
    lines += ["", f"The {top} slowest tests:", "", "| seconds | test |", "|---:|---|"]
    for file, name, seconds, _ in sorted(cases, key=lambda c: -c[2])[:top]:
        lines.append(f"| {seconds:.1f} | {file}::{name} |")
    return "\n".join(lines)


def compared(before: list[tuple[str, str, float, str]], after: list[tuple[str, str, float, str]]) -> str:
    """Per folder, the seconds of the tests both runs have, before and after (a partial run compares only
    what it ran), and the tests whose time changed most."""
    was = {(f, n): s for f, n, s, _ in before}
    now = {(f, n): s for f, n, s, _ in after}
    common = sorted(was.keys() & now.keys())
    per: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for key in common:
        per[folder_of(key[0])][0] += was[key]
        per[folder_of(key[0])][1] += now[key]
    lines = [
        f"{len(common)} tests in both runs ({len(was.keys() - now.keys())} only before, "
        f"{len(now.keys() - was.keys())} only after)",
        "",
        "| folder | before s | after s |",
        "|---|---:|---:|",
    ]
    for folder, (b, a) in sorted(per.items(), key=lambda kv: -kv[1][0]):
        lines.append(f"| {folder} | {b:.1f} | {a:.1f} |")
    b_all, a_all = sum(was[k] for k in common), sum(now[k] for k in common)
    lines += [f"| all | {b_all:.1f} | {a_all:.1f} |", "", "| before s | after s | test |", "|---:|---:|---|"]
    for key in sorted(common, key=lambda k: now[k] - was[k])[:20]:
        lines.append(f"| {was[key]:.1f} | {now[key]:.1f} | {key[0]}::{key[1]} |")
    return "\n".join(lines)


def per_worker(cases: list[tuple[str, str, float, str]], log: str) -> str:
    """Each worker's seconds in server modules and in the rest, from the run's ``-v`` lines."""
    seconds = {f"{f}::{n}": s for f, n, s, _ in cases}
    starts: dict[str, bool] = {}
    sums: dict[tuple[str, bool], float] = defaultdict(float)
    for line in Path(log).read_text(errors="replace").splitlines():
        m = WORKER_LINE.match(line)
        if not m:
            continue
        worker, nodeid = m.groups()
        module = nodeid.split("::", 1)[0]
        if module not in starts:
            path = ROOT / module
            starts[module] = path.is_file() and "pytest.mark.integration" in path.read_text()
        sums[(worker, starts[module])] += seconds.get(nodeid, 0.0)
    lines = ["| worker | server-free modules s | server modules s |", "|---|---:|---:|"]
    for worker in sorted({w for w, _ in sums}):
        lines.append(f"| {worker} | {sums[(worker, False)]:.1f} | {sums[(worker, True)]:.1f} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("junit", help="the run's --junitxml file")
    ap.add_argument("--top", type=int, default=40)
    ap.add_argument("--command", default="", help="the pytest command that wrote the XML, for the header")
    ap.add_argument("--wall", default="", help="the run's wall time, for the header")
    ap.add_argument("--before", help="an earlier run's JUnit XML: add a before/after table of the common tests")
    ap.add_argument("--workers", help="the run's -v output under xdist: each worker's server and other seconds")
    args = ap.parse_args()
    header = []
    if args.command:
        header.append(f"Command: `{args.command}`")
    if args.wall:
        header.append(f"Wall time: {args.wall}")
    cases = testcases(args.junit)
    parts = [*header, table(cases, args.top)]
    if args.workers:
        parts.append(per_worker(cases, args.workers))
    if args.before:
        parts.append(compared(testcases(args.before), testcases(args.junit)))
    print("\n\n".join(parts))


if __name__ == "__main__":
    main()
