"""Live progress reaches the terminal during the test, not the test's captured output."""


def test_progress_lines_bypass_output_capture(pytester):
    pytester.makepyfile(
        test_p="""
        from types import SimpleNamespace
        from pytest_llmbench.workload import progress

        def test_long_scenario(request, monkeypatch):
            monkeypatch.setattr(progress, "SHOW_AFTER_S", 0.0)
            monkeypatch.setattr(progress, "PLAIN_EVERY_S", 0.0)
            p = progress.Progress(request.config.pluginmanager.get_plugin("terminalreporter"), "chat-4u", 2)
            p.update(SimpleNamespace(ok=True, completion_tokens=10))
            p.update(SimpleNamespace(ok=False, completion_tokens=0))
            p.close()
    """
    )
    result = pytester.runpytest_subprocess("-rA")
    result.assert_outcomes(passed=1)
    out = result.stdout.str()
    assert "[llmbench] chat-4u: 1/2 requests" in out and "[llmbench] chat-4u: 2/2 requests, 1 failed" in out
    assert "Captured stdout call" not in out
