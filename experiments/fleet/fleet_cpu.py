"""The CPU suite as 3 shards run in parallel and merged, against the same suite unsharded.

    flock /tmp/llmbench-heavy.lock python experiments/fleet/fleet_cpu.py [-k EXPR] [--out experiments/fleet/fleet_cpu.out.md]

Both sides use a copy of benches/configs/cpu.yaml with ``-t 1`` (one llama-server thread, so three
servers fit 2 cores) and a copy of baselines/ (never written). It checks that the merged shards hold the
same records (by kind and key) and the same verdicts as the unsharded run, and that every server started
once; it writes the wall-clock of each run to the .out.md.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from fleet_compare import compare

SHARDS = 3


def one_thread_configs(folder: Path) -> Path:
    text = (ROOT / "benches" / "configs" / "cpu.yaml").read_text()
    assert '-t, "2"' in text, "cpu.yaml's shared flags changed: update this script"
    path = folder / "cpu-t1.yaml"
    path.write_text(text.replace('-t, "2"', '-t, "1"'))
    return path


def pytest_cmd(configs: Path, baselines: Path, results: Path, k_expr: str | None, shard: str | None) -> list[str]:
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "benches/",
        "-m",
        "cpu",
        "-p",
        "no:cacheprovider",
        "-q",
        f"--llmbench-configs={configs}",
        f"--baselines-dir={baselines}",
        f"--results-dir={results}",
    ]
    if k_expr:
        cmd += ["-k", k_expr]
    if shard:
        cmd += ["--llmbench-shard", shard]
    return cmd


def start(cmd: list[str], log: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    return subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=open(log, "w"), stderr=subprocess.STDOUT)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-k", dest="k_expr", default=None, help="pytest -k subset for both sides")
    ap.add_argument("--out", type=Path, default=ROOT / "experiments" / "fleet" / "fleet_cpu.out.md")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="llmbench-fleet-"))
    configs = one_thread_configs(work)
    for name in ["b0", *(f"b{k}" for k in range(1, SHARDS + 1))]:
        shutil.copytree(ROOT / "baselines", work / name)
    lines = [
        "# CPU suite: 3 shards in parallel, merged, vs unsharded",
        "",
        f"`flock /tmp/llmbench-heavy.lock python experiments/fleet/fleet_cpu.py{' -k ' + repr(args.k_expr) if args.k_expr else ''}`",
        f"(llama-server `-t 1` on both sides; {os.cpu_count()} cores; work folder {work})"
        + ("; the same -k subset of the CPU suite on both sides" if args.k_expr else ""),
        "",
    ]

    t0 = time.monotonic()
    cmd = pytest_cmd(configs, work / "b0", work / "unsharded", args.k_expr, None)
    rc_whole = start(cmd, work / "unsharded.log").wait()
    whole_s = time.monotonic() - t0

    t0 = time.monotonic()
    procs, ended = {}, {}
    for k in range(1, SHARDS + 1):
        cmd = pytest_cmd(configs, work / f"b{k}", work / f"shard-{k}", args.k_expr, f"{k}/{SHARDS}")
        procs[k] = start(cmd, work / f"shard-{k}.log")
    rcs = {}
    while len(rcs) < SHARDS:
        for k, p in procs.items():
            if k not in rcs and p.poll() is not None:
                rcs[k], ended[k] = p.returncode, time.monotonic() - t0
        time.sleep(0.5)
    fleet_s = time.monotonic() - t0

    t0 = time.monotonic()
    merge = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest_llmbench",
            "merge",
            str(work / "merged"),
            *(str(work / f"shard-{k}") for k in range(1, SHARDS + 1)),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
    )
    merge_s = time.monotonic() - t0

    lines += [
        "| run | exit | wall-clock |",
        "|---|---|---|",
        f"| unsharded (3 configs one after another) | {rc_whole} | {whole_s:.0f} s |",
    ]
    lines += [f"| shard {k}/{SHARDS} (in parallel) | {rcs[k]} | {ended[k]:.0f} s |" for k in sorted(rcs)]
    lines += [
        f"| 3 shards, first start to last end | | {fleet_s:.0f} s |",
        f"| merge | {merge.returncode} | {merge_s:.1f} s |",
        "",
    ]
    lines += ["merge output:", "", "```", merge.stdout.strip(), merge.stderr.strip(), "```", ""]
    if merge.returncode != 0:
        args.out.write_text("\n".join(lines) + "\n")
        print("\n".join(lines))
        return 1

    ok, table = compare(work / "unsharded", work / "merged")
    lines += table
    args.out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
