"""A fair baseline (issue 44): where every first attempt is right and every review judges
rightly, a run spends K + 1 charged episodes per problem, in the best-of-n arm as in the swarm
(one attempt, K reviews: no second attempt beside a first under way, no review a settled problem
cannot use), and an isolated arm writes no summary at all. The real CLI runs the real engine
against the scripted solver (`gitswarm experiment`), read back with git."""

from __future__ import annotations

import json
import re
from pathlib import Path

from conftest import git
from typer.testing import CliRunner

from gitswarm.cli.main import app
from gitswarm.domain.index import MemoryIndex
from gitswarm.domain.rule import Rule
from gitswarm.engine import digest, tasks
from gitswarm.memory import indexing
from gitswarm.memory.repo import Memory

PROBLEMS = ["ans-dice-range", "ans-divisor-shift", "ans-heron-area"]
SPEC = f"""problems = "answers"
seeds = [0]
baseline = "best-of-n"
[budget]
episodes = 30
[solve]
model = "scripted-solver"
problem_ids = {json.dumps(PROBLEMS)}
workers = 3
verify = 2
[scripted]
p = 1.0
boost = 0.0
check = 1.0
[arms]
best-of-n = {{isolation = "best-of-n"}}
swarm = {{}}
"""


def kinds(run: Path) -> dict[str, list[str]]:
    """Each episode's contribution kind, by problem, from the commits' trailers."""
    log = git(run, "log", "--all", "--no-merges", "--format=%(trailers:key=Gitswarm-Kind,valueonly)%x1f"
              "%(trailers:key=Gitswarm-Episode,valueonly)%x1f%(trailers:key=Gitswarm-Problem,valueonly)%x1e")
    found: dict[str, dict[str, str]] = {}
    for entry in log.split("\x1e"):
        kind, episode, problem = (x.strip() for x in entry.split("\x1f")) if entry.strip() else ("", "", "")
        if episode and kind:
            found.setdefault(problem, {})[episode] = kind
    return {p: sorted(by.values()) for p, by in found.items()}


def test_k_plus_one_charged_episodes_per_problem_in_both_arms_and_no_model_summary(tmp_path: Path):
    spec = tmp_path / "fair.toml"
    spec.write_text(SPEC)
    result = CliRunner().invoke(app, ["experiment", str(spec), "--no-tui", "--out", str(tmp_path / "exp")])
    assert result.exit_code == 0, result.output
    for arm in ("best-of-n", "swarm"):
        run = tmp_path / "exp" / "runs" / f"{arm}-s0"
        by_problem = kinds(run)
        assert set(by_problem) == set(PROBLEMS), (arm, by_problem)
        assert all(k == ["attempt", "review", "review"] for k in by_problem.values()), (arm, by_problem)
        subjects = git(run, "log", "--all", "--format=%s")
        assert "the merger's summary" not in subjects, arm
        if arm == "best-of-n":  # no episode reads a summary in an isolated arm: digests alone, no model call
            summaries = re.findall(r"^summary\(.*$", subjects, re.M)
            assert summaries and all("without a model call" in s for s in summaries), summaries
        for problem in PROBLEMS:  # in both arms SUMMARY.md says where the problem stands, for the person reading
            assert "No work on this problem yet" not in git(run, "show", f"main:problems/{problem}/SUMMARY.md"), arm
    shown = CliRunner().invoke(app, ["status", str(tmp_path / "exp" / "runs" / "best-of-n-s0")])
    assert shown.exit_code == 0 and "reviews blind, isolation best-of-n" in shown.output, shown.output


