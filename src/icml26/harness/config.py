"""Experiment configuration: one frozen dataclass per paper with three profiles.

A paper's ``experiment.py`` subclasses :class:`ExperimentConfig`, gives every field a default and
implements the three class methods ``smoke()`` (<= 15 s, used by the tests), ``quick()`` (<= 3 min
on 2 cores) and ``full()`` (<= 30 min). Overrides from the command line (``--set key=value``) are
parsed against the field's annotated type, so ``--set n_samples=abc`` is an error, not a string.

Every config validates its values when it is constructed, so a bad value is a usage error before
any work: seeds are a non-empty tuple of distinct non-negative ints, every number is finite,
every int is >= 0 unless the paper declares the field's range in ``BOUNDS`` (``{field: (low,
high)}``, inclusive, ``None`` for an open end, so ``(None, 5)`` admits negative ints; applied to each
element of a tuple), and every tuple field is non-empty unless named in ``MAY_BE_EMPTY``. A paper with a
constraint that is not a range overrides :meth:`ExperimentConfig.extra_checks` and raises through
:meth:`ExperimentConfig.out_of_range`.

A paper may name *extra* profiles next to the three (e.g. a GPU-sized run on another backend) in
``EXTRA_PROFILES = {name: (classmethod name, budget in seconds)}``; ``--profile NAME`` then builds
the config from that classmethod, results go to ``OUT/SLUG/NAME/``, and a paper without the name
refuses it as a usage error. Names are lower-case words joined by ``-`` or ``_`` and cannot shadow
``smoke``/``quick``/``full``/``custom``.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
import types
import typing
from typing import Any, ClassVar, Literal, get_args, get_origin, get_type_hints

from ._json import to_jsonable

PROFILES: tuple[str, ...] = ("smoke", "quick", "full")
BUDGET_S: dict[str, float] = {"smoke": 15.0, "quick": 180.0, "full": 1800.0}


class ConfigError(ValueError):
    """A profile, an override key or an override value is not valid."""


@dataclasses.dataclass(frozen=True)
class ExperimentConfig:
    """Base class of every paper's ``Config``.

    Attributes
    ----------
    profile : str
        Which profile built this config (``smoke`` | ``quick`` | ``full`` | ``custom``).
    seeds : tuple of int
        The seeds the runner iterates over; method and baselines share each seed.
    torch_threads : int or None
        Intra-op torch threads while the experiment runs (the runner restores the previous value).
        1 by default: the laptop-scale models here run as fast on one thread, and two threads
        per process oversubscribe a shared 2-core machine. ``None`` leaves torch's setting alone.
    device : str
        ``cpu`` (default), ``cuda``, ``cuda:N`` or ``auto`` (cuda when available). Papers read
        :attr:`torch_device` and pass it to their training loops; a GPU run changes the numbers
        (other kernels), not the code. An unknown device, or cuda where none is available, is
        a usage error.
    """

    profile: str = "custom"
    seeds: tuple[int, ...] = (0,)
    torch_threads: int | None = 1
    device: str = "cpu"

    PROFILES: ClassVar[tuple[str, ...]] = PROFILES
    BOUNDS: ClassVar[dict[str, tuple[float | None, float | None]]] = {}
    MAY_BE_EMPTY: ClassVar[frozenset[str]] = frozenset()  # tuple fields for which () is meaningful
    # extra named profiles: {name: (classmethod name, budget_s)} (module docstring)
    EXTRA_PROFILES: ClassVar[dict[str, tuple[str, float]]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        import re

        for name, spec in cls.EXTRA_PROFILES.items():
            if not isinstance(name, str) or not re.fullmatch(r"[a-z][a-z0-9]*([-_][a-z0-9]+)*", name) \
                    or name in (*PROFILES, "custom"):
                raise TypeError(f"{cls.__name__}.EXTRA_PROFILES: bad profile name {name!r} "
                                "(lower-case words joined by - or _, not smoke/quick/full/custom)")
            if not (isinstance(spec, tuple) and len(spec) == 2 and isinstance(spec[0], str)
                    and callable(getattr(cls, spec[0], None)) and isinstance(spec[1], int | float)
                    and spec[1] > 0):
                raise TypeError(f"{cls.__name__}.EXTRA_PROFILES[{name!r}] must be (classmethod "
                                f"name of {cls.__name__}, budget_s > 0), got {spec!r}")

    @classmethod
    def profiles(cls) -> tuple[str, ...]:
        """Every profile this config can build: smoke, quick, full, then its extra ones."""
        return (*PROFILES, *cls.EXTRA_PROFILES)

    def __post_init__(self) -> None:
        self._validate_fields()

    def out_of_range(self, name: str, allowed: str) -> typing.NoReturn:
        """Raise the usage error for field ``name``: its value and what is allowed."""
        raise ConfigError(f"{type(self).__name__}.{name}={getattr(self, name, None)!r} is out of "
                          f"range: allowed {allowed}")

    def extra_checks(self) -> None:
        """Paper-specific constraints beyond ``BOUNDS`` (override; call :meth:`out_of_range`)."""

    def _validate_fields(self) -> None:
        """Check every field's value (see the module docstring); raise :class:`ConfigError`."""
        if self.profile not in (*self.profiles(), "custom"):
            self.out_of_range("profile", f"one of {', '.join(self.profiles())} or custom")
        seeds = self.seeds
        if not isinstance(seeds, tuple) or not seeds:
            self.out_of_range("seeds", "a non-empty tuple of non-negative ints")
        if any(not isinstance(x, numbers.Integral) or isinstance(x, bool) or x < 0 for x in seeds):
            self.out_of_range("seeds", "non-negative ints")
        if len(set(seeds)) != len(seeds):
            self.out_of_range("seeds", "distinct seeds")
        if self.torch_threads is not None and self.torch_threads < 1:
            self.out_of_range("torch_threads", "an int >= 1 or none")
        self._check_device()
        names = {f.name for f in dataclasses.fields(self)}
        unknown = sorted(set(self.BOUNDS) - names)
        if unknown:
            raise TypeError(f"{type(self).__name__}.BOUNDS names unknown fields {unknown}")
        for f in dataclasses.fields(self):
            if f.name in ("seeds", "torch_threads", "device"):
                continue
            value = getattr(self, f.name)
            values = value if isinstance(value, tuple | list) else (value,)
            low, high = self.BOUNDS.get(f.name, (None, None))
            for v in values:
                if isinstance(v, bool) or not isinstance(v, numbers.Real):
                    continue
                if not math.isfinite(float(v)):
                    self.out_of_range(f.name, "finite numbers")
                if isinstance(v, numbers.Integral) and f.name not in self.BOUNDS and v < 0:
                    self.out_of_range(f.name, "ints >= 0")
                if (low is not None and v < low) or (high is not None and v > high):
                    lo = "-inf" if low is None else repr(low)
                    hi = "inf" if high is None else repr(high)
                    self.out_of_range(f.name, f"[{lo}, {hi}]")
            if isinstance(value, tuple) and not value and f.name not in self.MAY_BE_EMPTY:
                self.out_of_range(f.name, "a non-empty tuple")
        self.extra_checks()

    @classmethod
    def smoke(cls) -> ExperimentConfig:
        raise NotImplementedError

    @classmethod
    def quick(cls) -> ExperimentConfig:
        raise NotImplementedError

    @classmethod
    def full(cls) -> ExperimentConfig:
        raise NotImplementedError

    @classmethod
    def from_profile(cls, profile: str) -> ExperimentConfig:
        if profile not in cls.profiles():
            raise ConfigError(f"unknown profile {profile!r} for {cls.__module__}; choose one of "
                              f"{', '.join(cls.profiles())}")
        extra = cls.EXTRA_PROFILES.get(profile)
        config = getattr(cls, extra[0] if extra else profile)()
        if not isinstance(config, cls):
            raise ConfigError(f"{cls.__name__}.{profile}() must return a {cls.__name__}")
        return dataclasses.replace(config, profile=profile)

    def _check_device(self) -> None:
        import re

        dev = self.device
        if not isinstance(dev, str) or not re.fullmatch(r"cpu|auto|cuda(:\d+)?", dev):
            self.out_of_range("device", "cpu, cuda, cuda:N or auto")
        if dev.startswith("cuda"):
            import torch

            if not torch.cuda.is_available():
                self.out_of_range("device", "cpu or auto here: this machine has no CUDA device")
            index = int(dev.split(":")[1]) if ":" in dev else 0
            if index >= torch.cuda.device_count():
                self.out_of_range("device", f"cuda:0..cuda:{torch.cuda.device_count() - 1}")

    @property
    def torch_device(self) -> str:
        """The resolved torch device string (``auto`` becomes ``cuda`` or ``cpu``)."""
        if self.device != "auto":
            return self.device
        import torch

        return "cuda" if torch.cuda.is_available() else "cpu"

    @property
    def resources(self) -> dict[str, float]:
        """What one seed asks an executor for (Ray: ``num_cpus``, ``num_gpus``), judged here."""
        return self.resources_on(gpus_available=None)

    def resources_on(self, *, gpus_available: bool | None) -> dict[str, float]:
        """What one seed asks for on a machine or cluster that has GPUs or not.

        ``auto`` asks for a GPU when the place the seed will run has one: pass
        ``gpus_available`` for a cluster (the worker then resolves ``auto`` itself); ``None``
        asks this process's torch.
        """
        if self.device == "auto":
            gpu = (self.torch_device != "cpu") if gpus_available is None else gpus_available
        else:
            gpu = self.device.startswith("cuda")
        return {"num_cpus": float(self.torch_threads or 1), "num_gpus": 1.0 if gpu else 0.0}

    @property
    def budget_s(self) -> float:
        """The wall-clock budget of this profile (DEVELOPERS.md: smoke 15 s, quick 3 min, full 30 min)."""
        if self.profile in self.EXTRA_PROFILES:
            return float(self.EXTRA_PROFILES[self.profile][1])
        return BUDGET_S.get(self.profile, BUDGET_S["full"])

    def to_dict(self) -> dict[str, Any]:
        return {f.name: to_jsonable(getattr(self, f.name)) for f in dataclasses.fields(self)}

    def with_overrides(self, overrides: dict[str, str] | list[str] | None) -> ExperimentConfig:
        """Return a copy with ``key=value`` overrides parsed against the field types."""
        if not overrides:
            return self
        if isinstance(overrides, list):
            overrides = parse_assignments(overrides)
        hints = get_type_hints(type(self))
        names = {f.name for f in dataclasses.fields(self)}
        changes: dict[str, Any] = {}
        for key, raw in overrides.items():
            if key == "profile":
                raise ConfigError("profile is chosen with --profile, not --set profile=...")
            if key not in names:
                known = ", ".join(sorted(names))
                raise ConfigError(f"unknown config key {key!r} for {type(self).__name__}; known: {known}")
            try:
                changes[key] = parse_value(raw, hints[key])
            except (TypeError, ValueError) as exc:
                raise ConfigError(f"--set {key}={raw!r}: {exc}") from None
        return dataclasses.replace(self, **changes)  # validates (``__post_init__``)

    @classmethod
    def declares(cls, key: str) -> bool:
        return key in {f.name for f in dataclasses.fields(cls)}


