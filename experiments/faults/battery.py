"""The fault battery (issues 52 and 53): each fault as a user's CI meets it, a ``pytest`` (or CLI) subprocess
over a small generated bench folder with the real llama-server + SmolLM2, the fault applied from outside.

    nice python experiments/faults/battery.py [--only NAME,NAME] [--out experiments/faults/battery.out.md]

For each fault: how it was applied, the exit status (and the documented one), the line the user saw, the
results kept, processes left (descendants of pytest and listeners on its servers' ports, by psutil) and
containers left (the project's label). "Handled cleanly" = the documented exit status, a message naming the
server/file/key, the finished scenarios' results kept, nothing left running. The out.md is rewritten as each
fault finishes, so an interrupted battery still says how far it got."""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import harness as h
from tests.faults.test_secrets import PLANTED
from tests.faults.test_server_faults import PAUSED_BETWEEN_SCENARIOS
from tests.faults.test_stream_faults import CONFTEST as ODD_CONFTEST
from tests.faults.test_stream_faults import DOUBLE

LOGS: Path | None = None  # --logs: each run's terminal output, for reading after
IMAGE = "llmbench-battery/llama-server:plain"
SMOL = "{name: smol, marks: [cpu]}"


@dataclass
class Row:
    group: str
    fault: str
    applied: str
    exit: str
    documented: str
    message: str
    kept: str
    procs: list[str]
    containers: list[str]
    problems: list[str]
    seconds: float

    @property
    def clean(self) -> bool:
        return not self.problems and not self.procs and not self.containers


def judge(
    group: str,
    fault: str,
    applied: str,
    run: h.Run,
    documented: set[int | None],
    needles: tuple[str, ...],
    results: Path | None,
    *,
    min_scenarios: int = 0,
    forbid: tuple[str, ...] = ("Traceback", "INTERNALERROR"),
    extra: list[str] | None = None,
) -> Row:
    problems = list(extra or [])
    if LOGS:
        slug = "".join(c if c.isalnum() else "-" for c in f"{group}-{fault}")[:80]
        (LOGS / f"{slug}.log").write_text(run.out)
    if run.ret not in documented:
        problems.append(f"exit {run.ret}, documented {sorted(documented, key=str)}")
    message = h.line_with(run.out, *needles)
    if not message:
        problems.append(f"no line with {needles!r}")
        message = "(none) last: " + h.line_with(run.out.strip().splitlines()[-1] if run.out.strip() else "", "")
    problems += [f"{bad!r} in the output" for bad in forbid if bad in run.out]
    if "NOT APPLIED" in run.fault_note or "TIMED OUT" in run.fault_note:
        problems.append(run.fault_note)
    scenarios = sum(r.get("record") == "scenario" for r in h.results_records(results)) if results else 0
    if scenarios < min_scenarios:
        problems.append(f"{scenarios} scenario records kept, expected ≥ {min_scenarios}")
    kept = h.kept(results) if results else "—"
    procs = h.processes_left(run)
    containers = h.containers_of(run.owners | set(run.seen))
    return Row(
        group, fault, applied, str(run.ret), "/".join(map(str, sorted(documented, key=str))), message, kept,
        procs, containers, problems, run.elapsed,
    )  # fmt: skip


def sig_pytest(sig: signal.Signals) -> Callable:
    def apply(proc: subprocess.Popen, info: dict) -> str:
        os.kill(proc.pid, sig)
        return f"{sig.name} to pytest"

    return apply


def sig_server(sig: signal.Signals) -> Callable:
    def apply(proc: subprocess.Popen, info: dict) -> str:
        os.killpg(info["pgid"], sig)
        return f"{sig.name} to the server's group"

    return apply


# --- the eight that held at 0dd9ff1 --------------------------------------------------------------------------


def busy_session(w: Path, fault: Callable, *, stall: float = 120, docker: str = "", later: bool = True, **kw):
    tests = h.BUSY + h.tiny_test("first", "test_a_first") + h.long_test(stall, "test_b_long")
    if later:
        tests += h.tiny_test("later", "test_c_later")
    p = h.project(w, h.smol(SMOL, docker_image=docker), {"test_bench": tests})
    return p, h.pytest_run(p, f"--results-dir={p / 'results'}", "--llmbench-report", fault=fault, **kw)


