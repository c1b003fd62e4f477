"""The nightly gate, for real on the CPU: 14 consecutive nights of local images run by
``python -m pytest_llmbench nightly`` exactly as a user runs it, one after the other, into a committed store.

The images (``python -m pytest_llmbench image build``, engineer 53's command; no registry):

    llmbench-nightly/llama-server:release      the pinned reference (the installed llama-server)
    llmbench-nightly/llama-server:nightly-01…07   the same server (each its own image: a label names the night)
    llmbench-nightly/llama-server:nightly-08…14   ``--top-k 0`` baked in: a real decode slowdown, ×1.10-1.17 TPOT
                                               (calibrate_slowdown.out.md), the sampler sorting the whole 49k vocabulary
    llmbench-nightly/llama-server:nightly-11   broken: a flag llama-server does not know, baked in

Each night is the nightly command over experiments/nightly/bench (one decode scenario, SmolLM2, 1 thread, the
docker launcher), its store ``experiments/data/nightly/store`` and the candidate list ``docker:<the nightly
tags>``. A night already in the store is not run again (the campaign resumes). Output: one section per night
(the command, its last lines, its headline), then history over the store.

    python experiments/nightly/campaign.py --out /tmp/nightly-campaign >> experiments/nightly/campaign.out.md
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "experiments" / "nightly" / "bench"
STORE = ROOT / "experiments" / "data" / "nightly" / "store"
REPO = "llmbench-nightly/llama-server"
SLOW, FIRST_SLOW, BROKEN, NIGHTS = "--top-k 0", 8, 11, 14
NEUTRAL = "--no-webui"  # every image gets the wrapper entrypoint; the configs already pass --no-webui


def image_args(n: int) -> str:
    if n == BROKEN:
        return f"{NEUTRAL} --this-nightly-is-broken"
    return f"{NEUTRAL} {SLOW}" if n >= FIRST_SLOW else NEUTRAL


def build_images() -> None:
    for tag, args in [("release", NEUTRAL), *((f"nightly-{n:02d}", image_args(n)) for n in range(1, NIGHTS + 1))]:
        cmd = [
            sys.executable,
            "-m",
            "pytest_llmbench",
            "image",
            "build",
            "--tag",
            f"{REPO}:{tag}",
            f"--args={args}",
            "--label",
            f"llmbench.nightly={tag}",
        ]
        out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.strip().splitlines()[-1]
        print(f"    {out}  ({args})")


def stored_nights() -> set[str]:
    return {json.loads(p.read_text())["night"] for p in STORE.glob("nights/*/night.json")}


def night_command(n: int, out: Path, budget: str, step_budget: str, bisect_budget: str) -> list[str]:
    return [
        "python",
        "-m",
        "pytest_llmbench",
        "nightly",
        "--reference",
        f"{REPO}:release",
        "--candidate",
        f"{REPO}:nightly-{n:02d}",
        "--store",
        os.path.relpath(STORE, BENCH),
        "--budget",
        budget,
        "--bisect-budget",
        bisect_budget,
        "--step-budget",
        step_budget,
        "--candidates-from",
        f"docker:{REPO}:nightly-*",
        "--out",
        str(out / f"nightly-{n:02d}"),
        "--",
        "test_nightly_bench.py",
        "--llmbench-configs",
        "configs.yaml",
    ]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, default=Path("/tmp/nightly-campaign"))
    ap.add_argument("--budget", default="150")
    ap.add_argument("--step-budget", default="150")
    ap.add_argument("--bisect-budget", default="30m")
    ap.add_argument("--nights", type=int, default=NIGHTS)
    ap.add_argument("--commit", action="store_true", help="git-commit the store after each night")
    args = ap.parse_args()
    print(f"## Campaign run of {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}\n\nImages:\n")
    build_images()
    done = stored_nights()
    for n in range(1, args.nights + 1):
        if f"nightly-{n:02d}" in done:
            continue
        cmd = night_command(n, args.out, args.budget, args.step_budget, args.bisect_budget)
        t0 = time.monotonic()
        proc = subprocess.run([sys.executable, *cmd[1:]], cwd=BENCH, capture_output=True, text=True)
        text = proc.stdout + proc.stderr
        (args.out / f"nightly-{n:02d}.log").parent.mkdir(parents=True, exist_ok=True)
        (args.out / f"nightly-{n:02d}.log").write_text(text)
        keep = [
            ln
            for ln in text.splitlines()
            if ln.startswith(
                ("nightly:", "bisect:", "  ", "llmbench", "REGRESSED", "equivalent", "inconclusive", "summary:")
            )
        ]
        print(f"\n### night {n:02d} ({time.monotonic() - t0:.0f} s, exit {proc.returncode})\n")
        print("    $ " + " ".join(cmd))
        for ln in keep[-14:]:
            print("    " + ln)
        sys.stdout.flush()
        if args.commit:
            subprocess.run(["git", "add", str(STORE)], cwd=ROOT, check=False)
            subprocess.run(
                ["git", "commit", "-q", "-m", f"nightly campaign: night {n:02d} stored", "--", str(STORE)],
                cwd=ROOT,
                check=False,
            )


if __name__ == "__main__":
    main()
