"""Why a run was slower: the server's own ``/metrics`` and the GPU's state as timelines over a scenario.

``timeline.py`` holds the plain data (samples, per-quantity summaries), ``scraper.py`` the background
thread that reads ``/metrics`` at a fixed interval through an engine's name table, ``gpu.py`` the NVML
reading. ``diff.py`` compares two arms' timelines block by block ("what changed").
"""
