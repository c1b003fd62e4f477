"""Capacity under an SLO (issue 58): the search (search.py) and its run against a server (probe.py)."""
