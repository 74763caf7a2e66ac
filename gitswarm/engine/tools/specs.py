"""The tools' specs as each episode is offered them, in the OpenAI function-calling format, by
problem kind and by the episode's role: the tools of `plan.tool_names`, each schema generated
from the tool's argument model in that role (`registry.of_role`), its descriptions from
prompts/tools.yaml, keyed by `ToolName` (a tool's, its properties', and a role's own, under
`roles:`)."""

from __future__ import annotations

import copy
from functools import cache
from typing import Any

import yaml
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaMode, JsonSchemaValue
from pydantic_core import CoreSchema, core_schema

from gitswarm.engine.plan import Role, ToolName, tool_names
from gitswarm.engine.tools.args import ToolArgs
from gitswarm.engine.tools.registry import of_role
from gitswarm.resources import data_dir


@cache
def tool_schemas(kind: str | None = None, role: Role = Role.WORKER) -> list[dict[str, Any]]:
    """The tools a problem of `kind` gets (None: every tool) in `role`, in the OpenAI
    function-calling format. One list per kind and role, so a run's requests share prefixes."""
    texts, tools = descriptions(), of_role(role)
    return [{"type": "function", "function": _spec(name, tools[name].args, texts[name], role)}
            for name in tool_names(role, kind)]


@cache
def descriptions() -> dict[ToolName, dict[str, Any]]:
    """prompts/tools.yaml by tool name: each tool's `description`, its `properties`' and its
    `roles`' own."""
    specs = yaml.safe_load((data_dir("prompts") / "tools.yaml").read_text(encoding="utf-8"))
    return {ToolName(spec["name"]): spec for spec in specs}


def _spec(name: ToolName, model: type[ToolArgs], texts: dict[str, Any], role: str) -> dict[str, Any]:
    """A tool's spec as `role` gets it: its model's schema, with the descriptions of its role
    where tools.yaml gives them, else its own."""
    told = texts.get("roles", {}).get(role, {})
    parameters = schema(model)
    described = {**texts.get("properties", {}), **told.get("properties", {})}
    for key, text in described.items():
        if key in parameters["properties"]:
            parameters["properties"][key]["description"] = text
    return {"name": name.value, "description": told.get("description", texts["description"]), "parameters": parameters}


def schema(model: type[ToolArgs]) -> dict[str, Any]:
    """The JSON schema of `model` in the plain subset function calling takes: no titles, no
    defaults, an optional field as its type alone, an enum of strings as one."""
    return copy.deepcopy(_schema(model))


@cache
def _schema(model: type[ToolArgs]) -> dict[str, Any]:
    return model.model_json_schema(schema_generator=_Plain)


_ORDER = ("type", "enum", "items", "minimum", "maximum")


def _ordered(spec: dict[str, Any]) -> dict[str, Any]:
    return dict(sorted(spec.items(), key=lambda kv: _ORDER.index(kv[0]) if kv[0] in _ORDER else len(_ORDER)))


class _Plain(GenerateJsonSchema):
    """Pydantic's JSON schema, cut to what the OpenAI function-calling format documents."""

    def generate(self, schema: CoreSchema, mode: JsonSchemaMode = "validation") -> JsonSchemaValue:
        """The object's schema, without the model's title and docstring, its keys in the order
        a reader expects (and the requests were cached in: the order is part of the prefix)."""
        generated = super().generate(schema, mode)
        properties = {key: _ordered(spec) for key, spec in generated["properties"].items()}
        required = {"required": generated["required"]} if "required" in generated else {}
        return {"type": "object", "properties": properties, **required,
                "additionalProperties": generated["additionalProperties"]}

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False

    def default_schema(self, schema: core_schema.WithDefaultSchema) -> JsonSchemaValue:
        return self.generate_inner(schema["schema"])

    def nullable_schema(self, schema: core_schema.NullableSchema) -> JsonSchemaValue:
        return self.generate_inner(schema["schema"])

    def literal_schema(self, schema: core_schema.LiteralSchema) -> JsonSchemaValue:
        return {"type": "string", "enum": [str(value) for value in schema["expected"]]}
