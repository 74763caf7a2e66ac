"""The tools' specs as each episode is offered them: prompts/tools.yaml (names, descriptions,
schemas, in the OpenAI function-calling format), by problem kind and by the episode's role."""

from __future__ import annotations

import copy
from functools import cache

import yaml

from gitswarm.engine.context import CODE_KINDS, EpisodeInfo
from gitswarm.resources import data_dir

CODE_TOOLS = ("shell",)
"""Tools offered only for problems of `CODE_KINDS`."""
ROLES: dict[str, tuple[str, ...] | None] = {
    "worker": None, "free": None,
    "review": ("list_items", "read_file", "search", "in_flight", "write_file", "run_python", "shell", "contribute",
               "abstain"),
    "blind": ("read_file", "write_file", "run_python", "shell", "contribute", "abstain"),
}
"""The tools of each role (None: every tool): `worker`, any episode of a run whose episodes
choose to review; `free`, the same in a run that assigns reviews (`contribute` without kind
review); `review`, an assigned review that sees the memory; `blind`, a blind review. A review
episode announces nothing (the scheduler announces its assignment) and nominates nothing."""


def role_of(ep: EpisodeInfo, assigns_reviews: bool) -> str:
    """The role (`ROLES`) of episode `ep` in a run that assigns reviews or not."""
    if ep.review is not None:
        return "blind" if ep.review.blind else "review"
    return "free" if assigns_reviews else "worker"


@cache
def tool_schemas(kind: str | None = None, role: str = "worker") -> list[dict]:
    """The tools a problem of `kind` gets (None: every tool) in `role`, in the OpenAI
    function-calling format, from prompts/tools.yaml. One list per kind and role, so a run's
    requests share prefixes."""
    specs = yaml.safe_load((data_dir("prompts") / "tools.yaml").read_text(encoding="utf-8"))
    names = ROLES[role]
    offered = [s for s in specs if (kind is None or kind in CODE_KINDS or s["name"] not in CODE_TOOLS)
               and (names is None or s["name"] in names)]
    return [{"type": "function", "function": _in_role(spec, role)} for spec in offered]


def _in_role(spec: dict, role: str) -> dict:
    """A tool's spec as `role` gets it: its role's description and property descriptions
    (`roles` in tools.yaml), and `contribute` without kind review for a free episode, with that
    kind alone (naming its candidate and verdict) for a review one."""
    told = spec.pop("roles", {}).get(role, {})
    spec = copy.deepcopy(spec)
    spec["description"] = told.get("description", spec["description"])
    properties = spec["parameters"].get("properties", {})
    for name, text in told.get("properties", {}).items():
        properties[name]["description"] = text
    if spec["name"] != "contribute" or role == "worker":
        return spec
    if role == "free":
        properties["kind"]["enum"] = [k for k in properties["kind"]["enum"] if k != "review"]
        del properties["reviews"], properties["verdict"]
    else:
        properties["kind"]["enum"] = ["review"]
        spec["parameters"]["required"] = [*spec["parameters"]["required"], "reviews", "verdict"]
        if role == "blind":  # it sees no commit to cite but its candidate, which its review cites
            del properties["informed_by"]
    return spec


@cache
def parameters(role: str = "worker") -> dict[str, dict]:
    """Each tool's argument schema in `role`, by tool name."""
    return {tool["function"]["name"]: tool["function"]["parameters"] for tool in tool_schemas(None, role)}
