"""Fixtures for the engine adapter tests: the protocol doubles behind the real launch commands."""

from __future__ import annotations

import stat
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent


@pytest.fixture
def fake_sglang(tmp_path: Path) -> dict[str, str]:
    """A ``sglang.launch_server`` module that runs the SGLang protocol double with the real argv."""
    pkg = tmp_path / "fakepkgs" / "sglang"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "launch_server.py").write_text(
        f"import sys\nsys.path.insert(0, {str(HERE)!r})\nfrom protocol_double import main\nmain(['sglang', *sys.argv[1:]])\n"
    )
    return {"PYTHONPATH": str(pkg.parent)}


@pytest.fixture
def fake_vllm(tmp_path: Path) -> str:
    """A ``vllm`` executable that runs the vLLM protocol double with the real argv."""
    exe = tmp_path / "vllm"
    exe.write_text(
        f"#!{sys.executable}\nimport sys\nsys.path.insert(0, {str(HERE)!r})\n"
        "from protocol_double import main\nmain(['vllm', *sys.argv[1:]])\n"
    )
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    return str(exe)
