"""Reference vs candidate in one session (issue 12): statistics, sequential looks, margins, and the wiring."""
