"""A house build farm for the H200 bisect (issue 39), through the ``pytest_llmbench_bisect_builds`` hook.

A CUDA build of llama.cpp takes ~4 minutes of the lent machine's 16 cores, and a lease is 30 minutes: building
every candidate before the first comparison would spend the lease on builds. ``gpu_versions.sh STEP=build``
starts them in the background instead (on cores the comparisons do not use), in the order the bisect will want
them, and this plugin hands the bisect builds that wait for theirs: a comparison runs while the next builds
compile, as Pinpoint's builders run beside its testers.

Before every step the bisect says which builds its next steps may compare (``pytest_llmbench_bisect_ahead``);
this plugin writes their versions to ``<builds folder>/wanted``, and build_loop.sh compiles the first of them that
is not built yet: a lease compiles what the search will need, not a guess made before its first step.

``LLMBENCH_DEVICE_VERSIONS="11046 11117 11218 11321 11434"`` lists the builds from good to bad;
``LLMBENCH_DEVICE_BUILDS`` is the folder holding ``<version>/build/bin`` and ``<version>/build.done`` (the
build's exit status); a version with a ``prebuilt`` entry in ``LLMBENCH_DEVICE_PREBUILT`` (``11434=/tmp/w/build/bin``)
is taken as it is. Load it with ``-p device_builds`` in the bisect's pytest arguments (this folder on
``PYTHONPATH``).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from pytest_llmbench.bisect.builds import BinaryFolder, BuildError, Materialized


@dataclass(frozen=True)
class BackgroundBuild:
    """A version compiling in the background: materialize waits for its ``build.done``, then is a folder."""

    version: str
    root: Path
    timeout_s: float = 1800.0

    @property
    def label(self) -> str:
        return f"b{self.version.split('.', 1)[0]}"

    def materialize(self, cache: Path) -> Materialized:
        done = self.root / self.version / "build.done"
        t0 = time.monotonic()
        # while a step waits for this build nothing is measured: build_loop.sh gives it all 16 cores
        waiting = self.root / f"waiting-{self.version}"
        if not done.is_file():
            self.root.mkdir(parents=True, exist_ok=True)
            waiting.touch()  # a build not started yet gets all cores; one under way is widened now
            widen(self.root / self.version)
        try:
            while not done.is_file():
                if time.monotonic() - t0 > self.timeout_s:
                    raise BuildError(f"build {self.label!r}: no {done} after {self.timeout_s:g} s")
                time.sleep(2)
        finally:
            waiting.unlink(missing_ok=True)
        status = done.read_text().strip()
        if status != "0":
            log = self.root / self.version / "build.log"
            raise BuildError(f"build {self.label!r}: cmake --build exited {status} (log {log})")
        found = BinaryFolder(self.root / self.version / "build" / "bin", label=self.label).materialize(cache)
        waited = time.monotonic() - t0
        return Materialized(
            found.label, bin_dir=found.bin_dir, identity={**found.identity, "version": self.version}, seconds=waited
        )


def widen(folder: Path) -> int:
    """Every process working under ``folder`` (a build's make and its compilers; the ones they start inherit
    it) onto all cores at nice 0: a build began beside a measurement on cores 4-15, niced, and a step now
    waits for it with nothing measured. How many processes moved (one that ended meanwhile is passed over)."""
    cores = range(os.cpu_count() or 1)
    moved = 0
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cwd = Path(os.readlink(proc / "cwd"))
            if cwd != folder and folder not in cwd.parents:
                continue
            for task in (proc / "task").iterdir():
                os.sched_setaffinity(int(task.name), cores)
            os.setpriority(os.PRIO_PROCESS, int(proc.name), 0)
        except OSError:
            continue
        moved += 1
    return moved


def _builds_root() -> Path:
    return Path(os.environ.get("LLMBENCH_DEVICE_BUILDS", "/tmp/w/versions"))


def _prebuilt() -> dict[str, str]:
    pairs = (p.split("=", 1) for p in os.environ.get("LLMBENCH_DEVICE_PREBUILT", "").split() if "=" in p)
    return dict(pairs)


@pytest.hookimpl
def pytest_llmbench_bisect_builds(config: pytest.Config, good: str, bad: str) -> list[object] | None:
    versions = os.environ.get("LLMBENCH_DEVICE_VERSIONS", "").split()
    if not versions:
        return None
    if versions[0] != good or versions[-1] != bad:
        raise ValueError(f"LLMBENCH_DEVICE_VERSIONS runs {versions[0]}..{versions[-1]}; --good/--bad say {good}..{bad}")
    root = _builds_root()
    prebuilt = _prebuilt()
    builds: list[object] = []
    for v in versions:
        if v in prebuilt:
            builds.append(BinaryFolder(Path(prebuilt[v]), label=f"b{v.split('.', 1)[0]}"))
        else:
            builds.append(BackgroundBuild(v if "." in v else f"{v}.0.0", root))
    return builds


@pytest.hookimpl
def pytest_llmbench_bisect_ahead(config: pytest.Config, builds: list[object]) -> None:
    """``wanted``: the versions the next steps may need, in that order (the loop skips those built; replaced whole)."""
    versions = [b.version for b in builds if isinstance(b, BackgroundBuild)]
    wanted = _builds_root() / "wanted"
    wanted.parent.mkdir(parents=True, exist_ok=True)
    tmp = wanted.with_suffix(".tmp")
    tmp.write_text("".join(f"{v}\n" for v in versions))
    tmp.replace(wanted)


if __name__ == "__main__":  # gpu_versions.sh STEP=rebuild: `python3 device_builds.py widen /tmp/w/rebuild`
    import sys

    if sys.argv[1:2] != ["widen"] or len(sys.argv) != 3:
        sys.exit("usage: device_builds.py widen FOLDER")
    print(f"widened {widen(Path(sys.argv[2]).resolve())} process(es) under {sys.argv[2]} to all cores, nice 0")
