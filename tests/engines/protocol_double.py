"""Protocol doubles of SGLang's and vLLM's HTTP servers, for driving the engine adapters without a GPU.

Each double reproduces the documented wire formats the adapters rely on — not the engines' behaviour:
SGLang: /health 503 while starting then 200, /server_info (or only /get_server_info on an "old"
build) with server args, ``speculative_algorithm`` and ``internal_states[0].avg_spec_accept_length``,
/flush_cache answering 400 a configurable number of times, /tokenize {prompt}→{tokens,count,
max_model_len}, /detokenize {tokens}→{text}, /metrics gauges, and streamed chat completions whose
last choice carries ``meta_info`` (spec_verify_ct, spec_accept_length, …) when ``return_meta_info``
is set. vLLM: refuses connections while "loading", /health, /version, /v1/models, /reset_prefix_cache
only with VLLM_SERVER_DEV_MODE=1, /tokenize → {tokens}, /detokenize → {prompt}, /metrics counters
``vllm:spec_decode_*_total`` per label set, and a 404 for a request naming another model.

Tokens are characters (id = code point), so detokenize(tokenize(t)) == t and exact-length prompts work.
Run as a program (``python protocol_double.py sglang|vllm --port N …``) it behaves like a launched
server: startup log lines on stdout, then serving until SIGTERM.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class Double:
    def __init__(
        self,
        kind: str,
        *,
        model: str = "org/model",
        starting_polls: int = 2,
        flush_400: int = 1,
        old_routes: bool = False,
        spec: bool = True,
        tokens_per_step: int = 3,
        dev_mode: bool | None = None,
        chunk_delay_s: float = 0.001,
    ):
        self.kind, self.model = kind, model
        self.starting_polls, self.flush_400 = starting_polls, flush_400
        self.old_routes, self.spec, self.k = old_routes, spec, tokens_per_step
        self.dev_mode = os.environ.get("VLLM_SERVER_DEV_MODE") == "1" if dev_mode is None else dev_mode
        self.chunk_delay_s = chunk_delay_s
        self.health_503 = 0
        self.flushes = 0
        self.bodies: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        # Cumulative spec counters (vLLM) and SGLang's running average since the last flush.
        self.steps_since_flush = self.tokens_since_flush = 0
        self.drafts = self.draft_tokens = self.accepted = 0
        self.httpd: ThreadingHTTPServer | None = None

    # ---- lifecycle ------------------------------------------------------------------------------
    def serve(self, port: int = 0) -> int:
        double = self

        class Handler(_Handler):
            d = double

        self.httpd = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.httpd.daemon_threads = True
        # shutdown() waits for serve_forever's next poll: 10 ms, not the default 0.5 s per closed double
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True).start()
        return self.httpd.server_address[1]

    def close(self) -> None:
        if self.httpd is not None:
            self.httpd.shutdown()
            self.httpd.server_close()

    # ---- generation -----------------------------------------------------------------------------
    def steps(self, n: int) -> list[int]:
        """Tokens emitted per verify step: k at a time with spec decoding (the last step may be short)."""
        k = self.k if self.spec else 1
        out = [k] * (n // k)
        return out + ([n % k] if n % k else [])

    def account(self, steps: list[int]) -> None:
        with self.lock:
            self.steps_since_flush += len(steps)
            self.tokens_since_flush += sum(steps)
            if self.spec:
                self.drafts += len(steps)
                self.draft_tokens += len(steps) * (self.k - 1)
                self.accepted += sum(s - 1 for s in steps)

    def server_info(self) -> dict[str, Any]:
        avg = self.tokens_since_flush / self.steps_since_flush if self.steps_since_flush else 0.0
        return {
            "model_path": self.model,
            "api_key": "sk-double-secret",
            "speculative_algorithm": "DFLASH" if self.spec else None,
            "max_total_num_tokens": 236864,
            "max_running_requests": 4,
            "context_len": 153600,
            "internal_states": [{"avg_spec_accept_length": avg, "last_gen_throughput": 100.0}],
            "version": "0.0.0-double",
        }

    def metrics(self) -> str:
        if self.kind == "sglang":
            avg = self.server_info()["internal_states"][0]["avg_spec_accept_length"]
            return (
                "# HELP sglang:spec_accept_length accept length\n# TYPE sglang:spec_accept_length gauge\n"
                f'sglang:spec_accept_length{{model_name="{self.model}"}} {avg}\n'
            )
        lines = []
        for name, value in (
            ("drafts", self.drafts),
            ("draft_tokens", self.draft_tokens),
            ("accepted_tokens", self.accepted),
        ):
            lines.append(f"# TYPE vllm:spec_decode_num_{name}_total counter")
            # Two label sets (two engines) that the adapter must add up.
            half = value // 2
            lines.append(f'vllm:spec_decode_num_{name}_total{{engine="0",model_name="{self.model}"}} {half}.0')
            lines.append(f'vllm:spec_decode_num_{name}_total{{engine="1",model_name="{self.model}"}} {value - half}.0')
        return "\n".join(lines) + "\n"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    d: Double

    def log_message(self, *args: Any) -> None:
        pass

    def _send(self, status: int, body: Any = b"", ctype: str = "application/json") -> None:
        data = (
            json.dumps(body).encode()
            if not isinstance(body, (bytes, str))
            else (body.encode() if isinstance(body, str) else body)
        )
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _json(self) -> dict[str, Any]:
        n = int(self.headers.get("Content-Length") or 0)
        return json.loads(self.rfile.read(n) or b"{}")

    def do_GET(self) -> None:
        d, path = self.d, self.path.split("?")[0]
        if path == "/health":
            if d.kind == "sglang" and d.health_503 < d.starting_polls:
                d.health_503 += 1
                return self._send(503)
            return self._send(200)
        if d.kind == "sglang" and (path == "/get_server_info" or (path == "/server_info" and not d.old_routes)):
            return self._send(200, d.server_info())
        if path == "/metrics":
            return self._send(200, d.metrics(), "text/plain; version=0.0.4")
        if d.kind == "vllm" and path == "/version":
            return self._send(200, {"version": "0.0.0-double"})
        if d.kind == "vllm" and path == "/v1/models":
            return self._send(200, {"object": "list", "data": [{"id": d.model, "max_model_len": 32768}]})
        self._send(404, {"detail": "Not Found"})

    def do_POST(self) -> None:
        d, path = self.d, self.path.split("?")[0]
        body = self._json()
        if d.kind == "sglang" and path == "/flush_cache":
            if d.flush_400 > 0:
                d.flush_400 -= 1
                return self._send(400, "Cache not flushed: requests are running\n", "text/plain")
            d.flushes += 1
            d.steps_since_flush = d.tokens_since_flush = 0
            return self._send(200, "Cache flushed.\n", "text/plain")
        if d.kind == "vllm" and path == "/reset_prefix_cache":
            if not d.dev_mode:
                return self._send(404, {"detail": "Not Found"})
            d.flushes += 1
            return self._send(200)
        if path == "/tokenize" and not (d.kind == "sglang" and d.old_routes):
            ids = [ord(c) for c in body["prompt"]]
            return self._send(200, {"tokens": ids, "count": len(ids), "max_model_len": 32768})
        if path == "/detokenize" and not (d.kind == "sglang" and d.old_routes):
            text = "".join(chr(i) for i in body["tokens"])
            return self._send(200, {"text": text} if d.kind == "sglang" else {"prompt": text})
        if path == "/v1/chat/completions":
            return self._chat(body)
        self._send(404, {"detail": "Not Found"})

    def _chat(self, body: dict[str, Any]) -> None:
        d = self.d
        d.bodies.append(body)
        if d.kind == "vllm" and body.get("model") != d.model:
            return self._send(
                404, {"error": {"message": f"The model `{body.get('model')}` does not exist.", "code": 404}}
            )
        n = int(body.get("max_tokens") or 16)
        steps = d.steps(n)
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

        def event(obj: Any) -> None:
            data = b"data: " + (obj if isinstance(obj, bytes) else json.dumps(obj).encode()) + b"\n\n"
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()

        base = {"id": "chatcmpl-double", "object": "chat.completion.chunk", "model": d.model}
        event({**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}]})
        for s in steps:  # one chunk per verify step, carrying all tokens accepted in it
            time.sleep(d.chunk_delay_s)
            event({**base, "choices": [{"index": 0, "delta": {"content": "x" * s}, "finish_reason": None}]})
        prompt_tokens = sum(len(m.get("content", "")) for m in body.get("messages", []))
        last: dict[str, Any] = {"index": 0, "delta": {}, "finish_reason": "length"}
        if d.kind == "sglang" and body.get("return_meta_info"):
            meta = {
                "id": "double",
                "finish_reason": {"type": "length", "length": n},
                "prompt_tokens": prompt_tokens,
                "completion_tokens": n,
                "cached_tokens": 0,
            }
            if d.spec:
                meta.update(
                    spec_verify_ct=len(steps),
                    spec_accept_length=n / len(steps),
                    spec_accept_token_num=n - len(steps),
                    spec_draft_token_num=len(steps) * (d.k - 1),
                    spec_accept_rate=(n - len(steps)) / (len(steps) * (d.k - 1)),
                )
            last["meta_info"] = meta
        event({**base, "choices": [last]})
        d.account(steps)
        if (body.get("stream_options") or {}).get("include_usage"):
            event(
                {
                    **base,
                    "choices": [],
                    "usage": {
                        "prompt_tokens": prompt_tokens,
                        "completion_tokens": n,
                        "total_tokens": prompt_tokens + n,
                    },
                }
            )
        event(b"[DONE]")
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


SGLANG_STARTUP_LOG = """\
[2026-10-10 10:00:00] server_args=ServerArgs(model_path='{model}', ...)
[2026-10-10 10:00:05] Mamba Cache is allocated. max_mamba_cache_size: 28, conv_state size: 0.10GB, ssm_state size: 1.20GB
[2026-10-10 10:00:05] KV Cache is allocated. #tokens: 236864, K size: 3.61 GB, V size: 3.61 GB
[2026-10-10 10:00:09] max_total_num_tokens=236864, chunked_prefill_size=2048, max_prefill_tokens=16384, max_running_requests=4, context_len=153600, available_gpu_mem=12.34 GB
"""
VLLM_STARTUP_LOG = """\
INFO 10-10 10:00:01 [gpu_model_runner.py:1] Model loading took 15.2 GiB and 30.1 seconds
INFO 10-10 10:00:09 [kv_cache_utils.py:1] GPU KV cache size: 412,896 tokens
INFO 10-10 10:00:09 [kv_cache_utils.py:1] Maximum concurrency for 32,768 tokens per request: 12.60x
"""


def main(argv: list[str] | None = None) -> None:
    """Behave like a launched server: ``sglang --model-path M --host H --port P …`` or ``vllm serve M …``."""
    argv = list(sys.argv[1:] if argv is None else argv)
    kind = argv.pop(0)
    if kind == "vllm" and argv and argv[0] == "serve":
        argv.pop(0)
        model = argv.pop(0)
    ap = argparse.ArgumentParser()
    ap.add_argument("--model-path")
    ap.add_argument("--host")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--load-seconds", type=float, default=0.0)
    ap.add_argument("--no-spec", action="store_true")
    args, _rest = ap.parse_known_args(argv)
    model = args.model_path if kind == "sglang" else model
    print(f"double argv: {' '.join(sys.argv)}", flush=True)
    print(f"double CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES', '')}", flush=True)
    time.sleep(args.load_seconds)  # vLLM: the port refuses connections while "loading"
    double = Double(kind, model=model, spec=not args.no_spec)
    double.serve(args.port)
    print((SGLANG_STARTUP_LOG if kind == "sglang" else VLLM_STARTUP_LOG).format(model=model), flush=True)
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    main()