def held_server_killed(w: Path) -> Row:
    p, run = busy_session(w, sig_server(signal.SIGKILL))
    return judge("held", "server kill -9 mid-scenario", "SIGKILL to llama-server's group once 128 tokens were "
                 "generated", run, {1}, ("server smol exited (code -9", "during scenario long"), p / "results", min_scenarios=2)  # fmt: skip


def held_server_stopped(w: Path) -> Row:
    p, run = busy_session(w, sig_server(signal.SIGSTOP), stall=3)
    return judge("held", "server SIGSTOP mid-scenario (stall_timeout_s=3)", "SIGSTOP to llama-server's group",
                 run, {1}, ("server smol not responding",), p / "results", min_scenarios=2)  # fmt: skip


def held_ctrl_c(w: Path) -> Row:
    p, run = busy_session(w, sig_pytest(signal.SIGINT))
    return judge("held", "Ctrl-C mid-scenario", "SIGINT to pytest", run, {2}, ("llmbench: FAILED — pytest interrupted",), p / "results",
                 min_scenarios=2)  # fmt: skip


def held_xdist(w: Path) -> Row:
    configs = h.smol("{name: smol_a, marks: [cpu]}", "{name: smol_b, marks: [cpu]}")
    p = h.project(w, configs, {"test_bench": h.tiny_test()})
    run = h.pytest_run(p, "-n", "2", f"--results-dir={p / 'results'}", "--llmbench-report")
    return judge("held", "`-n 2` with two configs", "pytest -n 2", run, {0}, ("llmbench:", "exit status 0"),
                 p / "results", min_scenarios=2)  # fmt: skip


def held_cli_bad_input(w: Path) -> Row:
    p = h.project(w, h.smol("{name: smol, gpus: many}"), {})
    bad = p / "configs" / "servers.yaml"
    run = h.pytest_run(p, command=[sys.executable, "-m", "pytest_llmbench", "check-config", str(bad)])
    return judge("held", "a CLI's bad input (check-config, `gpus: many`)", "check-config FILE", run, {1},
                 (str(bad), "gpus"), None)  # fmt: skip


def held_pytest_killed(w: Path) -> Row:
    p, run = busy_session(w, sig_pytest(signal.SIGKILL))
    row = judge("held", "pytest kill -9 mid-scenario", "SIGKILL to pytest", run, {-9}, ("test_bench.py",),
                p / "results", min_scenarios=1, forbid=())  # fmt: skip
    last = run.out.strip().splitlines()[-1] if run.out.strip() else ""
    row.message = f"(nothing: pytest is gone; its output ends at `{last.strip()[:80]}`)".replace("|", "\\|")
    return row


ARM_KILL = """
import json, os

BLOCKS = []

def pytest_llmbench_record(config, record, item):
    if record["record"] == "comparison_block" and not record["warmup"]:
        BLOCKS.append(record)
        if len(BLOCKS) == 4:
            with open("fault_now.tmp", "w") as f:
                json.dump({"port": 0, "pgid": None, "container": None}, f)
            os.replace("fault_now.tmp", "fault_now.json")
"""


def compare_session(w: Path, fault: Callable, conftest: str = ARM_KILL) -> tuple[Path, h.Run]:
    from pytest_llmbench.engines.llamacpp import llamacpp_binary

    folder = str(llamacpp_binary().parent)
    p = h.project(w, h.smol(SMOL), {"test_bench": h.tiny_test()}, conftest=conftest)
    run = h.pytest_run(
        p, f"--results-dir={p / 'results'}", "--llmbench-report", f"--llmbench-reference-bin={folder}",
        f"--llmbench-candidate-bin={folder}", "--llmbench-max-rounds=16", "-o",
        "llmbench_compare_restart_rounds=0", fault=fault,
    )  # fmt: skip
    return p, run


