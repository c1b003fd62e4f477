"""Per-prompt accept length read back from llama-server logs of accept_correlation.py reruns.

Salvage for reruns cut short: each request's ``print_timing`` line carries llama.cpp's own per-request
``mean len`` (accept length); requests run one at a time in prompt order, so the n-th line of every
rerun of one invocation is the same prompt.

    python experiments/stats/accept_correlation_logs.py /tmp/llmbench-corr-XXXX [...]
"""

import itertools
import re
import sys
from pathlib import Path

import numpy as np
from scipy import stats

LINE = re.compile(r"draft acceptance = [\d.]+ \(\s*\d+ accepted /\s*\d+ generated\), mean len =\s*([\d.]+)")

for root in map(Path, sys.argv[1:]):
    runs = [
        [float(m.group(1)) for m in map(LINE.search, (d / "server.log").read_text().splitlines()) if m]
        for d in sorted(root.iterdir())
    ]
    print(f"{root}: requests per rerun {[len(r) for r in runs]}")
    for (i, a), (j, b) in itertools.combinations(enumerate(runs), 2):
        n = min(len(a), len(b))
        x, y = np.array(a[:n]), np.array(b[:n])
        print(
            f"  reruns {i}-{j}: {n} prompts, means {x.mean():.3f} / {y.mean():.3f}, ρ = "
            f"{stats.pearsonr(x, y).statistic:.3f}, SD between {np.sqrt((x.var(ddof=1) + y.var(ddof=1)) / 2):.3f}, "
            f"SD diff {np.std(x - y, ddof=1):.3f}, identical {int(np.sum(x == y))}/{n}"
        )
