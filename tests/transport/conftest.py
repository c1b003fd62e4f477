"""The scripted raw-socket server for the transport tests."""

from tests.scripted_http import scripted  # noqa: F401  (fixture)
