"""Reference vs candidate in one session: statistics, sizes, round planning for power, and the wiring."""
