"""Decision clients by name, and the one for a server: the route its engine declares."""

from types import SimpleNamespace

import pytest

from pytest_llmbench.engines.llamacpp import LlamaCppEngine
from pytest_llmbench.engines.sglang import SGLangEngine
from pytest_llmbench.evals.decisions.clients import DecisionsClient, LogprobClient, SystemOneClient, client_for
from pytest_llmbench.models import ModelRef


def _server(engine, **cfg):
    config = SimpleNamespace(request=cfg.pop("request", {}), model=ModelRef("path", "m.gguf"), **cfg)
    return SimpleNamespace(config=config, engine=engine, base_url="http://127.0.0.1:1")


def test_client_for_follows_the_route_the_engine_declares():
    thinking_off = {"chat_template_kwargs": {"enable_thinking": False}, "temperature": 0.5}
    sglang = client_for(_server(SGLangEngine(), request=thinking_off))
    assert type(sglang) is SystemOneClient and sglang.route == SGLangEngine.decision_route == "/v1/systemone"
    assert sglang.extra_body == {"temperature": 0.5}  # chat-only fields stay off a decision route

    class OtherChatRoute(LlamaCppEngine):
        chat_path = "/chat"

    fallback = client_for(_server(OtherChatRoute(), request=thinking_off))
    assert type(fallback) is LogprobClient and fallback.route == "/chat"  # the engine's chat route
    assert fallback.extra_body == thinking_off
    assert type(client_for(_server(SGLangEngine()), "decisions")) is DecisionsClient
    with pytest.raises(ValueError, match="unknown decision client 'xml'"):
        client_for(_server(SGLangEngine()), "xml")
