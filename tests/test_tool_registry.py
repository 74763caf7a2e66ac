"""The tools' three parts cannot drift apart: the descriptions in prompts/tools.yaml, the
argument models of `toolmodels.ROLES` (the schemas) and the handlers of `tools.HANDLERS`. And
what each role and kind of problem is offered is the JSON of tests/data/tool_schemas.json, key
for key and in order (the order is part of a request's cached prefix). To change a tool on
purpose, write that file again:
`python -c 'import json; from test_tool_registry import offered; print(json.dumps(offered(), indent=1))'`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import get_args

import pytest

from gitswarm.domain.kinds import VERDICTS
from gitswarm.engine.finals import KINDS
from gitswarm.engine.toolargs import BadArguments, check
from gitswarm.engine.toolmodels import ROLES, Contribute, Verdict
from gitswarm.engine.tools import HANDLERS
from gitswarm.engine.toolspecs import CODE_TOOLS, descriptions, tool_schemas

OFFERED = Path(__file__).with_name("data") / "tool_schemas.json"
KIND_OF_PROBLEM = {"proof": "proof", "program": "program"}
"""A problem kind without the code tools and one with them."""


def offered() -> dict[str, list[dict]]:
    """What each role is offered for each kind of problem, by `role/kind`."""
    return {f"{role}/{kind}": tool_schemas(kind, role) for role in ROLES for kind in KIND_OF_PROBLEM}


def test_every_tool_described_has_a_model_and_a_handler_and_no_other() -> None:
    assert list(descriptions()) == list(ROLES["worker"])  # in the order they are offered
    assert set(HANDLERS) == set(ROLES["worker"])
    assert all(set(models) <= set(ROLES["worker"]) for models in ROLES.values())
    assert set(CODE_TOOLS) <= set(ROLES["worker"])


def test_every_property_described_is_a_field_of_its_model_in_each_role() -> None:
    for name, told in descriptions().items():
        assert set(told) <= {"name", "description", "properties", "roles"}, name
        assert set(told.get("properties", {})) <= set(ROLES["worker"][name].model_fields)
        for role, own in told.get("roles", {}).items():
            assert name in ROLES[role], f"tools.yaml tells role {role} of {name}, which it does not have"
            assert set(own.get("properties", {})) <= set(ROLES[role][name].model_fields), (name, role)


def test_the_literals_of_the_models_are_the_engines() -> None:
    assert get_args(get_args(Verdict)[0]) == tuple(VERDICTS)
    assert get_args(Contribute.model_fields["kind"].annotation) == KINDS


@pytest.mark.parametrize("role", list(ROLES))
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


def test_each_role_checks_contribute_by_its_own_model() -> None:
    review = {"kind": "review", "title": "t", "summary": "s", "reviews": "attempts/a.md", "informed_by": ["abc1234"]}
    with pytest.raises(BadArguments) as free:
        check("contribute", ROLES["free"]["contribute"], review)
    assert free.value.problems == ["`kind` must be one of note, lemma, attempt, code, summary; you sent 'review'"]
    assert free.value.notes == ["ignored `reviews`: contribute has no such argument"]
    with pytest.raises(BadArguments) as assigned:
        check("contribute", ROLES["review"]["contribute"], {**review, "reviews": None})
    assert assigned.value.problems == ["contribute needs `reviews`, `verdict`"]
    blind = check("contribute", ROLES["blind"]["contribute"], {**review, "verdict": "pass"})
    assert (blind.arguments.informed_by, blind.arguments.verdict) == ((), "pass")
    assert blind.notes == ["ignored `informed_by`: contribute has no such argument"]
    worker = check("contribute", ROLES["worker"]["contribute"], {**review, "kind": "note", "verdict": "pass"})
    assert (worker.arguments.reviews, worker.arguments.verdict, worker.arguments.informed_by) == (None, None,
                                                                                                  ["abc1234"])
    assert worker.notes == ["ignored `reviews` (only for kind review)", "ignored `verdict` (only for kind review)"]
