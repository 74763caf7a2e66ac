"""The episode side reads its plan, never the run's settings: the episode loop, its prompts, its
tools and its conversation's policy import no `engine.config` and read no `Shared.settings`; what
an episode knows of the settings is on its plan (`EpisodePlan.terms`), made once by the scheduler
(`plan.plan`). The run's view holds the live state alone."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import gitswarm
from gitswarm.engine.config import SolveConfig
from gitswarm.engine.plan import Role, RunModes, modes, plan, review_role
from gitswarm.engine.runview import RunView

ENGINE = Path(gitswarm.__file__).parent / "engine"
EPISODE_SIDE = ("episode.py", "context.py", "reviewing.py", "tools/*.py", "shell.py", "workspace.py", "window.py",
                "tasks.py", "terms.py", "conversation.py")
"""The modules an episode runs (`tools/*.py`: the tools, one module each, and their registry)."""


def _reads_settings(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module == "gitswarm.engine.config":
            found.append(f"{path.name}:{node.lineno}: imports engine.config")
        if isinstance(node, ast.Attribute) and node.attr == "settings":
            found.append(f"{path.name}:{node.lineno}: reads .settings")
    return found


def test_the_episode_side_reads_no_settings():
    modules = [path for pattern in EPISODE_SIDE for path in ENGINE.glob(pattern)]
    named = {p.name for p in modules}
    assert {"episode.py", "context.py", "reviewing.py", "terms.py", "box.py", "contribute.py"} <= named
    assert [line for path in modules for line in _reads_settings(path)] == []


def test_the_view_holds_no_settings():
    assert not any(f.type in (SolveConfig, "SolveConfig") for f in dataclasses.fields(RunView))


def test_an_episode_s_terms_are_its_run_s_settings(tmp_path: Path):
    cfg = SolveConfig(problems=tmp_path, run=tmp_path / "r", model="m", reviewer_model="r", reviews="blind",
                      workers=4, max_steps=7, max_steps_by_kind={"reproduce": 40}, budget=5, max_usd=2.0,
                      overview_cited=3, overview_newest=2, compact_by="digest", verify=2)
    terms = plan(cfg, "e1", "w01", ("p", "reproduce", "P", None), ("a" * 40, "b" * 40), None).terms
    assert (terms.max_steps, terms.budget, terms.max_episodes, terms.max_usd, terms.shown) == (40, 5, 15, 2.0, (3, 2))
    assert terms.rule.verify == 2 and terms.own_reviewer and terms.blind_reviews
    assert terms.trimming.compact_by == "digest" and terms.problems == tmp_path
    assert review_role(cfg) is Role.BLIND
    assert review_role(cfg.model_copy(update={"reviews": "open", "reviewer_model": None})) is None


def test_the_run_s_modes_are_derived_once_for_its_owners(tmp_path: Path):
    def of(**values: object) -> RunModes:
        return modes(SolveConfig(problems=tmp_path, run=tmp_path / "r", model="m", workers=4, **values))

    swarm, assigned = of(), of(reviewer_model="r")
    best, alone = of(isolation="best-of-n"), of(isolation="independent", verify=1)
    assert (swarm.arm, swarm.reviews, swarm.summaries, swarm.by_answers) == (Role.WORKER, None, True, False)
    assert (assigned.arm, assigned.reviews, assigned.summaries) == (Role.FREE, Role.REVIEW, True)
    assert (best.arm, best.reviews, best.summaries, best.by_answers) == (Role.BEST_OF_N, Role.BLIND, False, False)
    assert (alone.arm, alone.reviews, alone.summaries, alone.by_answers) == (Role.INDEPENDENT, None, False, True)