def test_a_second_attempt_waits_while_a_first_is_under_way_unless_the_leader_failed(memory: Memory):
    index = MemoryIndex()
    indexing.update(index, memory.repo, memory.main())
    best_of_n = Rule(verify=2, nominations=False)
    assert tasks.next_task(index, "sum", "w01", best_of_n).value == 2  # the first attempt
    assert tasks.next_task(index, "sum", "w01", best_of_n, in_flight=1).value == tasks.FILLER  # one is under way
    assert tasks.next_task(index, "sum", "w01", Rule(verify=2), in_flight=1).value == tasks.FILLER  # in the swarm too
    from gitswarm.domain.contribution import Contribution

    attempt = memory.contribute(Contribution("sum", "e1", "w01", "attempt", "a", {"attempts/a.md": "Answer: 8"},
                                             memory.main(), "e1-final"))
    memory.compose(["e1"])
    indexing.update(index, memory.repo, memory.main())
    assert tasks.next_task(index, "sum", "w03", best_of_n).value == 3  # it waits for a review w03 can give
    assert tasks.next_task(index, "sum", "w03", best_of_n, reviews=False).value == tasks.FILLER
    memory.contribute(Contribution("sum", "e2", "w02", "review", "r", {"reviews/r.md": "wrong"}, memory.main(),
                                   "e2-final", reviews=attempt.commit, verdict="critical"))
    memory.compose(["e2"])
    indexing.update(index, memory.repo, memory.main())
    assert tasks.next_task(index, "sum", "w03", best_of_n).value == 2  # the leader failed: a new attempt


def test_a_written_summary_keeps_its_prose_and_its_standing_follows_the_state(memory: Memory):
    from gitswarm.domain.contribution import Contribution

    summary = "# Summary\n\nThe model's prose.\n"
    for episode, kind, files in (("e1", "summary", {"SUMMARY.md": summary}),
                                 ("e2", "attempt", {"attempts/a.md": "Answer: 7"})):
        memory.contribute(Contribution("sum", episode, "w01", kind, kind, files, memory.main(), f"{episode}-final"))
        memory.compose([episode])
    index = MemoryIndex()
    indexing.update(index, memory.repo, memory.main())
    text = digest.assemble(memory, index, "sum", Rule(verify=2), False)
    assert text is not None and text.startswith(summary.rstrip()) and digest.STANDING in text
    assert "attempts/a.md" in text and "unreviewed" in text
    again = digest.with_standing(memory, index, "sum", Rule(verify=2), True, text)
    assert again.count(digest.STANDING) == 1 and again.startswith(summary.rstrip())


def test_what_compile_sh_builds_and_the_scratch_folder_are_never_staged():
    from gitswarm.engine.workspace import Workspace
    from gitswarm.memory.paths import WriteLimits

    tree = Workspace({"code/mine/compile.sh": b"cp run.sh executable\n"})
    try:
        (tree.root / "mine" / "run.sh").write_text("#!/bin/sh\necho hi\n")
        (tree.root / "mine" / "executable").write_text("#!/bin/sh\necho hi\n")  # a text build product
        (tree.root / ".scratch").mkdir()
        (tree.root / ".scratch" / "test.sh").write_text("./mine/executable\n")
        scan = tree.scan(WriteLimits(), 100)
    finally:
        tree.close()
    assert set(scan.staged) == {"code/mine/run.sh"}
    skipped = {s.path: s.reason for s in scan.skipped}
    assert "build product" in skipped["code/mine/executable"] and "code/.scratch/" in skipped


def test_a_review_commits_its_review_and_nothing_of_what_it_reviews(memory: Memory, problem_dir: Path):
    import anyio

    from gitswarm.domain.contribution import Contribution
    from gitswarm.engine.config import SolveConfig
    from gitswarm.engine.plan import EpisodePlan
    from gitswarm.engine.runview import RunView
    from gitswarm.engine.tools import Toolbox
    from gitswarm.memory.store import Store

    memory.contribute(Contribution("sum", "e1", "w01", "attempt", "a", {"attempts/a.md": "Answer: 7"},
                                   memory.main(), "e1-final"))
    memory.compose(["e1"])
    index = MemoryIndex()
    indexing.update(index, memory.repo, memory.main())
    cfg = SolveConfig(problems=problem_dir, run=memory.path, model="m")
    tools = Toolbox(Store(memory), index, RunView(cfg, problems=["sum"]),
                    EpisodePlan("e2", "w02", "sum", "answer", "Sum", memory.main()), anyio.CapacityLimiter(1))

    async def review():
        await tools.call("write_file", {"path": "attempts/a.md", "content": "Answer: 8"})  # a fix of its own
        await tools.call("write_file", {"path": "reviews/r.md", "content": "Right."})
        return await tools.call("contribute", {"kind": "review", "title": "r", "summary": "s",
                                               "reviews": "attempts/a.md", "verdict": "pass"})

    final = anyio.run(review)
    assert set(final.contribution.files) == {"reviews/r.md"} and not final.contribution.deleted
