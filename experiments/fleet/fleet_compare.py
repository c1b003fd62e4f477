"""Compare an unsharded results folder with the merged folder of its shards (used by fleet_cpu.py and
fleet_gpu.sh): the same records by kind and key, the same verdicts, every server started once.

    python experiments/fleet/fleet_compare.py UNSHARDED_DIR MERGED_DIR     # markdown to stdout; exit 1 if not
"""

from __future__ import annotations

import collections
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

from pytest_llmbench.records.results import iter_records
from pytest_llmbench.report.merge import SESSION_RECORDS

#: what identifies a record of each kind, so two runs can be compared as sets
KEYS = {
    "server": ("config",),
    "facts": ("config",),
    "scenario": ("config", "test_key", "scenario"),
    "test": ("config", "test_key"),
    "verdict": ("config", "test_key", "metric", "runner"),
    "decisions": ("config", "test_key", "dataset"),
}


def keyed(folder: Path) -> dict[str, collections.Counter]:
    out: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for rec in iter_records(folder):
        kind = rec.get("record")
        if kind in SESSION_RECORDS:  # one per session: a shard has its own (its own error budget)
            continue
        out[kind][tuple(rec.get(f) for f in KEYS.get(kind, ("config", "test_key")))] += 1
    return out


def statuses(folder: Path) -> dict[tuple, str]:
    return {tuple(r.get(f) for f in KEYS["verdict"]): r["status"] for r in iter_records(folder, "verdict")}


def compare(whole_dir: Path, merged_dir: Path) -> tuple[bool, list[str]]:
    """(same records and each server once, markdown lines)."""
    whole, merged = keyed(whole_dir), keyed(merged_dir)
    lines = ["| record kind | unsharded | merged shards | same keys |", "|---|---|---|---|"]
    same = True
    for kind in sorted(set(whole) | set(merged)):
        eq = whole[kind] == merged[kind]
        same &= eq
        lines.append(
            f"| {kind} | {sum(whole[kind].values())} | {sum(merged[kind].values())} | {'yes' if eq else 'NO'} |"
        )
    starts = {
        side: dict(collections.Counter(c[0] for c in d["server"].elements()))
        for side, d in (("unsharded", whole), ("merged", merged))
    }
    once = bool(starts["merged"]) and all(v == 1 for d in starts.values() for v in d.values())
    a, b = statuses(whole_dir), statuses(merged_dir)
    differ = sorted(((k, a.get(k), b.get(k)) for k in set(a) | set(b) if a.get(k) != b.get(k)), key=str)
    lines += [
        "",
        f"server starts per config: unsharded {starts['unsharded']}, merged {starts['merged']}",
        f"verdicts: {len(a)} unsharded, {len(b)} merged; same status for {len(a) - len(differ)}",
        f"status counts: unsharded {dict(collections.Counter(a.values()))}, "
        f"merged {dict(collections.Counter(b.values()))}",
    ]
    lines += [f"- {k}: unsharded {x}, sharded {y}" for k, x, y in differ]
    lines += [
        "",
        f"**same record set: {'yes' if same else 'NO'}; each server started once: {'yes' if once else 'NO'}**",
    ]
    return same and once, lines


if __name__ == "__main__":
    ok, out = compare(Path(sys.argv[1]), Path(sys.argv[2]))
    print("\n".join(out))
    sys.exit(0 if ok else 1)
