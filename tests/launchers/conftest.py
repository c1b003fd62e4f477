def pytest_configure(config):
    config.addinivalue_line("markers", "docker: needs a Docker engine (skips, with the reason said once, without one)")
