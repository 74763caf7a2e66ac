"""Command-line options made from `SolveConfig`'s fields: an option's help shows the field's own
default and its lower bound is the field's, so a changed field changes `--help`; an option's
name is the field's, less a unit, so a command's parameters map to fields by name."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import annotated_types
import typer
from pydantic.fields import FieldInfo

from gitswarm.engine.config import SolveConfig

UNITS = ("_s", "_per_mtok", "_ids")
"""What a field's name says that its option's leaves out: `--idle-timeout` sets `idle_timeout_s`,
`--price-in` sets `price_in_per_mtok`, `--problem` sets `problem_ids`."""


def option(field: str, text: str, *flags: str, **settings: Any) -> Any:
    """The `typer.Option` of a `SolveConfig` field: `text` is its help, in which `{default}` is
    the field's default as shown and `{<field>}` another field's (e.g. `{stop_grace_s}`); its
    `min` is the field's lower bound (`ge` or `gt`) unless `settings` give one."""
    info = SolveConfig.model_fields[field]
    bound = lower_bound(info)
    if bound is not None:
        settings.setdefault("min", bound)
    return typer.Option(*flags, help=text.format_map(_Defaults(field)), **settings)


def shown(value: object) -> str:
    """A default as help shows it: 300, not 300.0."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def default_of(field: str) -> str:
    """The shown default of a `SolveConfig` field."""
    return shown(SolveConfig.model_fields[field].get_default())


def lower_bound(info: FieldInfo) -> Any:
    """The field's `ge` or `gt` bound (an int for an int field), if it has one."""
    for meta in info.metadata:
        if isinstance(meta, annotated_types.Ge):
            return meta.ge
        if isinstance(meta, annotated_types.Gt):
            return meta.gt
    return None


class _Defaults(dict):
    """`str.format_map`'s mapping: `default` is the field's own default, any other key a field's."""

    def __init__(self, field: str) -> None:
        super().__init__()
        self.field = field

    def __missing__(self, key: str) -> str:
        return default_of(self.field if key == "default" else key)


def option_name(field: str, names: Mapping[str, object]) -> str | None:
    """The parameter among `names` that sets `field`: named as the field, or less a unit."""
    for name in (field, *(field.removesuffix(unit) for unit in UNITS if field.endswith(unit))):
        if name in names:
            return name
    return None


def field_values(params: Mapping[str, object]) -> dict[str, object]:
    """The values of a command's parameters that set `SolveConfig` fields, keyed by field
    (a repeated option's list as a tuple); parameters that set no field are left out."""
    found = {field: option_name(field, params) for field in SolveConfig.model_fields}
    values = {field: params[name] for field, name in found.items() if name is not None}
    return {field: tuple(value) if isinstance(value, list) else value for field, value in values.items()}