def kill_an_arm(proc: subprocess.Popen, info: dict) -> str:
    import psutil

    servers = [c for c in psutil.Process(proc.pid).children(recursive=True) if c.name() == "llama-server"]
    servers[0].kill()
    return f"SIGKILL to arm server pid {servers[0].pid} of {len(servers)}"


def held_arm_killed(w: Path) -> Row:
    p, run = compare_session(w, kill_an_arm)
    return judge("held", "an arm's server killed mid-comparison", "SIGKILL to one arm's llama-server after 4 "
                 "blocks", run, {1}, ("exited (code -9", "arm)"), p / "results")  # fmt: skip


def held_bad_option(w: Path) -> Row:
    p = h.project(w, h.smol(SMOL), {"test_bench": h.tiny_test()})
    run = h.pytest_run(p, "--gate-alpha=lots", f"--results-dir={p / 'results'}")
    return judge("held", "bad option value (`--gate-alpha=lots`)", "pytest --gate-alpha=lots", run, {4},
                 ("--gate-alpha",), None)  # fmt: skip


# --- issue 52's fourteen -------------------------------------------------------------------------------------


def d01_odd_chunk(w: Path) -> Row:
    cfg = "configs:\n  - {name: odd, engine: odd-stream, model: m.gguf, startup_timeout: 30}\n"
    test = (
        '\ndef test_odd(llm_server, bench):\n    prompts = ["fine", "ODD:delta", "fine", "ODD:content", "ODD:count"]\n'
        '    bench.run(Scenario("s", dataset="prompts", num_prompts=5, concurrency=2, warmup=1), prompts=prompts)\n'
    )
    p = h.project(w, cfg, {"test_odd": test}, conftest=ODD_CONFTEST)
    (p / "double.py").write_text(DOUBLE)
    (p / "configs" / "m.gguf").write_bytes(b"")
    run = h.pytest_run(p, f"--results-dir={p / 'results'}", "-rA")
    errors = [r["error"] for sc in h.results_records(p / "results") for r in sc.get("requests", []) if not r["ok"]]
    row = judge("52.1", "stream chunk of the wrong shape", "a protocol double sends `delta: \"oops\"`, integer "
                "content, string completion_tokens", run, {0}, ("passed",), p / "results", min_scenarios=1,
                extra=[] if len(errors) == 3 and all("malformed chunk" in e for e in errors) else [f"errors {errors}"])  # fmt: skip
    row.message = f"passed; results.jsonl: {errors[0] if errors else '(no request error)'}"[:220]
    return row


def d02_secrets(w: Path) -> Row:
    env = '{OPENAI_KEY: "{env:P_OPENAI}", DB_PASS: "{env:P_DBPASS}"}'
    args = '--hf-token, "{env:P_FLAG}", -hft, "{env:P_SHORT}"'
    configs = h.smol(f"{{name: good, env: {env}, args: [{args}]}}", f"{{name: bad, env: {env}, args: [{args}, --no-such-flag]}}")  # fmt: skip
    p = h.project(w, configs, {"test_bench": h.tiny_test()})
    res = p / "results"
    run = h.pytest_run(p, f"--results-dir={res}", f"--junitxml={res / 'junit.xml'}", "--llmbench-report", env=PLANTED)
    texts = {"terminal": run.out} | {
        str(f.relative_to(p)): f.read_text(errors="replace") for f in res.rglob("*") if f.is_file()
    }
    found = [f"{k} in {where}" for where, t in texts.items() for k, v in PLANTED.items() if v in t]
    row = judge("52.2", "secrets in `-hft`, `OPENAI_KEY`, `DB_PASS`", "planted values, one start that works and one "
                "that fails; every file of the results folder and the terminal grepped", run, {1},
                ("config bad",), res, min_scenarios=1, extra=found)  # fmt: skip
    row.message = f"{len(texts)} outputs grepped, planted values found: {len(found)}; " + row.message
    return row


def d03_empty_baseline(w: Path) -> Row:
    p = h.project(w, h.smol("{name: smol}"), {"test_bench": h.tiny_test()})
    (p / "baselines").mkdir()
    (p / "baselines" / "smol.yaml").write_text("")
    run = h.pytest_run(p, f"--baselines-dir={p / 'baselines'}", f"--results-dir={p / 'results'}")
    return judge("52.3", "empty (0-byte) baseline file", "baselines/smol.yaml truncated to 0 bytes", run, {4},
                 ("smol.yaml", "empty"), None)  # fmt: skip


