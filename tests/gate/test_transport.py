"""The xdist transport: what a worker sends is what the controller rebuilds."""

from __future__ import annotations

from types import SimpleNamespace

from pytest_llmbench.gate import transport
from pytest_llmbench.gate.store import Measurement
from pytest_llmbench.gate.types import Verdict


def test_round_trip_through_workeroutput():
    worker = SimpleNamespace(workeroutput={})
    v = Verdict(
        metric="m",
        observed=1.0,
        baseline=2.0,
        tolerance=0.5,
        rule="r",
        status="REGRESSED",
        direction="higher",
        noise="n",
        p_value=0.001,
        family="quality",
        paired=True,
    )
    meas = Measurement(
        config="c",
        runner="r",
        test_key="t",
        metric="m",
        value=1.0,
        direction="higher",
        noise={"name": "StdErr"},
        n=3,
        se=0.1,
        provenance={},
        status="REGRESSED",
        cases={"p1": 1.0, "p2": 0.5, "p3": 1.5},
    )  # the sidecar's content crosses too
    transport.send_check(worker, "t.py::t", v)
    transport.send_measurement(worker, meas)
    transport.send_counts(worker, {"quality": 4})
    checks, measurements, counts = transport.receive(worker)
    assert checks == [("t.py::t", v)] and measurements == [meas] and counts == {"quality": 4}
    assert measurements[0].cases == {"p1": 1.0, "p2": 0.5, "p3": 1.5}


def test_a_worker_that_sent_nothing():
    assert transport.receive(SimpleNamespace()) == ([], [], {})
