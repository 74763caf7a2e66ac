"""One plan per episode (`engine.plan`): each role is offered the tools, told the prompts and
allowed the contribution kinds that role can use, and no other; a code problem's deliverable is
a codebase in every role; the first prompt of every episode on a reproduce problem names its
documentation files, which `read_file` lists and `search` reads. Real run repositories of the
shipped reproduce set, the real prompts and tool schemas."""

from __future__ import annotations

import re
from pathlib import Path

import anyio
import pytest

from gitswarm.domain.contribution import Contribution
from gitswarm.domain.index import MemoryIndex
from gitswarm.engine import context, reviewing
from gitswarm.engine.config import SolveConfig
from gitswarm.engine.context import system_prompt
from gitswarm.engine.plan import Assignment, EpisodePlan, Role, plan
from gitswarm.engine.runview import RunView
from gitswarm.engine.tools import Toolbox, tool_schemas
from gitswarm.engine.tools.args import ToolError
from gitswarm.memory import indexing
from gitswarm.memory.repo import Memory
from gitswarm.memory.store import Store
from gitswarm.problems.loader import load_set
from gitswarm.resources import resolve_set

SETTINGS = {
    Role.WORKER: {}, Role.FREE: {"reviews": "assigned"}, Role.REVIEW: {"reviews": "assigned"},
    Role.BLIND: {"reviews": "blind"}, Role.INDEPENDENT: {"isolation": "independent"},
    Role.BEST_OF_N: {"isolation": "best-of-n"},
}
"""Settings of a run in which an episode has each role (a review given its assignment)."""
SWARM_ONLY = {"nominate", "announce", "in_flight", "list_items"}


def plan_of(role: Role, kind: str, problems: Path, run: Path, tips: tuple[str, str] = ("a" * 40, "b" * 40),
            candidate: str = "code/mine") -> EpisodePlan:
    cfg = SolveConfig(problems=problems, run=run, model="m", workers=3, **SETTINGS[role])
    review = Assignment(candidate, "c" * 40, role == Role.BLIND) if role in (Role.REVIEW, Role.BLIND) else None
    made = plan(cfg, "e1", "w01", ("p", kind, "P", None), tips, review)
    assert made.role == role
    return made


@pytest.mark.parametrize("role", list(Role))
@pytest.mark.parametrize("kind", ["proof", "reproduce"])
def test_each_role_is_offered_its_tools_told_its_prompt_and_allowed_its_kinds(role: Role, kind: str,
                                                                               tmp_path: Path):
    ep = plan_of(role, kind, tmp_path, tmp_path / "r")
    offered = [t["function"]["name"] for t in tool_schemas(ep.kind, ep.role)]
    assert offered == list(ep.tools) and ("shell" in offered) == (kind == "reproduce")
    prompt = system_prompt(ep)
    isolated = role in (Role.INDEPENDENT, Role.BEST_OF_N)
    if isolated:  # its own system prompt: nothing of nominations, announcements, a memory to build on
        assert not SWARM_ONLY & set(offered)
        assert not re.search(r"nominat|announce|in_flight|build on the memory", prompt, re.I), prompt
        assert "independent" in prompt and "review" not in ep.kinds and "summary" not in ep.kinds
        assert set(ep.kinds) <= {"attempt", "code"}  # its candidate alone: a note there is read by no one
        assert ep.start_commit == "b" * 40 and not ep.powers.sees_memory  # the run's first commit
    if kind == "reproduce":  # a codebase in every role: never an attempt where one works alone
        assert ep.deliverable == "code"
        assert "attempt" not in ep.kinds or role in (Role.WORKER, Role.FREE)
        assert not isolated or ("code/<slug>/" in prompt and "kind `code`" in prompt)
    else:
        assert ep.deliverable == "attempt" and (not isolated or "code" not in ep.kinds)
    if role in (Role.REVIEW, Role.BLIND):
        assert ep.kinds == ("review",) and not {"nominate", "announce"} & set(offered)
        assert ep.may_write("reviews/r.md") and not ep.may_write("notes/n.md")
    if role == Role.BLIND:
        assert ep.start_commit == "c" * 40 and ep.powers.shows == "candidate"
    if role in (Role.WORKER, Role.FREE):
        assert {"nominate", "announce", "in_flight"} <= set(offered) and ep.may_write("SUMMARY.md")
        assert ("review" in ep.kinds) == (role == Role.WORKER)


