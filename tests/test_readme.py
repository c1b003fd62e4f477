"""The README opens on the user's job (issue 54): the two commands a fresh machine runs, then one screen with the
install for a GPU runner and for one's own repo, the nightly image gate and what each verdict and exit status
means; the reference sections are docs/ pages it links to.

The screen's examples are run, not just read: the own-repo config passes check-config, pytest collects the
own-repo test from a folder with no conftest.py (the plugin comes from the pytest11 entry point) with the
nightly command's pytest arguments, and the nightly command's own options parse. Every ``--llmbench-*`` option
the README or docs/ name is one pytest knows.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_llmbench.cli import nightly

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
SCREEN = 75  # lines: the two commands are ~300 characters each, so this is about one screen
LINK = re.compile(r"\[[^\]\n]*\]\(([^)\s#]+)[^)\s]*\)")


def _screen() -> str:
    return "\n".join(README.read_text().splitlines()[:SCREEN])


def _fenced(text: str, lang: str) -> str:
    assert f"```{lang}\n" in text, f"no ```{lang} block on the README's first screen"
    return text.split(f"```{lang}\n", 1)[1].split("```", 1)[0]


def _nightly_command(text: str) -> list[str]:
    lines = text.splitlines()
    start = next((i for i, ln in enumerate(lines) if ln.strip().startswith("python -m pytest_llmbench nightly")), None)
    assert start is not None, "no nightly command on the README's first screen"
    command = []
    for ln in lines[start:]:
        command.append(ln.strip().removesuffix("\\"))
        if not ln.rstrip().endswith("\\"):
            break
    return shlex.split(" ".join(command))[4:]  # after "python -m pytest_llmbench nightly"


def test_the_readme_starts_with_the_two_commands_ci_runs():
    """CI (.ci/run) runs the second command; both start from the same portable llama.cpp build."""
    lines = README.read_text().splitlines()
    commands = [ln.strip() for ln in lines[:20] if ln.startswith("    ")]
    assert len(commands) == 2
    assert commands[0].endswith("&& pytest benches/ -m cpu")
    assert commands[1].endswith("&& pytest tests/ -p no:cacheprovider -n 2")
    cmake = re.search(r'CMAKE_ARGS="[^"]*"', (ROOT / ".ci" / "run").read_text())
    assert cmake and all(c.startswith(cmake.group(0)) for c in commands)


def test_the_first_screen_says_what_each_verdict_and_exit_status_means():
    screen = _screen()
    rows = {m.group(1).strip("* ") for m in re.finditer(r"^\| ([^|]+?) \|", screen, re.M)}
    for verdict in ("pass / equivalent", "REGRESSED", "improved", "new", "inconclusive", "NOT JUDGED", "FAILED"):
        assert verdict in rows, f"no row for {verdict!r} in the first screen's verdict table"
    statuses = screen.split("Exit status", 1)[1] if "Exit status" in screen else ""
    for status in ("**0**", "**1**", "**2**", "**4**", "**5**", "`nightly`", "`bisect`", "--fail-on-new"):
        assert status in statuses, f"the exit statuses do not say {status}"


def test_the_first_screen_installs_a_gpu_runner_without_building_llama_cpp():
    screen = _screen()
    install = [ln for ln in screen.splitlines() if ln.strip().startswith("pip install") and "[gpu" in ln]
    assert install, "no install line with the gpu extra"
    assert not any("CMAKE_ARGS" in ln or "[cpu" in ln for ln in install)
    assert "--gpus" in screen and "LLAMA_CPP_BIN_DIR" in screen  # what the runner needs: docker or an engine


def test_the_nightly_command_parses_with_the_real_options():
    own, pytest_args = _split(_nightly_command(_screen()))
    args = nightly._parser().parse_args(own)
    assert args.reference and args.candidate and args.store
    assert pytest_args[0].startswith("benches/") and "--llmbench-configs" in pytest_args


def _split(argv: list[str]) -> tuple[list[str], list[str]]:
    assert "--" in argv, "the nightly command gives its bench selection after --"
    return argv[: argv.index("--")], argv[argv.index("--") + 1 :]


def test_the_own_repo_example_runs_from_a_folder_without_a_conftest(tmp_path):
    """The YAML and the test of the first screen, in a new folder: check-config accepts the YAML, and pytest
    collects the test with the nightly command's selection (the plugin found by its entry point)."""
    screen = _screen()
    yaml_block, py_block = _fenced(screen, "yaml"), _fenced(screen, "python")
    yaml_path = tmp_path / yaml_block.splitlines()[0].removeprefix("# ").strip()
    py_path = tmp_path / py_block.splitlines()[0].removeprefix("# ").strip()
    assert yaml_path.parent == tmp_path / "benches" / "configs" and py_path.parent == tmp_path / "benches"
    yaml_path.parent.mkdir(parents=True)
    yaml_path.write_text(yaml_block)
    py_path.write_text(py_block)
    assert not list(tmp_path.rglob("conftest.py"))

    check = subprocess.run(
        [sys.executable, "-m", "pytest_llmbench", "check-config", "benches/configs"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert check.returncode == 0, check.stdout + check.stderr
    _, pytest_args = _split(_nightly_command(screen))
    run = subprocess.run(
        [sys.executable, "-m", "pytest", *pytest_args, "--collect-only", "-q", "-p", "no:cacheprovider"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert re.search(r"^benches/test_serving\.py::test_chat\[\S+\]$", run.stdout, re.M), run.stdout
    assert "1 test collected" in run.stdout


def test_every_docs_page_is_reachable_from_the_readme():
    """The reference sections live in docs/: each page is linked from the README or from a page it links."""
    pages = {p.resolve() for p in (ROOT / "docs").glob("*.md")}
    seen: set[Path] = set()
    todo = [README.resolve()]
    while todo:
        page = todo.pop()
        for target in LINK.findall(page.read_text()):
            path = (page.parent / target).resolve()
            if path in pages and path not in seen:
                seen.add(path)
                todo.append(path)
    assert sorted(str(p.relative_to(ROOT)) for p in pages - seen) == []


@pytest.fixture(scope="module")
def pytest_options() -> set[str]:
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "--help", "-p", "no:cacheprovider"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return set(re.findall(r"--llmbench-[a-z0-9-]*[a-z0-9]", out))


def test_every_llmbench_option_the_docs_name_exists(pytest_options):
    files = [README, *sorted((ROOT / "docs").rglob("*.md"))]
    named = {
        (f.relative_to(ROOT).as_posix(), m.group(0))
        for f in files
        for m in re.finditer(r"--llmbench-[a-z0-9-]*[a-z0-9](?![a-z0-9*-])", f.read_text())
    }
    assert pytest_options, "pytest --help lists no llmbench option"
    unknown = sorted(f"{f}: {opt}" for f, opt in named if opt not in pytest_options)
    assert unknown == [], "options that do not exist:\n" + "\n".join(unknown)
