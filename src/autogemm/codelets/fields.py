"""Reading a family's configuration from JSON data that may come from outside (profiles, checkpoints,
the command line): every field checked for its type against the dataclass defaults, then the family's
own ``malformed`` check, so that nothing unchecked reaches kernel source or build options."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, fields, replace
from typing import Any, ClassVar, TypeVar

from ..dtypes import Dtype
from ..errors import ConfigError

Configuration = TypeVar("Configuration", bound="FamilyParams")


class FamilyParams:
    """What every family's configuration class (a frozen dataclass of its fields) shares: its JSON data
    and back, every field validated (``params_to_dict``, ``params_from_fields``). ``names_family`` says
    whether its JSON names the family (simt's does not: profiles written before there were families name
    none)."""

    family: ClassVar[str]
    names_family: ClassVar[bool] = True

    def to_dict(self) -> dict:
        return params_to_dict(self, self.family if self.names_family else None)

    def in_layout(self: Configuration, layout: str, dt: Dtype) -> Configuration:
        """This configuration reading its operands of ``dt`` in ``layout`` (a product stored so is then read
        where it lies): the same tiles; a family whose other fields depend on the layout (and dtype)
        changes those too."""
        return replace(self, layout=layout)

    def stages_alike(self, dt: Dtype) -> bool:
        """Whether this configuration's kernel stages operands of ``dt`` in every layout through the same
        pipeline, as fast (measured so), so that a product reads them where they lie at any size: a pack
        would only add its own reads and writes. False unless a family says so."""
        return False

    def smaller_blocks(self: Configuration) -> tuple[Configuration, ...]:
        """This configuration with smaller blocks of C, largest first, for a predictor to choose among
        where a product has too few of its blocks to keep the device busy (``tuning.predictor.bank``):
        none unless a family says how to shrink its blocks (``halved_blocks``)."""
        return ()

    @classmethod
    def from_dict(cls: type[Configuration], data: dict) -> Configuration:
        """Build from JSON data (its "family" key, if any, removed), validating every field (the data may
        come from outside)."""
        return params_from_fields(cls, data, cls.family)


def halved_blocks(config: Configuration, tile_n: str, group_m: str, group_n: str, tile_m: str,
                  mended: Callable[[Configuration], Configuration] = lambda c: c) -> tuple[Configuration, ...]:
    """``config`` with blocks of C of a half, a quarter and a sixteenth of its area (128 x 128 to 128 x 64,
    64 x 64 and 32 x 32): the tile each work-item or warp computes halved along N first (field ``tile_n``),
    then the work-group's rows of them (``group_m``), then its columns (``group_n``) and the tile's rows
    (``tile_m``), so that each work-item keeps as many elements of C as it can: a product with fewer of
    the large blocks than compute units runs them (or their K slices) on a few, one of smaller blocks on
    more of them, with less reuse of each element it reads. ``mended`` fixes what a smaller work-group
    leaves inconsistent. Each step shrinks the one before: where a step is outside the family's space
    (a tile as narrow as its vectors), the chain ends there."""
    half = replace(config, **{tile_n: getattr(config, tile_n) // 2})
    quarter = replace(half, **{group_m: getattr(config, group_m) // 2})
    sixteenth = replace(quarter, **{group_n: getattr(config, group_n) // 2, tile_m: getattr(config, tile_m) // 2})
    shrunk = (mended(c) for c in (half, quarter, sixteenth))
    return tuple(c for c in shrunk if c.malformed() is None)


def params_to_dict(params: Any, family: str | None = None) -> dict:
    """JSON data of a configuration: its fields (build options as a list), its family named first where
    given (simt's is not: profiles written before there were families name none)."""
    out = {"family": family} if family else {}
    out.update(asdict(params))
    if "build_options" in out:
        out["build_options"] = list(params.build_options)
    return out


def params_from_fields(cls: Any, data: object, family: str) -> Any:
    """An instance of the frozen dataclass ``cls`` from ``data``, or ``ConfigError`` saying what is wrong."""
    if not isinstance(data, dict):
        raise ConfigError(f"a {family} configuration must be a JSON object")
    known = {f.name for f in fields(cls)}
    unknown = set(data) - known
    if unknown:
        raise ConfigError(f"unknown {family} parameter(s): {', '.join(sorted(unknown))}")
    defaults = cls()
    values = {}
    for name, value in data.items():
        default = getattr(defaults, name)
        if name == "build_options":
            if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
                raise ConfigError("build_options must be a list of strings")
            value = tuple(value)
        elif isinstance(default, bool):
            if not isinstance(value, bool):
                raise ConfigError(f"{name} must be true or false, not {value!r}")
        elif isinstance(default, int):
            if isinstance(value, bool) or not isinstance(value, int):
                raise ConfigError(f"{name} must be an integer, not {value!r}")
        elif not isinstance(value, str):
            raise ConfigError(f"{name} must be a string, not {value!r}")
        values[name] = value
    params = cls(**values)
    problem = params.malformed()
    if problem:
        raise ConfigError(problem)
    return params


def choices_problem(params: Any, choices: dict[str, tuple]) -> str | None:
    """Which field of ``params`` holds a value outside its closed list in ``choices``, or None."""
    for name, allowed in choices.items():
        if getattr(params, name) not in allowed:
            return f"{name}={getattr(params, name)!r} is not one of {allowed}"
    return None