def test_the_first_prompt_of_every_role_on_a_reproduce_problem_names_its_documentation(tmp_path: Path):
    shipped = load_set(resolve_set("reproduce"))
    memory = Memory.create(tmp_path / "run", shipped, problem_ids=["rpn"])
    code = memory.contribute(Contribution("rpn", "e0", "w02", "code", "rpn", {"code/mine/compile.sh": "true\n"},
                                          memory.main(), "e0-final"))
    memory.compose(["e0"])
    index = MemoryIndex()
    indexing.update(index, memory.repo, memory.main())
    size = len((shipped.path / "rpn" / "docs" / "rpn.md").read_bytes())
    for role in Role:
        ep = plan_of(role, "reproduce", shipped.path, memory.path, (memory.main(), memory.root()))
        ep = EpisodePlan(ep.episode, ep.worker, "rpn", ep.kind, "RPN", code.commit if ep.review and
                         role == Role.BLIND else ep.start_commit, None, ep.role,
                         Assignment("code/mine", code.commit, role == Role.BLIND) if ep.review else None,
                         terms=ep.terms)
        view = RunView(problems=["rpn"])
        if ep.powers.shows == "candidate":
            first = reviewing.first_prompt(memory, ep, "")
        else:
            first = context.overview(memory, view, index if ep.powers.sees_memory else MemoryIndex(), ep, "")
        assert f"`docs/rpn.md` ({size} bytes)" in first, (role, first)
        assert ("another worker wrote" in first) == (role in (Role.WORKER, Role.FREE)), role  # isolated: its own
        if ep.powers.shows == "memory":  # the state block's last line names the role's final actions alone
            state = context.header(view, index if ep.powers.sees_memory else MemoryIndex(), ep, 1, [])
            ends = re.search(r"end with (.*) before step", state)
            assert ends and ("nominate" in ends.group(1)) == ("nominate" in ep.tools), (role, state)


def test_read_file_lists_a_folder_search_reads_the_docs_and_a_miss_says_what_there_is(tmp_path: Path):
    shipped = load_set(resolve_set("reproduce"))
    memory = Memory.create(tmp_path / "run", shipped, problem_ids=["rpn"])
    made = plan_of(Role.BEST_OF_N, "reproduce", shipped.path, memory.path, (memory.main(), memory.root()))
    ep = EpisodePlan("e1", "w01", "rpn", "reproduce", "RPN", memory.root(), None, made.role, terms=made.terms)
    tools = Toolbox(Store(memory), MemoryIndex(), RunView(problems=["rpn"]), ep, anyio.CapacityLimiter(1))
    docs = (shipped.path / "rpn" / "docs" / "rpn.md").read_text()
    word = next(w for w in docs.split() if len(w) > 8 and w.isalpha())

    async def calls() -> tuple[str, str, str]:
        listed = await tools.call("read_file", {"path": "docs"})
        found = await tools.call("search", {"query": word})
        with pytest.raises(ToolError) as missed:
            await tools.call("read_file", {"path": "doc"})
        return listed, found, str(missed.value)

    listed, found, missed = anyio.run(calls)
    assert f"docs/rpn.md ({len(docs.encode())} bytes)" in listed
    assert "docs/rpn.md:" in found
    assert "read_file on a folder (e.g. docs) lists its files" in missed and "list_items" not in missed
    with pytest.raises(ToolError, match="there is no tool 'nominate'"):
        anyio.run(lambda: tools.call("nominate", {"candidate": "x", "rationale": "y"}))
    with pytest.raises(ToolError, match="writes only under"):
        anyio.run(lambda: tools.call("write_file", {"path": "SUMMARY.md", "content": "x"}))


