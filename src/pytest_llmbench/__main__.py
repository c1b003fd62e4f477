"""``python -m pytest_llmbench COMMAND …``: tools around a session: checking its configs, working on its
results folders afterwards, and the bisect.

Each command is one module under ``pytest_llmbench.cli`` with a ``main(argv) -> int``; adding one means
adding its module and one line in ``COMMANDS``.
"""

from __future__ import annotations

import importlib
import sys

#: command name → (module under pytest_llmbench.cli, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "report": ("report", "write report.html and summary.md for a results folder"),
    "compare": ("compare", "compare the same scenarios in two results folders (markdown, --html)"),
    "check-config": ("check_config", "validate config files without starting anything (a CI lint)"),
    "history": ("history", "change points and a trend page over many nights' results folders (--fail-on-new)"),
    "merge": ("merge", "merge the results (or --baselines) folders of --llmbench-shard runs into one"),
    "bench-serving": ("bench_serving", "write a results folder's scenarios as sglang bench_serving JSONL"),
    "compare-plan": ("compare_plan", "the plan table of a comparison session from a previous one's records (no GPU)"),
    "bisect": ("bisect", "find the first slower build between a good and a bad one (a comparison per step)"),
    "image": ("image", "build a local llama-server image from a llama.cpp build, flags baked in (no registry)"),
    "nightly": ("nightly", "gate tonight's build against the reference, store the night, bisect a regression"),
}


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print("usage: python -m pytest_llmbench COMMAND [ARGS…]\n\ncommands:")
        for name, (_, summary) in sorted(COMMANDS.items()):
            print(f"  {name:<13} {summary}")
        return 0 if argv else 2
    name, rest = argv[0], argv[1:]
    if name not in COMMANDS:
        print(
            f"pytest_llmbench: unknown command {name!r}; commands: {', '.join(sorted(COMMANDS)) or 'none'}",
            file=sys.stderr,
        )
        return 2
    module = importlib.import_module(f"pytest_llmbench.cli.{COMMANDS[name][0]}")
    return int(module.main(rest) or 0)


if __name__ == "__main__":
    sys.exit(main())