def parse_assignments(items: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items:
        if "=" not in item:
            raise ConfigError(f"--set expects key=value, got {item!r}")
        key, value = item.split("=", 1)
        out[key.strip()] = value.strip()
    return out


_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def parse_value(raw: str, tp: Any) -> Any:
    """Parse the command-line string ``raw`` as a value of the annotated type ``tp``."""
    origin = get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in get_args(tp) if a is not type(None)]
        if raw.lower() in {"none", "null"} and len(args) < len(get_args(tp)):
            return None
        errors = []
        for arg in args:
            try:
                return parse_value(raw, arg)
            except (TypeError, ValueError) as exc:
                errors.append(str(exc))
        raise ValueError("; ".join(errors))
    if origin is Literal:
        choices = get_args(tp)
        for choice in choices:
            if str(choice) == raw:
                return choice
        raise ValueError(f"expected one of {choices}")
    if origin in (tuple, list):
        args = get_args(tp)
        parts = [p for p in raw.strip("()[]").split(",") if p.strip()]
        if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
            values = [parse_value(p.strip(), args[0]) for p in parts]
        elif origin is tuple and args:
            if len(parts) != len(args):
                raise ValueError(f"expected {len(args)} comma-separated values")
            values = [parse_value(p.strip(), a) for p, a in zip(parts, args, strict=True)]
        else:
            inner = args[0] if args else str
            values = [parse_value(p.strip(), inner) for p in parts]
        return tuple(values) if origin is tuple else values
    if tp is bool:
        low = raw.lower()
        if low in _TRUE:
            return True
        if low in _FALSE:
            return False
        raise ValueError("expected a boolean (true/false)")
    if tp is int:
        return int(raw)
    if tp is float:
        return float(raw)
    if tp is str:
        return raw
    raise TypeError(f"cannot parse a value of type {tp!r} from the command line")
