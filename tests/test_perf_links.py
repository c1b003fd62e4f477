"""Every claim's pointer into experiments/ resolves, and every experiments/ script has a row in its table.

README.md, docs/ and src/ docstrings back their numbers with a script and its output under experiments/ (the
project's lab notebook, kept out of benches/, which holds only what a user runs and copies).
Moving or deleting one of those files breaks no code, so nothing else would notice that the claim now
points at nothing. This test checks three things (issue 22):

- every relative markdown link ``[text](target)`` in README.md, docs/**/*.md, benches/**/*.md and experiments/**/*.md resolves
  to a file or folder;
- every ``experiments/...`` path named in those files, in src/, benches/ and experiments/ (a docstring, a command
  in an output's header, a step that gpu_compare.sh runs on the GPU box) exists. A path that belongs to
  another tree (``/tmp/x/experiments/...``, ``<commit>:experiments/...``) is not a path here and is
  skipped;
- every script (``*.py``, ``*.sh``) and output (``*.out.md``) under experiments is the target of a link in
  experiments/README.md.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PERF = ROOT / "experiments"
TABLE = PERF / "README.md"

LINK = re.compile(r"\[[^\]\n]*\]\(([^)\s]+)\)")
MENTION = re.compile(r"(?<![\w/.:$-])experiments/[\w./-]*[\w/]")


def _files(*patterns: str) -> list[Path]:
    """The files matching ``patterns``, less raw data and caches (data files are not read for paths)."""
    found = {p for pattern in patterns for p in ROOT.glob(pattern) if p.is_file()}
    return sorted(p for p in found if not p.is_relative_to(PERF / "data") and "__pycache__" not in p.parts)


DOCS = _files("README.md", "docs/**/*.md", "benches/**/*.md", "experiments/**/*.md")
SOURCES = DOCS + _files(
    "src/**/*.py", "tests/**/*.py", "benches/**/*.py", "benches/**/*.sh", "benches/**/*.yaml",
    "experiments/**/*.py", "experiments/**/*.sh", "experiments/**/*.yaml",
)


def _links(md: Path) -> list[tuple[int, str, Path]]:
    out = []
    for n, line in enumerate(md.read_text().splitlines(), 1):
        for m in LINK.finditer(line):
            target = m.group(1)
            if re.match(r"[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
                continue  # a URL or an anchor in the same page
            out.append((n, target, (md.parent / target.split("#", 1)[0]).resolve()))
    return out


def test_the_checked_files_are_found():
    names = {p.relative_to(ROOT).as_posix() for p in DOCS}
    assert {"README.md", "docs/COMPARE_STATS.md", "experiments/README.md"} <= names
    assert any(p.suffix == ".py" and p.is_relative_to(ROOT / "src") for p in SOURCES)


def test_every_relative_markdown_link_resolves():
    broken = [
        f"{md.relative_to(ROOT)}:{n}: {target}" for md in DOCS for n, target, path in _links(md) if not path.exists()
    ]
    assert not broken, "links to nothing:\n" + "\n".join(broken)


def test_every_named_experiments_path_exists():
    missing = [
        f"{f.relative_to(ROOT)}:{n}: {m.group(0)}"
        for f in SOURCES
        for n, line in enumerate(f.read_text().splitlines(), 1)
        for m in MENTION.finditer(line)
        if not (ROOT / m.group(0)).exists()
    ]
    assert not missing, "experiments paths that do not exist:\n" + "\n".join(missing)


def test_every_perf_script_and_output_is_in_the_table():
    linked = {path for _, _, path in _links(TABLE)}
    wanted = _files("experiments/**/*.py", "experiments/**/*.sh", "experiments/**/*.out.md")
    assert wanted, "no scripts found under experiments"
    absent = [str(p.relative_to(ROOT)) for p in wanted if p.resolve() not in linked]
    assert not absent, "not linked from experiments/README.md:\n" + "\n".join(absent)


def test_benches_holds_only_what_a_user_runs():
    """The lab notebook moved out (issue 36): no experiment scripts, campaign data or outputs under benches/."""
    stray = [
        str(p.relative_to(ROOT))
        for p in (ROOT / "benches").rglob("*")
        if p.is_file() and (p.name.endswith((".out.md", ".sh", ".jsonl")) or "perf" in p.relative_to(ROOT).parts)
    ]
    assert not stray, "experiments under benches/ (move them to experiments/):\n" + "\n".join(stray)
