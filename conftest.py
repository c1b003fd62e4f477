"""Repository-level pytest setup: the pytester fixture for the plugin's own tests."""

pytest_plugins = ["pytester"]
