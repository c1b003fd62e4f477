"""The scripted raw-socket server for the workload tests."""

from tests.scripted_http import ctrl_c_works, scripted  # noqa: F401  (fixtures)