def test_the_items_table_shows_a_codebases_title_and_keeps_a_bar(tmp_path: Path):
    """A codebase's row shows its contribution's title (its files' first lines are code), and a
    `|` in a title stays one, escaped for the table (written `/`, `10^100 | n!` said the opposite)."""
    shipped = load_set(resolve_set("reproduce"))
    memory = Memory.create(tmp_path / "run", shipped, problem_ids=["rpn"])
    memory.contribute(Contribution("rpn", "e0", "w02", "code", "RPN in C: a | b pipes", {
        "code/mine/compile.sh": "#!/bin/sh\ncc -o executable rpn.c\n"}, memory.main(), "e0-final"))
    memory.contribute(Contribution("rpn", "e1", "w03", "note", "n", {
        "notes/divides.md": "# 10^100 | n! holds for n >= 405\n"}, memory.main(), "e1-final"))
    memory.compose(["e0", "e1"])
    index = MemoryIndex()
    indexing.update(index, memory.repo, memory.main())
    made = plan_of(Role.WORKER, "reproduce", shipped.path, memory.path, (memory.main(), memory.root()))
    ep = EpisodePlan("e2", "w01", "rpn", "reproduce", "RPN", memory.main(), None, made.role, terms=made.terms)
    first = context.overview(memory, RunView(problems=["rpn"]), index, ep, "")
    rows = {line.split(" | ")[0].removeprefix("| "): line for line in first.splitlines() if line.startswith("| ")}
    assert rows["code/mine/"].endswith(r"| RPN in C: a \| b pipes |"), rows
    assert rows["notes/divides.md"].endswith(r"| 10^100 \| n! holds for n >= 405 |"), rows
    assert "#!/bin/sh" not in first


def test_a_second_attempt_beside_a_first_under_way_is_told_so(tmp_path: Path):
    """Where the scheduler starts a second attempt beside a first one being written (the swarm,
    more workers than problems), its state says that is its task, not only that a first attempt is
    under way (read as: wait for it); with a worker per problem it is not advised."""
    shipped = load_set(resolve_set("reproduce"))
    memory = Memory.create(tmp_path / "run", shipped, problem_ids=["rpn"])
    for workers, problems, advised in ((4, ["rpn"], True), (3, ["rpn", "fcut", "stencil"], False)):
        cfg = SolveConfig(problems=shipped.path, run=memory.path, model="m", workers=workers)
        view = RunView(problems=problems)
        view.working("w01", "e1", "rpn", 3)
        ep = plan(cfg, "e2", "w02", ("rpn", "reproduce", "RPN", None), (memory.main(), memory.root()), None)
        state = context.header(view, MemoryIndex(), ep, 1, [])
        assert "a first attempt is under way (w01's e1 at step 3)" in state
        assert ("most useful next: a second attempt" in state) == advised, (workers, state)


def test_a_candidates_contribution_must_stage_its_candidate(tmp_path: Path):
    """Kind attempt commits a file under attempts/, kind code a change under code/: a revision
    that staged only SUMMARY.md (its attempt's write refused) would answer the critical review it
    cites with no candidate, and leave its problem with nothing for anyone to do."""
    shipped = load_set(resolve_set("demo"))
    memory = Memory.create(tmp_path / "run", shipped, problem_ids=["demo-odd-sum"])
    made = plan_of(Role.WORKER, "proof", shipped.path, memory.path, (memory.main(), memory.root()))
    ep = EpisodePlan("e1", "w01", "demo-odd-sum", "proof", "Odd sum", memory.main(), None, made.role,
                     terms=made.terms)
    tools = Toolbox(Store(memory), MemoryIndex(), RunView(problems=["demo-odd-sum"]), ep, anyio.CapacityLimiter(1))

    def call(name: str, **args):
        return anyio.run(lambda: tools.call(name, args))

    call("write_file", path="SUMMARY.md", content="# Summary\n\nA plan.\n")
    for kind, folder in (("attempt", "attempts/"), ("code", "code/")):
        with pytest.raises(ToolError, match=f"nothing is staged under {folder}.*other work is kind note"):
            call("contribute", kind=kind, title="t", summary="s")
    assert call("contribute", kind="note", title="a plan", summary="s").contribution.kind == "note"
    call("write_file", path="attempts/a.md", content="Proof.\n")
    assert call("contribute", kind="attempt", title="t", summary="s").contribution.kind == "attempt"