def d04_control_call_hang(w: Path) -> Row:
    p = h.project(w, h.smol(SMOL), {"test_paused": PAUSED_BETWEEN_SCENARIOS.replace("from pytest_llmbench import Scenario\n", "")})  # fmt: skip
    run = h.pytest_run(p, f"--results-dir={p / 'results'}")
    return judge("52.4", "a control call hangs (`/tokenize`)", "the test file SIGSTOPs the server between "
                 "scenarios", run, {1}, ("not responding", "/tokenize"), p / "results", min_scenarios=1)  # fmt: skip


def d05_torn_line(w: Path) -> Row:
    p = h.project(w, h.smol(SMOL), {"test_bench": h.tiny_test()})
    res = p / "results"
    h.pytest_run(p, f"--results-dir={res}")
    with open(res / "results.jsonl", "a") as f:
        f.write('{"record": "scenario", "config": "smol", "metr')
    run = h.pytest_run(p, f"--results-dir={res}", "--llmbench-report")
    return judge("52.5", "torn last line in a reused results.jsonl", "a first session, then half a line appended, "
                 "then a second session", run, {0}, ("cut short",), res, min_scenarios=2)  # fmt: skip


def d06_every_start_fails(w: Path) -> Row:
    p = h.project(w, h.smol("{name: smol, args: [--no-such-flag]}"), {"test_bench": h.tiny_test()})
    run = h.pytest_run(p, f"--results-dir={p / 'results'}", "--llmbench-report")
    missing = [n for n in ("summary.md", "report.html") if not (p / "results" / n).exists()]
    return judge("52.6", "every server fails to start", "`args: [--no-such-flag]`", run, {1},
                 ("llmbench: FAILED",), None, extra=[f"no {m}" for m in missing])  # fmt: skip


def double_ctrl_c(proc: subprocess.Popen, info: dict) -> str:
    os.kill(proc.pid, signal.SIGINT)
    h.wait_port_closed(info["port"])
    os.kill(proc.pid, signal.SIGINT)
    return "SIGINT, then SIGINT once the server's port closed"


def d07_double_ctrl_c(w: Path) -> Row:
    p, run = busy_session(w, double_ctrl_c)
    summary = (p / "results" / "summary.md").read_text() if (p / "results" / "summary.md").exists() else ""
    bad = [] if "exit status 2" in summary else ["summary.md does not say exit status 2"]
    return judge("52.7", "double Ctrl-C", "SIGINT to pytest, again while it stops the server", run, {2},
                 ("SIGINT then SIGINT",), p / "results", min_scenarios=2, extra=bad)  # fmt: skip


def d08_sigterm(w: Path) -> Row:
    p, run = busy_session(w, sig_pytest(signal.SIGTERM))
    bad = [] if (p / "results" / "summary.md").exists() else ["no summary.md"]
    return judge("52.8", "SIGTERM (CI cancel)", "SIGTERM to pytest", run, {143}, ("terminated by SIGTERM",),
                 p / "results", min_scenarios=2, extra=bad)  # fmt: skip


def d09_two_sessions(w: Path) -> Row:
    tests = {"test_alpha": h.BUSY + h.long_test(fn="test_alpha"), "test_beta": h.tiny_test("beta_sc")}
    p = h.project(w, h.smol(SMOL), tests)
    res = p / "results"
    second: list[h.Run] = []

    def start_second(proc: subprocess.Popen, info: dict) -> str:
        second.append(h.pytest_run(p, "test_beta.py", f"--results-dir={res}", "--llmbench-report"))
        return "second session ran while the first's scenario was busy"

    run = h.pytest_run(p, "test_alpha.py", f"--results-dir={res}", "--llmbench-report", fault=start_second)
    b = second[0] if second else h.Run(None, "", 0)
    ids = {r.get("session_id") for r in h.results_records(res)}
    bad = [] if len(ids) == 2 else [f"session ids {ids}"]
    bad += [] if b.ret == 0 else [f"second session exit {b.ret}"]
    bad += ["first headline counts beta_sc"] if "beta_sc" in run.out else []
    bad += [] if len(list(res.rglob("server*.log"))) == 2 else ["server logs shared"]
    run.seen |= b.seen
    run.ports |= b.ports
    row = judge("52.9", "two sessions, one `--results-dir`", "a second pytest into the same folder while the first "
                "runs", run, {0}, ("llmbench:", "exit status 0"), res, min_scenarios=2, extra=bad)  # fmt: skip
    row.exit = f"{run.ret}, {b.ret}"
    return row


