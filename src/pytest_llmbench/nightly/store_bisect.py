"""What ``bisect --store`` takes from a nightly store: the ends and the builds between, as the nights ran them.

A sheriff re-runs a bisect by hand when the nightly's own ran out of budget ("unknown between Y and Z") or
when a night is questioned. Everything needed is in the store already: the nights in order, each with its
state and candidate, and the pins (what each tag was when first seen). So the ends default to the first
REGRESSED night and the last PASSED night before it, the builds between are the candidates of the nights in
between, and every build runs its pin, never the tag as it is today.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pytest_llmbench.nightly.candidates import Candidate, CandidateError
from pytest_llmbench.nightly.store import Store, StoredNight


@dataclass(frozen=True)
class StoreBisect:
    """The ordered builds of a bisect over a store's nights, and the nights they came from."""

    good: StoredNight
    bad: StoredNight
    builds: tuple[Candidate, ...]  # good, the candidates between (night order), bad; each pinned
    pytest_args: tuple[str, ...]  # the bad night's bench selection, for a bisect given none

    def describe(self) -> str:
        return (
            f"from store: good = night {_name(self.good)} ({self.good.meta.get('state')}), "
            f"bad = night {_name(self.bad)} ({self.bad.meta.get('state')}), "
            f"{len(self.builds) - 2} build(s) between"
        )


def _name(night: StoredNight) -> str:
    return str(night.meta.get("night") or night.id)


def _find(nights: Sequence[StoredNight], name: str, option: str, url: str) -> int:
    hits = [i for i, n in enumerate(nights) if name in (n.id, _name(n))]
    if not hits:
        known = ", ".join(_name(n) for n in nights) or "none"
        raise CandidateError(f"{option} {name}: no such night in store {url} (nights: {known})")
    return hits[-1]


def _candidate(night: StoredNight, pins: dict[str, dict[str, object]], url: str) -> Candidate:
    c = night.meta.get("candidate")
    if not isinstance(c, dict) or not c.get("tag"):
        raise CandidateError(f"store {url}: night {night.id}: night.json has no candidate")
    tag = str(c["tag"])
    pin = pins.get(tag, {})
    return Candidate(tag, str(c.get("kind") or "image"), str(pin.get("pinned") or c.get("pinned") or ""))


def bisect_from_store(store: Store, *, good_night: str | None = None, bad_night: str | None = None) -> StoreBisect:
    """The ends (by night name or id, else the first REGRESSED night and the last PASSED one before it) and
    the distinct candidates of the nights between them, oldest first."""
    nights = store.nights()
    if bad_night is not None:
        j = _find(nights, bad_night, "--bad-night", store.url)
    else:
        regressed = [i for i, n in enumerate(nights) if n.meta.get("state") == "REGRESSED"]
        if not regressed:
            raise CandidateError(f"store {store.url}: no REGRESSED night to bisect; name one with --bad-night")
        j = regressed[0]
    if good_night is not None:
        i = _find(nights, good_night, "--good-night", store.url)
    else:
        passed = [k for k in range(j) if nights[k].meta.get("state") == "PASSED"]
        if not passed:
            raise CandidateError(
                f"store {store.url}: no PASSED night before {_name(nights[j])}; name the good end with --good-night"
            )
        i = passed[-1]
    if i >= j:
        raise CandidateError(f"--good-night {_name(nights[i])} is not before --bad-night {_name(nights[j])}")
    pins = store.pins()
    good, bad = _candidate(nights[i], pins, store.url), _candidate(nights[j], pins, store.url)
    between: list[Candidate] = []
    for night in nights[i + 1 : j]:
        c = _candidate(night, pins, store.url)
        if c.tag not in {good.tag, bad.tag} and c.tag not in {b.tag for b in between}:
            between.append(c)
    args = nights[j].meta.get("pytest_args") or []
    return StoreBisect(nights[i], nights[j], (good, *between, bad), tuple(str(a) for a in args))


__all__ = ["StoreBisect", "bisect_from_store"]
