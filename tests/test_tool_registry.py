"""The tools' parts cannot drift apart: the descriptions in prompts/tools.yaml, the names of
`plan.ToolName`, and the registry (`tools.registry`): each tool's argument model (the schema)
and its handler, whose argument type is that model; each role is offered its plan's tools and
no other, by one path; no engine module spells a tool's name but the enum. And what each role
and kind of problem is offered is the JSON of tests/data/tool_schemas.json, key for key and in
order (the order is part of a request's cached prefix). To change a tool on purpose, write
that file again:
`python -c 'import json; from test_tool_registry import offered; print(json.dumps(offered(), indent=1))'`."""

from __future__ import annotations

import ast
import inspect
import json
from pathlib import Path

import pytest

import gitswarm
from gitswarm.domain.kinds import VERDICTS
from gitswarm.engine.plan import CODE_TOOLS, POWERS, EpisodePlan, Role, ToolName
from gitswarm.engine.tools import tool_schemas
from gitswarm.engine.tools.args import BadArguments, check
from gitswarm.engine.tools.contribute import ContributeArgs
from gitswarm.engine.tools.registry import TOOLS, of_episode, of_role
from gitswarm.engine.tools.specs import descriptions, schema

OFFERED = Path(__file__).with_name("data") / "tool_schemas.json"
KIND_OF_PROBLEM = {"proof": "proof", "program": "program"}
"""A problem kind without the code tools and one with them."""
ENGINE = Path(gitswarm.__file__).parent / "engine"
NOT_TOOLS = {("setaside.py", "abstain"): "an episode's status", ("tasks.py", "nominate"): "a problem's next step"}
"""Words of the engine that are not tool names, though a tool has the same."""


def offered() -> dict[str, list[dict]]:
    """What each role is offered for each kind of problem, by `role/kind`."""
    return {f"{role}/{kind}": tool_schemas(kind, role) for role in Role for kind in KIND_OF_PROBLEM}


def test_every_tool_described_has_a_module_and_no_other() -> None:
    assert list(descriptions()) == list(TOOLS) == list(ToolName)  # in the order they are offered
    assert all(name == tool.name for name, tool in TOOLS.items())
    assert all((ENGINE / "tools" / f"{name}.py").is_file() for name in ToolName)
    assert set(CODE_TOOLS) <= set(ToolName)


@pytest.mark.parametrize("role", list(Role))
def test_the_registry_offers_each_role_its_plans_tools_and_no_other(role: Role) -> None:
    assert list(of_role(role)) == list(POWERS[role].tools)
    for kind in ("proof", "program", "reproduce"):
        ep = EpisodePlan("e1", "w01", "p", kind, "P", "a" * 40, role=role)
        names = [spec["function"]["name"] for spec in tool_schemas(kind, role)]
        assert list(of_episode(ep)) == list(ep.tools) == names  # the schemas and the calls: one list
        assert all(of_episode(ep)[name] is of_role(role)[name] for name in ep.tools)
        assert (ToolName.SHELL in ep.tools) == (kind != "proof")


@pytest.mark.parametrize("role", list(Role))
def test_each_handler_takes_its_tools_model(role: Role) -> None:
    protocol = [name for name, _ in inspect.getmembers(ContributeArgs, lambda m: isinstance(m, property))]
    assert "kind" in protocol and "verdict" in protocol
    for name, tool in of_role(role).items():
        annotation = inspect.signature(tool.run).parameters["args"].annotation
        taken = tool.run.__globals__[annotation]  # the handler's module names it (annotations are text)
        if name == ToolName.CONTRIBUTE:  # one handler, a model per role: each has what the handler reads
            assert taken is ContributeArgs and all(hasattr(tool.args, m) or m in tool.args.model_fields
                                                   for m in protocol), role
        else:
            assert taken is tool.args is TOOLS[name].args, name


