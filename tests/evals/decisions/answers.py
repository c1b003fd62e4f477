"""Shared by the decision client tests: a System One answer set and decisions by key."""

SYSTEMONE_GOOD = {
    "queue": {
        "type": "choice",
        "choice": "tech",
        "probabilities": {"billing": 0.2, "tech": 0.7, "sales": 0.1},
        "confidence": 0.7,
    },
    "urgency": {
        "type": "score",
        "score": 1.9,
        "probabilities": {"0": 0.1, "1": 0.2, "2": 0.4, "3": 0.3},
        "legend": {"0": "none"},
    },
    "angry": {"type": "noul", "noul": 0.25},
}


def by_key(decisions):
    return {d.key: d for d in decisions}
