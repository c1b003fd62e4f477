"""interrupts.py for commands that run pytest sessions as children (nightly, bisect): SIGTERM reaches the
child, the handlers are put back, a caught interrupt is raised again. Real child processes and real signals."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from pytest_llmbench import interrupts

#: a child that says which signal ended it (as a session's summary does), then exits 143 or 130
CHILD = textwrap.dedent("""
    import signal, sys, time
    def on(signum, frame):
        print("child got", signal.Signals(signum).name, flush=True)
        sys.exit(128 + signum)
    signal.signal(signal.SIGTERM, on)
    signal.signal(signal.SIGINT, on)
    print("ready", flush=True)
    time.sleep(60)
""")


def _child() -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-c", CHILD], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    return proc


def test_sigterm_is_passed_on_to_the_child_and_ctrl_c_is_not():
    child = _child()
    try:
        interrupts.forward(child, interrupts.Terminated("SIGTERM"))
        assert child.wait(timeout=10) == 143
        assert child.stdout is not None and "child got SIGTERM" in child.stdout.read()
    finally:
        child.kill()
    child = _child()
    try:  # Ctrl-C at a terminal reached the whole process group: a second SIGINT would read as a second press
        interrupts.forward(child, KeyboardInterrupt())
        with pytest.raises(subprocess.TimeoutExpired):
            child.wait(timeout=0.5)
    finally:
        child.kill()
        child.wait()


#: handled() in a process of its own (in this one the session's plugin holds the handlers: handled() is a no-op)
HANDLED = textwrap.dedent("""
    import signal
    from pytest_llmbench import interrupts
    before = signal.getsignal(signal.SIGTERM)
    try:
        with interrupts.handled():
            signal.raise_signal(signal.SIGTERM)
    except interrupts.Terminated as e:
        print("raised Terminated, exit status", interrupts.exit_status(e))
    print("handlers put back:", signal.getsignal(signal.SIGTERM) is before)
    try:
        interrupts.reraise_received()
    except interrupts.Terminated:
        print("raised again")
    interrupts.state.received.clear()
    interrupts.reraise_received()
    print("nothing received: nothing raised")
""")


def test_handled_raises_sigterm_as_terminated_puts_the_handlers_back_and_reraise_repeats_it():
    out = subprocess.run([sys.executable, "-c", HANDLED], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        "raised Terminated, exit status 143",
        "handlers put back: True",
        "raised again",
        "nothing received: nothing raised",
    ], out.stdout + out.stderr
    assert interrupts.exit_status(KeyboardInterrupt()) == 130
