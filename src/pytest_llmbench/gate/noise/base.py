"""The noise-model interface: a tolerance, and a rule that says in words how it was computed."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import fields
from typing import Any, ClassVar

from pytest_llmbench.errors import LlmbenchError, RegistryError
from pytest_llmbench.gate.types import BaselineEntry, Direction, Observation, Status, Verdict
from pytest_llmbench.gate.verdict import judge


class NoiseModelError(LlmbenchError, ValueError):
    """A check gave a noise model what it cannot work with (no SE for StdErr, no n for Binomial)."""


#: Every noise model a baseline file may name, by ``name``: the registry the
#: ``pytest_llmbench_noise_models`` hook fills (the built-ins included). Subclasses with a ``name`` also
#: register themselves when their class is defined, so ``--update-baselines`` can read back what it
#: writes; :func:`register_noise_model` is the explicit form.
NOISE_MODELS: dict[str, type[NoiseModel]] = {}


def register_noise_model(cls: type[NoiseModel]) -> type[NoiseModel]:
    """Make ``cls`` loadable from baseline files by its ``name``; usable as a class decorator.

    Re-registering the same class (a conftest imported twice) is fine; a second class under a name
    already taken is an error, because the files would then mean two different rules.
    """
    name = cls.__dict__.get("name")
    if not isinstance(name, str) or not name:
        raise TypeError(f"noise model {cls.__qualname__} needs a class attribute name = '...'")
    old = NOISE_MODELS.get(name)
    if old is not None and (old.__module__, old.__qualname__) != (cls.__module__, cls.__qualname__):
        raise RegistryError(f"noise model name {name!r} is taken by {old.__module__}.{old.__qualname__}")
    NOISE_MODELS[name] = cls
    return cls


class NoiseModel(ABC):
    """Subclasses are frozen dataclasses; their fields are the parameters stored in the baseline file.

    ``verdict`` fills ``p_value`` with the one-sided p of its own test when it has one; ``gives_p``
    says whether it ever does (fixed bands do not, and stay outside the suite's error budget).
    """

    name: ClassVar[str]
    gives_p: ClassVar[bool] = True

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "name" in cls.__dict__:
            register_noise_model(cls)

    @abstractmethod
    def verdict(self, baseline: BaselineEntry, observed: Observation, direction: Direction) -> Verdict:
        """Judge ``observed`` against ``baseline``; config/test/metric are filled in by the session."""

    def params(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}  # type: ignore[arg-type]

    def to_dict(self) -> dict[str, Any]:
        """What the baseline file records: ``{"name": "StdErr", "k": 2.0}``."""
        out: dict[str, Any] = {"name": self.name}
        for k, v in self.params().items():
            out[k] = v.to_dict() if isinstance(v, NoiseModel) else v
        return out

    @classmethod
    def from_params(cls, **params: Any) -> NoiseModel:
        return cls(**params)

    def describe(self) -> str:
        args = ", ".join(
            f"{k}={v.describe() if isinstance(v, NoiseModel) else f'{v:g}' if isinstance(v, float) else v}"
            for k, v in self.params().items()
            if v is not None
        )
        return f"{self.name}({args})"

    def learned(self, history: tuple[float, ...]) -> bool:
        """Whether ``history`` holds enough accepted values to judge (History says "learning" until then;
        ``--update-baselines=new`` keeps adding to entries that have not learned)."""
        return True

    def stored_spread(self, history: tuple[float, ...]) -> float | None:
        """A spread worth writing beside the value for reviewers (Spread's width, History's SD)."""
        return None

    def _verdict(
        self,
        baseline: float,
        observed: Observation,
        tolerance: float,
        rule: str,
        direction: Direction,
        status: Status | None = None,
        p_value: float | None = None,
    ) -> Verdict:
        return Verdict(
            metric="",
            observed=observed.value,
            baseline=baseline,
            tolerance=tolerance,
            rule=rule,
            status=status or judge(baseline, observed.value, tolerance, direction),
            direction=direction,
            noise=self.describe(),
            p_value=p_value,
        )


def noise_from_dict(d: object) -> NoiseModel:
    """The inverse of ``NoiseModel.to_dict``; raises ValueError naming what is wrong."""
    if not isinstance(d, dict) or "name" not in d:
        raise ValueError(f"a noise model is written as {{name: ..., <params>}}, got {d!r}")
    params = dict(d)
    name = params.pop("name")
    cls = NOISE_MODELS.get(name)
    if cls is None:
        raise ValueError(
            f"unknown noise model {name!r} (known: {', '.join(sorted(NOISE_MODELS))}); a model "
            f"of your own is known once a pytest_llmbench_noise_models hook returns it or its class is "
            f"defined (in conftest.py)"
        )
    try:
        return cls.from_params(**params)
    except (TypeError, ValueError) as e:
        raise ValueError(f"bad parameters for noise model {name}: {e}") from None
