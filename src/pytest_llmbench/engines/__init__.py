"""Engine registry: config ``engine:`` name → adapter class. One line per engine."""

from pytest_llmbench.engines.base import Engine, SpecStats
from pytest_llmbench.engines.llamacpp import LlamaCppEngine
from pytest_llmbench.engines.sglang import SGLangEngine
from pytest_llmbench.engines.vllm import VLLMEngine

ENGINES: dict[str, type[Engine]] = {
    LlamaCppEngine.name: LlamaCppEngine,
    SGLangEngine.name: SGLangEngine,
    VLLMEngine.name: VLLMEngine,
}


def get_engine(name: str) -> Engine:
    return ENGINES[name]()


__all__ = ["ENGINES", "Engine", "SpecStats", "get_engine"]
