"""One module per ``python -m pytest_llmbench`` command (see ``pytest_llmbench.__main__``)."""
