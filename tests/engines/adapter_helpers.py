"""Helpers for the engine adapter tests: a config for a protocol double, and a process-gone check."""

from __future__ import annotations

import os
from pathlib import Path

from pytest_llmbench.config import ServerConfig
from pytest_llmbench.models import ModelRef


def make_config(
    engine: str,
    *,
    name: str = "double",
    model: str = "org/model",
    args=(),
    env=None,
    engine_options=None,
    launcher: str = "subprocess",
    gpus: int = 0,
    image=None,
) -> ServerConfig:
    return ServerConfig(
        name=name,
        engine=engine,
        model=ModelRef("hub", model),
        source=Path("test.yaml"),
        launcher=launcher,
        args=tuple(args),
        env=dict(env or {}),
        engine_options=dict(engine_options or {}),
        startup_timeout=30.0,
        gpus=gpus,
        image=image,
    )


def gone(pids: list[int]) -> bool:
    return not any(
        os.path.exists(f"/proc/{p}") and "Z" not in open(f"/proc/{p}/stat").read().split(")")[-1][:3] for p in pids
    )