def test_no_engine_module_spells_a_tool_name_but_the_enum() -> None:
    words = {str(name) for name in ToolName}
    found = []
    for path in sorted(ENGINE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        enum = {id(n) for c in ast.walk(tree) if isinstance(c, ast.ClassDef) and c.name == "ToolName"
                for n in ast.walk(c)}
        found += [f"{path.relative_to(ENGINE)}:{n.lineno} {n.value!r}" for n in ast.walk(tree)
                  if isinstance(n, ast.Constant) and n.value in words and id(n) not in enum
                  and (str(path.relative_to(ENGINE)), n.value) not in NOT_TOOLS]
    assert found == []


def test_every_property_described_is_a_field_of_its_model_in_each_role() -> None:
    for name, told in descriptions().items():
        assert set(told) <= {"name", "description", "properties", "roles"}, name
        assert set(told.get("properties", {})) <= set(TOOLS[name].args.model_fields)
        for role, own in told.get("roles", {}).items():
            assert name in of_role(Role(role)), f"tools.yaml tells role {role} of {name}, which it does not have"
            assert set(own.get("properties", {})) <= set(of_role(Role(role))[name].args.model_fields), (name, role)


@pytest.mark.parametrize("role", list(Role))
def test_the_kinds_and_verdicts_offered_are_the_domains(role: Role) -> None:
    fields = schema(of_role(role)[ToolName.CONTRIBUTE].args)["properties"]
    assert fields["kind"]["enum"] == [str(kind) for kind in POWERS[role].kinds]
    if "verdict" in fields:
        assert fields["verdict"]["enum"] == [str(verdict) for verdict in VERDICTS]
    items = schema(TOOLS[ToolName.LIST_ITEMS].args)["properties"]["kind"]["enum"]
    assert items == ["note", "lemma", "attempt", "review", "code", "nomination"]


@pytest.mark.parametrize("role", list(Role))
@pytest.mark.parametrize("kind", list(KIND_OF_PROBLEM))
def test_each_role_and_kind_is_offered_the_schemas_it_was(role: str, kind: str) -> None:
    expected = json.loads(OFFERED.read_text(encoding="utf-8"))[f"{role}/{kind}"]
    assert json.dumps(tool_schemas(kind, role)) == json.dumps(expected)
    assert tool_schemas(kind, role) is tool_schemas(kind, role)  # one list: a stable, cached prefix


def test_a_schema_is_the_plain_function_calling_subset() -> None:
    text = json.dumps(offered())
    assert all(word not in text for word in ('"$defs"', '"anyOf"', '"default"', '"const"'))
    for tools in offered().values():
        for tool in tools:
            parameters = tool["function"]["parameters"]
            assert parameters["additionalProperties"] is False and "title" not in parameters
            assert all("title" not in spec for spec in parameters["properties"].values())


def contribute(role: Role) -> type:
    return of_role(role)[ToolName.CONTRIBUTE].args


def test_each_role_checks_contribute_by_its_own_model() -> None:
    review = {"kind": "review", "title": "t", "summary": "s", "reviews": "attempts/a.md", "informed_by": ["abc1234"]}
    with pytest.raises(BadArguments) as free:
        check("contribute", contribute(Role.FREE), review)
    assert free.value.problems == ["`kind` must be one of note, lemma, attempt, code, summary; you sent 'review'"]
    assert free.value.notes == ["ignored `reviews`: contribute has no such argument"]
    with pytest.raises(BadArguments) as assigned:
        check("contribute", contribute(Role.REVIEW), {**review, "reviews": None})
    assert assigned.value.problems == ["contribute needs `reviews`, `verdict`"]
    blind = check("contribute", contribute(Role.BLIND), {**review, "verdict": "pass"})
    assert (blind.arguments.informed_by, blind.arguments.verdict) == ((), "pass")
    assert blind.notes == ["ignored `informed_by`: contribute has no such argument"]
    worker = check("contribute", contribute(Role.WORKER), {**review, "kind": "note", "verdict": "pass"})
    assert (worker.arguments.reviews, worker.arguments.verdict, worker.arguments.informed_by) == (None, None,
                                                                                                  ["abc1234"])
    assert worker.notes == ["ignored `reviews` (only for kind review)", "ignored `verdict` (only for kind review)"]