def d10_api_key(w: Path) -> Row:
    p = h.project(w, h.smol('{name: keyed, args: [--api-key, "{env:BATTERY_KEY}"]}'), {"test_bench": h.tiny_test()})
    run = h.pytest_run(p, f"--results-dir={p / 'results'}", env={"BATTERY_KEY": "sk-battery-Qw93value"})
    bad = ["the key in the output"] if "sk-battery-Qw93value" in run.out else []
    return judge("52.10", "server with `--api-key`, no `api_key_env`", "config args `--api-key {env:…}`", run, {1},
                 ("HTTP 401",), None, extra=bad)  # fmt: skip


def d11_start_failure_once(w: Path) -> Row:
    p = h.project(w, h.smol("{name: smol, args: [--no-such-flag]}"), {"test_bench": h.tiny_test()})
    run = h.pytest_run(p, f"--results-dir={p / 'results'}")
    return judge("52.11", "start failure printed once", "`args: [--no-such-flag]`", run, {1},
                 ("server exited (code 1) before becoming ready",), None, forbid=("Traceback", "During handling"))  # fmt: skip


def d12_non_utf8(w: Path) -> Row:
    p = h.project(w, "", {"test_bench": h.tiny_test()})
    (p / "configs" / "servers.yaml").write_bytes(h.smol("{name: smol, description: 'caf\xe9'}").encode("latin-1"))
    run = h.pytest_run(p, f"--results-dir={p / 'results'}")
    return judge("52.12", "non-UTF-8 config", "a config saved as Latin-1", run, {4}, ("servers.yaml", "not UTF-8"),
                 None)  # fmt: skip


def d12_no_config(w: Path) -> Row:
    p = h.project(w, "configs: []\n", {"test_bench": h.tiny_test()})
    run = h.pytest_run(p, f"--results-dir={p / 'results'}")
    return judge("52.12", "`configs: []`", "an empty configs list", run, {0}, ("no server config selected",), None)


def d12_error_once(w: Path) -> Row:
    tests = {f"test_{n}": h.tiny_test() for n in "abc"}
    p = h.project(w, h.smol("{name: smol, gpus: many}"), tests)
    run = h.pytest_run(p, f"--results-dir={p / 'results'}")
    n = run.out.count("must be an integer")
    return judge("52.12", "a config error with three test modules", "`gpus: many`", run, {4}, ("gpus",), None,
                 extra=[] if n == 1 else [f"said {n} times"])  # fmt: skip


def d13_proc(w: Path) -> Row:
    p = h.project(w, h.smol(SMOL), {"test_bench": h.tiny_test()})
    run = h.pytest_run(p, "--results-dir=/proc/llmbench-results")
    return judge("52.13", "`--results-dir` under /proc", "--results-dir=/proc/llmbench-results", run, {4},
                 ("/proc/llmbench-results",), None)  # fmt: skip


FILL = """
def test_zz_disk_fills(llm_server):
    import os
    with open(os.environ["FILLER"], "wb") as f:
        try:
            while True:
                f.write(b"x" * 65536)
                f.flush()
        except OSError:
            pass
    os.truncate(os.environ["FILLER"], os.path.getsize(os.environ["FILLER"]) - 32 * 1024)
"""


