"""Stored timing baselines counted live through pytest, as a user runs them (issue 21).

Every step is ``python -m pytest <bench> …`` in a fresh baselines folder; this script only repeats it and
reads the ``verdict`` records each run wrote (nothing is re-judged):

1. record: ``--record-runs`` runs with ``--update-baselines=all`` (each must exit 0 and leave k values),
   then one session with ``--llmbench-record N`` for the rest of History's minimum of starts;
2. clean: ``--clean`` unchanged reruns — runs with any false REGRESSED, and what was not judged;
3. injected: ``--injected`` reruns with a slower server setting added to the config (same config name,
   same baselines) — runs with a REGRESSED tok/s check, and the setting's measured ratio (injected
   runs' mean tok/s over the clean runs', per scenario: the calibration of the injection);
4. busy: ``--busy`` unchanged reruns with a CPU-bound neighbour (``python -c 'while True: pass'``, not a
   child of the session) started ``--busy-after`` s into the run — runs with a false REGRESSED, and the
   checks called "not comparable: host busy".

    python experiments/stored/stored_timing_reruns.py --out /tmp/stored -- benches/test_serving_cpu.py \\
        -m cpu -k "smol-nospec and not prompt2k"
    # on the H200 (experiments/compare/gpu_compare.sh STEP=stored): the GPU smoke serving tests

Writes ``OUT/runs.jsonl`` (one line per run, as it finishes) and prints the markdown report.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

import yaml
from scipy import stats

ROOT = Path(__file__).resolve().parents[2]
TIMING = ("output_throughput", "median_tpot_ms", "median_ttft_ms")


def _verdicts(folder: Path) -> list[dict]:
    rows = [json.loads(line) for f in sorted(folder.glob("results*.jsonl")) for line in f.read_text().splitlines()]
    return [r for r in rows if r.get("record") == "verdict"]


def _history_lengths(baselines: Path) -> list[int]:
    out = []
    for f in baselines.glob("*.yaml"):
        data = yaml.safe_load(f.read_text()) or {}
        for tests in (data.get("runners") or {}).values():
            out += [len(e.get("history") or []) for metrics in tests.values() for e in metrics.values()]
    return out


def run(
    args: argparse.Namespace, label: str, *extra: str, configs: Path | None = None, busy_after: float | None = None
) -> dict:
    out = Path(args.out)
    folder = out / label
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        "-q",
        *args.pytest_args,
        f"--baselines-dir={out / 'baselines'}",
        f"--results-dir={folder}",
        *extra,
    ]
    if configs:
        cmd.append(f"--llmbench-configs={configs}")
    t0 = time.monotonic()
    session = subprocess.Popen(
        cmd,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    neighbour = None
    try:
        if busy_after is not None:
            try:
                session.wait(busy_after)
            except subprocess.TimeoutExpired:
                neighbour = subprocess.Popen([sys.executable, "-c", "while True: pass"])
        stdout, _ = session.communicate()
    finally:
        if neighbour is not None:
            neighbour.kill()
            neighbour.wait()
    proc = subprocess.CompletedProcess(cmd, session.returncode, stdout, "")
    (out / f"{label}.log").write_text(proc.stdout)
    vs = [
        {
            k: v.get(k)
            for k in ("config", "test_key", "metric", "status", "observed", "baseline", "p_value", "rule", "recorded")
        }
        for v in _verdicts(folder)
        if v.get("metric") in TIMING
    ]
    line = {
        "label": label,
        "exit": proc.returncode,
        "wall_s": round(time.monotonic() - t0, 1),
        "extra": list(extra),
        "verdicts": vs,
        "history_lengths": sorted(set(_history_lengths(out / "baselines"))),
    }
    with open(out / "runs.jsonl", "a") as f:
        f.write(json.dumps(line) + "\n")
    count = defaultdict(int)
    for v in vs:
        count[v["status"]] += 1
    print(
        f"{label}: exit {proc.returncode}, {line['wall_s']:.0f} s, {dict(count)}, history lengths "
        f"{line['history_lengths']}",
        file=sys.stderr,
        flush=True,
    )
    return line


def _rate(k: int, n: int) -> str:
    ci = stats.binomtest(k, n).proportion_ci(0.95, method="exact") if n else None
    return f"{k}/{n} [{100 * ci.low:.0f}%, {100 * ci.high:.0f}%]" if ci else "-"


def slower_configs(args: argparse.Namespace) -> Path:
    """The config file with ``--inject`` added to every config's args (same names, same baselines)."""
    src = Path(args.configs)
    data = yaml.safe_load(src.read_text())
    for cfg in data["configs"]:
        cfg["args"] = [*(cfg.get("args") or []), *args.inject.split()]
    path = Path(args.out) / f"injected-{src.name}"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def report(lines: list[dict], inject: str) -> None:
    phases = defaultdict(list)
    for ln in lines:
        phases[ln["label"].rstrip("0123456789").rstrip("-")].append(ln)
    print("| run | exit | wall s | judged | REGRESSED | learning | not comparable | new | history lengths |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---|")
    for ln in lines:
        c = defaultdict(int)
        for v in ln["verdicts"]:
            c[v["status"]] += 1
        judged = c["pass"] + c["REGRESSED"] + c["improved"]
        print(
            f"| {ln['label']} | {ln['exit']} | {ln['wall_s']:.0f} | {judged} | {c['REGRESSED']} | {c['learning']} | "
            f"{c['not comparable']} | {c['new']} | {ln['history_lengths']} |"
        )
    clean, injected, busy = phases.get("clean", []), phases.get("injected", []), phases.get("busy", [])
    false_runs = sum(any(v["status"] == "REGRESSED" for v in ln["verdicts"]) for ln in clean)
    caught = sum(
        any(v["status"] == "REGRESSED" and v["metric"] == "output_throughput" for v in ln["verdicts"])
        for ln in injected
    )
    print(
        f"\n- recording runs exit 0: {sum(ln['exit'] == 0 for ln in phases.get('record', []))} of "
        f"{len(phases.get('record', []))}"
    )
    print(f"- clean reruns with a false REGRESSED: {_rate(false_runs, len(clean))}")
    print(f"- injected `{inject}`: runs with a REGRESSED tok/s check: {_rate(caught, len(injected))}")
    if busy:
        busy_false = sum(any(v["status"] == "REGRESSED" for v in ln["verdicts"]) for ln in busy)
        named = sum(
            v["status"] == "not comparable" and "host busy" in (v["rule"] or "") for ln in busy for v in ln["verdicts"]
        )
        print(
            f"- busy neighbour: runs with a false REGRESSED {_rate(busy_false, len(busy))}; checks named "
            f"'not comparable: host busy' {named} of {sum(len(ln['verdicts']) for ln in busy)}"
        )
    by = defaultdict(lambda: {"clean": [], "injected": []})
    for phase, runs in (("clean", clean), ("injected", injected)):
        for ln in runs:
            for v in ln["verdicts"]:
                if v["metric"] == "output_throughput":
                    by[(v["config"], v["test_key"])][phase].append(v["observed"])
    for (cfg, test), d in sorted(by.items()):
        if d["clean"] and d["injected"]:
            ratio = (sum(d["injected"]) / len(d["injected"])) / (sum(d["clean"]) / len(d["clean"]))
            caught_here = sum(
                any(
                    v["status"] == "REGRESSED"
                    and v["metric"] == "output_throughput"
                    and v["test_key"] == test
                    and v["config"] == cfg
                    for v in ln["verdicts"]
                )
                for ln in injected
            )
            print(f"  - {cfg} {test}: injected/clean tok/s ×{ratio:.3f}; REGRESSED in {caught_here}/{len(injected)}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--configs", default=str(ROOT / "benches/configs/cpu.yaml"))
    ap.add_argument("--record-runs", type=int, default=3)
    ap.add_argument("--record-starts", type=int, default=3, help="then one --llmbench-record session of these")
    ap.add_argument("--clean", type=int, default=10)
    ap.add_argument("--injected", type=int, default=10)
    ap.add_argument("--inject", default="-fa off", help="server args added to every config for the injected runs")
    ap.add_argument("--busy", type=int, default=0)
    ap.add_argument("--busy-after", type=float, default=8.0)
    ap.add_argument("--first", type=int, default=1, help="number of the first clean/injected run (to resume)")
    ap.add_argument(
        "--deadline",
        type=float,
        default=None,
        help="start no clean/injected/busy run after this many seconds (a device call ends in time)",
    )
    ap.add_argument("--report-only", action="store_true")
    ap.add_argument("pytest_args", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    args.pytest_args = [a for a in args.pytest_args if a != "--"]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if not args.report_only:
        configs = Path(args.configs)
        for i in range(args.record_runs):
            run(args, f"record-{i + 1}", "--update-baselines=all", configs=configs)
        if args.record_starts:
            run(args, "record-starts", f"--llmbench-record={args.record_starts}", configs=configs)
        slow = slower_configs(args)
        t0 = time.monotonic()

        def in_time() -> bool:
            return args.deadline is None or time.monotonic() - t0 < args.deadline

        for i in range(max(args.clean, args.injected)):  # interleaved: drift hits both alike
            if i < args.clean and in_time():
                run(args, f"clean-{args.first + i}", configs=configs)
            if i < args.injected and in_time():
                run(args, f"injected-{args.first + i}", configs=slow)
        for i in range(args.busy):
            if in_time():
                run(args, f"busy-{args.first + i}", configs=configs, busy_after=args.busy_after)
    lines = [json.loads(ln) for ln in (out / "runs.jsonl").read_text().splitlines()]
    report(lines, args.inject)


if __name__ == "__main__":
    main()
