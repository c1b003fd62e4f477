"""Protocol doubles of SGLang's decision routes and a hand-made case set for the decision tests."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from pytest_llmbench.datasets.decision_schema import YES_NO_OPTIONS, Case, Question


class DecisionRoutesDouble:
    """Protocol double of SGLang's ``/v1/systemone``, ``/v1/decisions`` and the logprobs of
    ``/v1/chat/completions`` on a local HTTP server (127.0.0.1, free port).

    It checks request shapes the way the real routes define them (REFERENCE.md "Decision APIs":
    System One choice criteria as ``{option: description}``, score as a list of level descriptions,
    noul without criteria, no temperature; /v1/decisions with ``boolean`` and ``[{key|level,
    description}]`` criteria, temperature allowed) and answers 400 to anything else. What it answers is
    scripted per test: ``answer(route, qid, question) -> answer object`` (or ``status``/``raw`` to send
    an error or a broken body); ``top_logprobs(body) -> list`` for the chat route.
    """

    def __init__(self) -> None:
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.answer: Callable[[str, str, dict[str, Any]], Any] = lambda route, qid, q: None
        self.top_logprobs: Callable[[dict[str, Any]], Any] = lambda body: []
        self.status = 200
        self.raw: bytes | None = None
        double = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                double.requests.append((self.path, body))
                if double.raw is not None or double.status != 200:
                    return self._send(double.status, double.raw or b'{"error": "scripted failure"}')
                try:
                    out = double.handle(self.path, body)
                except ValueError as e:
                    return self._send(400, json.dumps({"error": str(e)}).encode())
                self._send(200, json.dumps(out).encode())

            def _send(self, status: int, payload: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        # shutdown() waits for serve_forever's next poll: 10 ms, not the default 0.5 s per fake server
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def handle(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        if path == "/v1/systemone":
            if "temperature" in body:
                raise ValueError("/v1/systemone does not accept temperature")
            self._check(body, systemone=True)
        elif path == "/v1/decisions":
            self._check(body, systemone=False)
        elif path == "/v1/chat/completions":
            return {
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": "A"},
                        "logprobs": {
                            "content": [{"token": "A", "logprob": -0.1, "top_logprobs": self.top_logprobs(body)}]
                        },
                    }
                ]
            }
        else:
            raise ValueError(f"no route {path}")
        answers = {}
        for qid, q in body["questions"].items():
            a = self.answer(path, qid, q)
            if a is not None:
                answers[qid] = a
        return {
            "model": body.get("model", "double"),
            "answers": answers,
            "usage": {"input_tokens": 10, "output_tokens": 0},
        }

    @staticmethod
    def _check(body: dict[str, Any], *, systemone: bool) -> None:
        if "state" not in body or not isinstance(body.get("questions"), dict):
            raise ValueError("body needs state and questions")
        for qid, q in body["questions"].items():
            t = q.get("type")
            crit = q.get("criteria")
            if systemone:
                ok = (
                    (t == "noul" and crit is None)
                    or (t == "choice" and isinstance(crit, dict))
                    or (t == "score" and isinstance(crit, list) and all(isinstance(c, str) for c in crit))
                )
            else:
                ok = (
                    (t == "boolean" and crit is None)
                    or (
                        t == "choice" and isinstance(crit, list) and all({"key", "description"} <= set(c) for c in crit)
                    )
                    or (
                        t == "score"
                        and isinstance(crit, list)
                        and all({"level", "description"} <= set(c) for c in crit)
                    )
                )
            if not ok or not q.get("instructions"):
                raise ValueError(f"question {qid}: malformed {t} question")


@pytest.fixture
def decision_double():
    double = DecisionRoutesDouble()
    double.thread.start()
    try:
        yield double
    finally:
        double.server.shutdown()
        double.server.server_close()


def make_cases(n: int = 3) -> list[Case]:
    """n cases, each with one choice, one score and one yes/no question, hard gold."""
    cases = []
    for i in range(n):
        qs = {
            "queue": Question(
                "queue",
                "choice",
                "Which queue?",
                ("billing", "tech", "sales"),
                ("money", "bugs", None),
                (1.0, 0.0, 0.0) if i % 2 == 0 else (0.0, 1.0, 0.0),
            ),
            "urgency": Question(
                "urgency",
                "score",
                "How urgent?",
                ("0", "1", "2", "3"),
                ("none", "low", "high", "now"),
                (0.0, 0.0, 1.0, 0.0),
            ),
            "angry": Question(
                "angry",
                "noul",
                "Is the customer angry?",
                YES_NO_OPTIONS,
                (None, None),
                (1.0, 0.0) if i % 3 == 0 else (0.0, 1.0),
            ),
        }
        cases.append(Case(f"case{i}", {"subject": f"ticket {i}", "body": "help"}, qs, group="tickets"))
    return cases


@pytest.fixture
def cases() -> list[Case]:
    return make_cases(3)