def d13_full_disk(w: Path) -> Row:
    p = h.project(w, h.smol(SMOL), {"test_bench": h.tiny_test() + FILL})
    disk = w / "disk"
    disk.mkdir()
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(disk)], capture_output=True)
    if made.returncode:
        return Row("52.13", "full disk", "not tried: no tmpfs here", "", "1", made.stderr.decode()[:100], "", [], [],
                   ["not tried"], 0)  # fmt: skip
    try:
        res = disk / "results"
        res.mkdir()
        (res / "report.html").write_text("<html>old</html>\n")
        run = h.pytest_run(p, f"--results-dir={res}", "--llmbench-report", env={"FILLER": str(disk / "filler")})
        bad = [] if (res / "report.html").read_text() == "<html>old</html>\n" else ["report.html changed"]
        return judge("52.13", "full disk", "a 4 MiB tmpfs filled by a test", run, {1}, ("No space left",), res,
                     min_scenarios=1, extra=bad)  # fmt: skip
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


COMPARE_CTRL_C = ARM_KILL


def d14_interrupted_comparison(w: Path) -> Row:
    p, run = compare_session(w, sig_pytest(signal.SIGINT))
    comps = [r for r in h.results_records(p / "results") if r.get("record") == "comparison"]
    bad = [] if comps and all(c["stop"] == "interrupted" for c in comps) else ["no interrupted comparison row"]
    return judge("52.14", "Ctrl-C mid-comparison", "SIGINT to pytest after 4 blocks", run, {2},
                 ("llmbench: FAILED — pytest interrupted",), p / "results", extra=bad)  # fmt: skip


def d14_merge_empty(w: Path) -> Row:
    (w / "empty").mkdir(parents=True)
    cmd = [sys.executable, "-m", "pytest_llmbench", "merge", str(w / "out"), str(w / "empty")]
    run = h.pytest_run(w, command=cmd)
    return judge("52.14", "`merge OUT emptydir`", "merge of an empty folder", run, {1}, (str(w / "empty"),), None)


def d14_history_last(w: Path) -> Row:
    w.mkdir(parents=True)
    run = h.pytest_run(w, command=[sys.executable, "-m", "pytest_llmbench", "history", str(w), "--last", "-1"])
    return judge("52.14", "`history --last -1`", "a negative --last", run, {2}, ("argument --last",), None)


# --- issue 53: container faults ------------------------------------------------------------------------------


def docker_kill(proc: subprocess.Popen, info: dict) -> str:
    h.docker().containers.get(info["container"]).kill()
    return f"`docker kill {info['container']}`"


def k1_docker_kill(w: Path) -> Row:
    p, run = busy_session(w, docker_kill, docker=IMAGE)
    tail = [] if "--- last" in run.out else ["no container log tail shown"]
    return judge("53", "`docker kill` mid-scenario", "docker kill of the server's container", run, {1},
                 ("server smol exited", "during scenario long"), p / "results", min_scenarios=2, extra=tail)  # fmt: skip


def k2_docker_ctrl_c(w: Path) -> Row:
    p, run = busy_session(w, sig_pytest(signal.SIGINT), docker=IMAGE)
    return judge("53", "Ctrl-C mid-scenario (docker)", "SIGINT to pytest", run, {2}, ("llmbench: FAILED — pytest interrupted",),
                 p / "results", min_scenarios=2)  # fmt: skip


def k3_docker_pytest_killed(w: Path) -> Row:
    p, run = busy_session(w, sig_pytest(signal.SIGKILL), docker=IMAGE, later=False)
    time.sleep(2)
    orphans = h.containers_of(run.owners)
    nxt = h.pytest_run(p, "-k", "first", f"--results-dir={p / 'results2'}")
    nxt.owners |= run.owners
    nxt.seen |= run.seen
    row = judge("53", "pytest kill -9 mid-scenario (docker), then the next session", "SIGKILL to pytest; a new "
                "session in the same folder", nxt, {0}, ("removed", "left by dead sessions"), p / "results",
                min_scenarios=1,
                extra=[] if run.ret == -9 else [f"first exit {run.ret}"])  # fmt: skip
    row.exit = f"{run.ret}, then {nxt.ret}"
    row.kept += f"; after the kill: {len(orphans)} container(s) until the next session"
    return row


