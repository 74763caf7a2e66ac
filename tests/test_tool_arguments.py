"""A tool call's arguments checked by the real tools' argument models before the tool runs: each
type, each unambiguous mend and its note, enums, bounds, required fields, unknown and
kind-foreign fields dropped with a note, every problem of a call at once; then the real
Toolbox on a real run, and one real episode through litellm and the fake server in which a
small model's typical mistakes go back to it as fixable errors instead of ending the run."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from conftest import git
from pydantic import Field
from test_episode_replies import PROBLEM, call, one_episode, said

from gitswarm.domain.index import MemoryIndex
from gitswarm.engine.config import SolveConfig
from gitswarm.engine.plan import EpisodePlan, Role
from gitswarm.engine.runview import RunView
from gitswarm.engine.tools import Final, Toolbox, ToolError
from gitswarm.engine.tools.args import BadArguments, Fields, Flag, Number, Text, Texts, ToolArgs, Whole, check
from gitswarm.engine.tools.registry import of_role
from gitswarm.fakeserver import FakeReply
from gitswarm.memory import indexing
from gitswarm.memory.repo import Memory
from gitswarm.memory.store import Store
from gitswarm.problems.loader import load_set
from gitswarm.resources import resolve_set

SCHEMAS = {name: tool.args for name, tool in of_role(Role.WORKER).items()}


class EveryType(ToolArgs):
    text: Text
    count: Whole = Field(1, ge=1, le=600)
    rate: Number = 0
    on: Flag = False
    ids: Texts = Field(default_factory=list)
    options: Fields = Field(default_factory=dict)
    maybe: Number | None = None


@pytest.fixture
def anyio_backend():
    return "asyncio"


def checked(arguments: object, tool: str = "t", model: type[ToolArgs] = EveryType) -> tuple[dict, list[str]]:
    """The arguments `model` passes to the tool (those sent, as read), and the notes."""
    done = check(tool, model, arguments)
    return done.arguments.model_dump(exclude_unset=True), done.notes


def refusal(arguments: object, tool: str = "t", model: type[ToolArgs] = EveryType) -> BadArguments:
    with pytest.raises(BadArguments) as caught:
        check(tool, model, arguments)
    return caught.value


def test_arguments_of_the_right_types_pass_unchanged_and_without_notes() -> None:
    given = {"text": "x", "count": 3, "rate": 2.5, "on": False, "ids": ["a", "b"], "options": {"k": 1}, "maybe": 1}
    assert checked(given) == (given, [])
    assert checked({"text": "x", "maybe": None})[0] == {"text": "x"}  # an optional null is left out
    assert checked({"text": "x", "rate": 2})[0] == {"text": "x", "rate": 2}  # an integer is a number


@pytest.mark.parametrize(("field", "sent", "read", "note"), [
    ("text", 42, "42", "`text` 42 read as '42'"),
    ("text", 2.5, "2.5", "`text` 2.5 read as '2.5'"),
    ("ids", "3f2a9c1", ["3f2a9c1"], "`ids` '3f2a9c1' read as ['3f2a9c1']"),
    ("ids", ["a", 7], ["a", "7"], "`ids[1]` 7 read as '7'"),
    ("count", 60.0, 60, "`count` 60.0 read as 60"),
    ("count", " 60 ", 60, "`count` ' 60 ' read as 60"),
    ("on", "true", True, "`on` 'true' read as true"),
    ("on", "False", False, "`on` 'False' read as false"),
])
def test_unambiguous_mends_are_made_and_said(field: str, sent: object, read: object, note: str) -> None:
    arguments, notes = checked({"text": "x", field: sent} if field != "text" else {"text": sent})
    assert arguments[field] == read and type(arguments[field]) is type(read)
    assert notes == [note]


@pytest.mark.parametrize(("field", "sent", "problem"), [
    ("text", ["a", "b"], "`text` must be a string; you sent a list: send one string of text, not a list "
                         "(join the parts yourself)"),
    ("text", {"a": 1}, "`text` must be a string; you sent an object"),
    ("text", True, "`text` must be a string; you sent true"),
    ("text", "x\ud800", "`text` is not valid UTF-8 text (it holds a lone surrogate)"),  # JSON's "\ud800"
    ("ids", ["a", "\udfff"], "`ids[1]` is not valid UTF-8 text (it holds a lone surrogate)"),
    ("count", 2.5, "`count` must be a whole number, written in digits; you sent 2.5"),
    ("count", "sixty", "`count` must be a whole number, written in digits; you sent 'sixty'"),
    ("count", True, "`count` must be a whole number, written in digits; you sent true"),
    ("count", 0, "`count` must be at least 1; you sent 0"),
    ("count", "900", "`count` must be at most 600; you sent 900"),
    ("rate", "2.5", "`rate` must be a number; you sent '2.5'"),
    ("rate", False, "`rate` must be a number; you sent false"),
    ("on", 1, "`on` must be true or false; you sent 1"),
    ("on", "yes", "`on` must be true or false; you sent 'yes'"),
    ("ids", {"a": 1}, "`ids` must be a list of strings; you sent an object"),
    ("ids", ["a", ["b"]], "`ids[1]` must be a string; you sent a list: send one string of text, not a list "
                          "(join the parts yourself)"),
    ("options", "k=1", "`options` must be an object of named fields; you sent 'k=1'"),
])
def test_what_cannot_be_mended_is_refused_naming_the_field(field: str, sent: object, problem: str) -> None:
    error = refusal({"text": "x", field: sent} if field != "text" else {"text": sent})
    assert error.problems == [problem] and str(error) == problem
    assert isinstance(error, ToolError)


def test_enums_and_required_fields_of_the_real_contribute() -> None:
    error = refusal({"kind": "proof", "title": "t"}, "contribute", SCHEMAS["contribute"])
    assert error.problems == ["contribute needs `summary`",
                              "`kind` must be one of note, lemma, attempt, review, code, summary; you sent 'proof'"]
    assert str(error).startswith("2 problems with the arguments of contribute:\n- contribute needs `summary`\n- ")
    assert refusal({"kind": "note", "title": "t", "summary": None}, "contribute",
                   SCHEMAS["contribute"]).problems == ["contribute needs `summary`"]  # null is no value


def test_unknown_fields_are_dropped_with_a_note_and_optional_nulls_left_out() -> None:
    done = checked({"path": "notes/a.md", "content": "x", "mode": "w", "append": None}, "write_file",
                   SCHEMAS["write_file"])
    assert done == ({"path": "notes/a.md", "content": "x"}, ["ignored `mode`: write_file has no such argument"])


def test_every_problem_of_a_call_is_reported_at_once_with_its_notes() -> None:
    error = refusal({"kind": "attempt", "title": ["a", "b"], "summary": 3, "informed_by": [None], "style": "terse"},
                    "contribute", SCHEMAS["contribute"])
    assert error.problems == ["`title` must be a string; you sent a list: send one string of text, not a list "
                              "(join the parts yourself)",
                              "`informed_by[0]` must be a string; you sent null"]
    assert error.notes == ["`summary` 3 read as '3'", "ignored `style`: contribute has no such argument"]
    assert str(error).endswith("\nnote: `summary` 3 read as '3'; ignored `style`: contribute has no such argument")


@pytest.mark.parametrize(("sent", "named"), [(["notes/a.md"], "a list"), ("notes/a.md", "'notes/a.md'"),
                                             (3, "3"), (True, "true")])
def test_arguments_that_are_not_an_object_are_refused(sent: object, named: str) -> None:
    error = refusal(sent, "read_file", SCHEMAS["read_file"])
    assert str(error) == ('the arguments of read_file must be one JSON object of named fields ({"path": ...}); '
                          f"you sent {named}")


def test_no_arguments_at_all_is_an_empty_object() -> None:
    assert checked(None, "in_flight", SCHEMAS["in_flight"]) == ({}, [])
    assert refusal(None, "search", SCHEMAS["search"]).problems == ["search needs `query`"]


@pytest.fixture
def toolbox(tmp_path: Path) -> Toolbox:
    """The real Toolbox of one episode on a demo problem of a real run."""
    problems = load_set(resolve_set("demo"))
    memory = Memory.create(tmp_path / "run", problems, problem_ids=[PROBLEM])
    index = MemoryIndex()
    indexing.update(index, memory.repo, memory.main())
    view = RunView(SolveConfig(problems=problems.path, run=memory.path, model="m"), [PROBLEM])
    ep = EpisodePlan("e00001", "w01", PROBLEM, "proof", "odd sums", memory.main())
    return Toolbox(Store(memory), index, view, ep, anyio.CapacityLimiter(1))


@pytest.mark.anyio
async def test_the_toolbox_checks_before_it_runs_and_tells_what_it_changed(toolbox: Toolbox) -> None:
    with pytest.raises(ToolError, match=r"^`reason` must be a string; you sent a list"):
        await toolbox.call("abstain", {"reason": ["no", "idea"]})
    attempt = {"kind": "attempt", "title": "t", "summary": "s", "reviews": "attempts/x.md", "verdict": "pass"}
    with pytest.raises(ToolError) as refused:  # the handler's refusal carries the notes too
        await toolbox.call("contribute", attempt)
    assert str(refused.value) == ("nothing is staged: write_file first, then contribute\n"
                                  "note: ignored `reviews` (only for kind review); "
                                  "ignored `verdict` (only for kind review)")
    staged = await toolbox.call("write_file", {"path": "attempts/a.md", "content": "proof", "append": "true", "x": 1})
    assert staged == ("staged attempts/a.md (5 characters); 1 file(s) staged\n"
                      "note: `append` 'true' read as true; ignored `x`: write_file has no such argument")
    final = await toolbox.call("contribute", attempt)
    assert isinstance(final, Final) and final.action == "contribute"
    c = final.contribution
    assert (c.candidate, c.reviews, c.verdict, c.kind) == ("", "", "", "attempt")
    with pytest.raises(ToolError, match=r"^a review ends with a verdict"):  # a review still needs both
        await toolbox.call("contribute", {**attempt, "kind": "review", "verdict": None})
    with pytest.raises(ToolError, match=r"^there is no tool 'shell'"):
        await toolbox.call("shell", {"command": "true"})


@pytest.mark.anyio
async def test_a_small_models_mistakes_go_back_to_it_and_the_episode_still_contributes(tmp_path: Path):
    listed = call("abstain", {"reason": ["not sure", "giving up"]})
    listed_content = call("write_file", {"path": "attempts/odd.md", "content": ["# Odd sums", "By induction."]})
    written = call("write_file", {"path": "attempts/odd.md", "content": "# Odd sums\n\nBy induction.\n"})
    everything = call("contribute", {"kind": "attempt", "title": 42, "summary": "By induction.",
                                     "informed_by": None, "self_assessment": "complete",
                                     "reviews": "attempts/other.md", "verdict": "pass", "confidence": "high"})
    record, server, run = await one_episode(tmp_path, [FakeReply(tool_calls=[listed]),
                                                       FakeReply(tool_calls=[listed_content]),
                                                       FakeReply(tool_calls=[written]),
                                                       FakeReply(tool_calls=[everything])])
    assert record.status == "contribute" and record.calls == 4
    assert "error: `reason` must be a string; you sent a list: send one string of text" in said(server, 1)
    assert "error: `content` must be a string; you sent a list: send one string of text" in said(server, 2)
    assert "staged attempts/odd.md" in said(server, 3) and "note:" not in said(server, 3)
    message = git(run, "log", "-1", "--format=%B", record.commit)
    assert message.startswith("attempt(demo-odd-sum): 42")
    assert "Gitswarm-Verdict" not in message and "Gitswarm-Reviews" not in message
    assert git(run, "show", f"{record.commit}:problems/{PROBLEM}/attempts/odd.md") == "# Odd sums\n\nBy induction.\n"