FAULTS: dict[str, Callable[[Path], Row]] = {
    f.__name__: f
    for f in (
        held_server_killed, held_server_stopped, held_ctrl_c, held_xdist, held_cli_bad_input, held_pytest_killed,
        held_arm_killed, held_bad_option, d01_odd_chunk, d02_secrets, d03_empty_baseline, d04_control_call_hang,
        d05_torn_line, d06_every_start_fails, d07_double_ctrl_c, d08_sigterm, d09_two_sessions, d10_api_key,
        d11_start_failure_once, d12_non_utf8, d12_no_config, d12_error_once, d13_proc, d13_full_disk,
        d14_interrupted_comparison, d14_merge_empty, d14_history_last, k1_docker_kill, k2_docker_ctrl_c,
        k3_docker_pytest_killed,
    )
}  # fmt: skip


def write(out: Path, rows: list[Row], started: float, planned: int, header: str) -> None:
    lines = [
        "# Fault battery (issues 52 and 53)",
        "",
        header,
        "",
        "| # | group | fault | how applied | exit (documented) | the line the user saw | results kept | processes left "
        "| containers left | cleanly? |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for i, r in enumerate(rows, 1):
        ok = "yes" if r.clean else "NO: " + "; ".join(r.problems)[:200].replace("|", "\\|")
        lines.append(
            f"| {i} | {r.group} | {r.fault} | {r.applied} | {r.exit} ({r.documented}) | `{r.message}` | {r.kept} | "
            f"{', '.join(r.procs) or 0} | {', '.join(r.containers) or 0} | {ok} |"
        )
    procs = sum(len(r.procs) for r in rows)
    conts = sum(len(r.containers) for r in rows)
    lines += [
        "",
        f"**Totals:** faults tried {len(rows)} of {planned}, handled cleanly {sum(r.clean for r in rows)}, "
        f"processes left {procs}, containers left {conts}; {time.monotonic() - started:.0f} s in all "
        f"(per fault: {', '.join(f'{i}: {r.seconds:.0f} s' for i, r in enumerate(rows, 1))}).",
    ]
    out.write_text("\n".join(lines) + "\n")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="", help="comma-separated fault function names")
    ap.add_argument("--logs", type=Path, help="a folder for each run's terminal output")
    ap.add_argument("--out", type=Path, default=Path(__file__).with_name("battery.out.md"))
    args = ap.parse_args()
    global LOGS
    LOGS = args.logs
    if LOGS:
        LOGS.mkdir(parents=True, exist_ok=True)
    chosen = [n for n in FAULTS if not args.only or n in args.only.split(",")]
    if any(n.startswith("k") for n in chosen) and h.docker() is not None:
        subprocess.run([sys.executable, "-m", "pytest_llmbench", "image", "build", "--tag", IMAGE], check=True)
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=h.ROOT)
    header = (
        f"`nice python experiments/faults/battery.py` at {head.stdout.strip()} on {platform.node()} "
        f"({os.cpu_count()} cores, shared with other engineers' test runs: timings are disturbed), "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}. Real llama-server + SmolLM2-135M Q4_1; "
        "stream faults from a protocol double (tests/faults/test_stream_faults.py). Docker rows use a local image "
        f"`{IMAGE}` (`python -m pytest_llmbench image build`)."
    )
    rows: list[Row] = []
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="llmbench-battery-") as tmp:
        for name in chosen:
            t0 = time.monotonic()
            try:
                row = FAULTS[name](Path(tmp) / name)
            except Exception as e:  # the battery goes on: a fault the harness could not apply is a row too
                row = Row("?", name, "harness error", "", "", f"{type(e).__name__}: {e}"[:200], "", [], [],
                          ["harness error"], time.monotonic() - t0)  # fmt: skip
            print(f"{name}: {'clean' if row.clean else row.problems} ({row.seconds:.0f} s)", flush=True)
            rows.append(row)
            write(args.out, rows, started, len(chosen), header)
    json.dump([r.__dict__ for r in rows], sys.stderr) if os.environ.get("BATTERY_JSON") else None
    return 0 if all(r.clean for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
