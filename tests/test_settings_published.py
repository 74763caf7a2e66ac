"""The run's settings are published and taken whole: every field of `SolveConfig` declares its
part (run, model, process); a coordinator publishes the run's part to a real bare remote, and a
worker reads every field of it back; the model part reaches the model client; a remote run with
`--isolation independent` runs independent episodes on its workers; the report of a remote run
names the coordinator's model, and reads the settings of runs published before."""

from __future__ import annotations

import json
import os
import re
import sys
from dataclasses import fields
from pathlib import Path
from types import UnionType
from typing import Literal, Union, get_args, get_origin

import annotated_types
import anyio
import pytest
from conftest import git
from pydantic.fields import FieldInfo
from test_isolation import marking  # looks for others' work, then writes an attempt with its own mark
from typer.testing import CliRunner

from gitswarm.cli.main import app
from gitswarm.engine.config import PARTS, SolveConfig, declared_parts
from gitswarm.engine.ledger import Ledger
from gitswarm.fakeserver import serve
from gitswarm.memory.repo import Memory
from gitswarm.problems.loader import load_set
from gitswarm.remote import publish
from gitswarm.remote.coordinator import OWN_REFS
from gitswarm.remote.daemon import bare
from gitswarm.remote.transport import Remote
from gitswarm.remote.worker import WorkerOptions, join, worker_config
from gitswarm.resources import resolve_set

SECRET = "sk-not-to-be-published"


def other_than(info: FieldInfo) -> object:
    """A valid value of a field other than its default, found from the field's type (a share,
    bounded above, halved)."""
    if any(isinstance(meta, annotated_types.Le | annotated_types.Lt) for meta in info.metadata):
        return info.get_default() / 2
    return _other(info.annotation, info.get_default())


def _other(annotation: object, default: object) -> object:
    origin = get_origin(annotation)
    if origin is Literal:
        return next(value for value in get_args(annotation) if value != default)
    if origin in (Union, UnionType):
        return _other(next(a for a in get_args(annotation) if a is not type(None)), default)
    if annotation is bool:
        return not default
    if annotation is int:
        return (default or 0) + 3
    if annotation is float:
        return (default or 0.0) + 2.5
    if origin is tuple:
        return ("sum",)
    if origin is dict:  # a setting by kind: one kind's
        return {get_args(get_args(annotation)[0])[-1]: 40}
    if annotation is str:
        return f"openai/not-{default}"
    raise AssertionError(f"teach other_than a value of {annotation}")


def changed(part: str) -> dict:
    """A value other than the default for every field of `part`."""
    values = {name: other_than(SolveConfig.model_fields[name]) for name in PARTS[part]}
    assert all(values[name] != SolveConfig.model_fields[name].get_default() for name in values)
    return values


def test_every_field_is_in_exactly_one_part():
    every = [name for names in PARTS.values() for name in names]
    assert sorted(every) == sorted(SolveConfig.model_fields)  # none left out, none twice
    assert "isolation" in PARTS["run"] and "api_key" in PARTS["model"] and "run" in PARTS["process"]

    class Undeclared(SolveConfig):
        new_setting: int = 0

    with pytest.raises(TypeError, match=r"Undeclared\.new_setting declares no part"):
        declared_parts(Undeclared)


def published_run(tmp_path: Path, memory: Memory, problem_dir: Path, cfg: SolveConfig) -> str:
    """`cfg` published as a coordinator publishes it, to a bare remote; its URL."""
    url = bare(tmp_path / "run.git").as_uri()
    publish.write_settings(memory, publish.settings_of(cfg, load_set(problem_dir), ["sum"], 600))
    publish.Publisher(Remote(url, memory.path), OWN_REFS).push(OWN_REFS)
    return url


def test_every_field_of_the_run_part_reaches_a_worker_and_nothing_of_the_model(
        tmp_path: Path, memory: Memory, problem_dir: Path):
    run = changed("run") | {"isolation": "best-of-n"}  # independent would refuse the reviews changed
    cfg = SolveConfig(problems=problem_dir, run=memory.path, model="openai/coordinator", api_key=SECRET,
                      api_base="http://127.0.0.1:9/v1", workers=9, time_limit_s=60, **run)
    url = published_run(tmp_path, memory, problem_dir, cfg)
    folder = tmp_path / "worker"
    folder.mkdir()
    settings = join(Remote(url, folder), "far")
    worker = worker_config(WorkerOptions(url, folder, "far", 3, {"model": "openai/own"}), settings)
    for name in PARTS["run"]:
        assert getattr(worker, name) == getattr(cfg, name), name
    assert (worker.model, worker.api_key, worker.api_base, worker.workers, worker.run, worker.time_limit_s) == (
        "openai/own", None, None, 3, folder, None)  # its own model part and process part
    shown = git(tmp_path / "run.git", "show", f"{publish.META_REF}:{publish.SETTINGS}")
    assert SECRET not in shown and "127.0.0.1:9" not in shown


def test_a_run_part_of_other_fields_is_refused_naming_them(tmp_path: Path, memory: Memory, problem_dir: Path):
    cfg = SolveConfig(problems=problem_dir, run=memory.path, model="openai/m")
    settings = publish.settings_of(cfg, load_set(problem_dir), ["sum"], 600)
    options = WorkerOptions("file:///srv/run.git", tmp_path / "w", "far", 2, {"model": "openai/m"})
    newer = {**settings, "gitswarm": "9.9", "solve": {**settings["solve"], "rounds": 3}}
    with pytest.raises(publish.OtherSettings, match=r"gitswarm 9\.9.*does not know: rounds.*install the coord"):
        worker_config(options, newer)
    older = {**settings, "solve": {k: v for k, v in settings["solve"].items() if k != "isolation"}}
    with pytest.raises(publish.OtherSettings, match="it lacks isolation"):
        worker_config(options, older)


def test_every_field_of_the_model_part_reaches_the_model_client(problem_dir: Path, tmp_path: Path):
    from gitswarm.models.config import ModelConfig

    values = changed("model") | {"model": "openai/w", "merger_model": "openai/m", "reply_timeout_s": 300.0}
    cfg = SolveConfig(problems=problem_dir, run=tmp_path / "run", **values)
    worker, merger, reviewer = cfg.models.each
    client = {f.name for f in fields(ModelConfig)}
    assert PARTS["model"] - client == {"merger_model", "merger_reasoning_effort", "reviewer_model",  # read by name
                                       "reviewer_api_base", "reviewer_reasoning_effort", "reviewer_price_in_per_mtok",
                                       "reviewer_price_out_per_mtok"}
    for name in PARTS["model"] & client:
        assert getattr(worker, name) == getattr(cfg, name), name
    assert (merger.model, merger.reasoning_effort, merger.price_in_per_mtok) == (
        "openai/m", cfg.merger_reasoning_effort, None)  # the user's prices are the workers' model's
    assert (reviewer.model, reviewer.api_base, reviewer.reasoning_effort, reviewer.price_in_per_mtok,
            reviewer.price_out_per_mtok, reviewer.price_cached_in_per_mtok) == (
        cfg.reviewer_model, cfg.reviewer_api_base, cfg.reviewer_reasoning_effort, cfg.reviewer_price_in_per_mtok,
        cfg.reviewer_price_out_per_mtok, None)  # the reviewer's own
    # the coordinator's local worker copies its model part whole: the same model in every role
    options = WorkerOptions("file:///srv/run.git", tmp_path / "w", "local", 2, cfg.part("model"))
    local = worker_config(options, publish.settings_of(cfg, load_set(problem_dir), ["sum"], 600))
    assert local.models == cfg.models and local.models.reviewer is not None


def test_the_model_part_s_defaults_are_the_model_client_s():
    from gitswarm.models.config import ModelConfig

    client = {f.name: f.default for f in fields(ModelConfig) if f.name in PARTS["model"] - {"model"}}
    assert {"idle_timeout_s", "reply_timeout_s", "tool_protocol"} <= set(client)
    assert client == {name: SolveConfig.model_fields[name].default for name in client}


def report(url: str) -> tuple[dict, str]:
    """The JSON report's settings and the markdown report of the run at `url`."""
    runner = CliRunner()
    as_json, markdown = (runner.invoke(app, ["report", url, *args]) for args in (("-f", "json"), ()))
    assert as_json.exit_code == 0 and markdown.exit_code == 0, as_json.output + markdown.output
    return json.loads(as_json.output)["settings"], markdown.output


def test_the_report_of_a_remote_run_names_the_coordinators_model_and_reads_older_runs(
        tmp_path: Path, memory: Memory, problem_dir: Path):
    cfg = SolveConfig(problems=problem_dir, run=memory.path, model="openai/coordinator", budget=9, workers=3,
                      reviewer_model="openai/checker", verify=2)
    url = published_run(tmp_path, memory, problem_dir, cfg)
    settings, markdown = report(url)
    assert (settings["model"], settings["budget"], settings["source"], settings["reviewer"]) == (
        "openai/coordinator", 9, "the coordinator's published settings", "openai/checker")
    assert "Model openai/coordinator; budget 9 episodes" in markdown
    # As gitswarm published it at run protocol 1: fifteen run fields and no model; still read.
    old = {"protocol": 1, "gitswarm": "0.1.0", "claim_ttl_s": 600, "set": "set",
           "problems": {"sum": {"kind": "answer", "title": "Sum"}},
           "solve": {"budget": 7, "max_episodes": 21, "no_progress": 4, "max_usd": None, "max_total_tokens": None,
                     "verify": 2, "settle_nominations": 3, "max_steps": 12, "episode_timeout_s": 10800.0,
                     "context_tokens": 6000, "overview_cited": 8, "overview_newest": 8, "summary_every": 5,
                     "seed": 0, "problem_ids": []}}
    publish.write_settings(memory, old)
    publish.Publisher(Remote(url, memory.path), OWN_REFS).push(OWN_REFS)
    settings, markdown = report(url)
    assert (settings["model"], settings["budget"], settings["max_episodes"]) == (None, 7, 21)
    assert "Model not recorded; budget 7 episodes" in markdown


MARK = re.compile(r"MARK-\d+")


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.mark.slow  # a coordinator and a worker process over a file:// remote: about 30 s
@pytest.mark.anyio
async def test_a_remote_run_with_independent_isolation_runs_independent_episodes_on_its_workers(
        tmp_path: Path, problem_dir: Path):
    url = bare(tmp_path / "run.git").as_uri()
    mirror, folder, env = tmp_path / "mirror", tmp_path / "far", {**os.environ, "OPENAI_API_KEY": "not-secret"}
    gitswarm = [sys.executable, "-m", "gitswarm"]
    async with serve(marking()) as server:
        model = ["--model", "openai/gitswarm-fake", "--api-base", server.url]
        done: dict[str, object] = {}

        async def run(name: str, command: list[str]) -> None:
            done[name] = await anyio.run_process(command, env=env, check=False)

        with anyio.fail_after(240):
            async with anyio.create_task_group() as tg:
                tg.start_soon(run, "coordinator", [*gitswarm, "solve", str(problem_dir), "--run", url, "--mirror",
                                                   str(mirror), "--workers", "0", "--budget", "6", "--problem", "sum",
                                                   "--isolation", "independent", "--no-tui", *model])
                tg.start_soon(run, "worker", [*gitswarm, "worker", url, "--name", "far", "--dir", str(folder),
                                              "--workers", "3", "--patience", "60", "--json", *model])
    for name, process in done.items():
        assert process.returncode == 0, (name, process.stderr.decode())
    records = Ledger.load(Memory(mirror)).episodes.values()
    episodes = [r for r in records if r.problem == "sum"]
    assert len(episodes) == 6 and {r.process for r in episodes} == {"far"}  # every episode ran on the worker
    assert {r.status for r in episodes} == {"contribute"}  # none reviewed, nominated or abstained
    for request in server.requests:
        if request.get("tools"):  # a worker's episode (the merger calls without tools)
            seen = set(MARK.findall(str(request["messages"])))
            assert len(seen) <= 1, seen  # at most the episode's own attempt, never another's
    first = [r for r in server.requests if r.get("tools") and len(r["messages"]) == 2]
    assert len(first) == 6 and all("made independently" in r["messages"][1]["content"] for r in first)
    tree = git(mirror, "ls-tree", "-r", "--name-only", "main", "problems/sum")
    assert "/reviews/" not in tree and "/nominations/" not in tree
    solution = git(mirror, "show", "main:problems/sum/SOLUTION.md")
    assert "majority of answers: 4 of 6 attempts answer 7" in solution
    settings, _ = report(url)
    assert settings["model"] == "openai/gitswarm-fake"


def test_a_worker_s_reviewer_model_needs_a_run_whose_reviews_are_assigned(tmp_path: Path, memory: Memory,
                                                                          problem_dir: Path):
    from pydantic import ValidationError

    options = WorkerOptions("file:///srv/run.git", tmp_path / "w", "far", 3,
                            {"model": "openai/m", "reviewer_model": "openai/r"})
    blind = SolveConfig(problems=problem_dir, run=memory.path, model="openai/c", reviews="blind")
    worker = worker_config(options, publish.settings_of(blind, load_set(problem_dir), ["sum"], 600))
    assert (worker.reviewer_model, worker.reviews) == ("openai/r", "blind")  # the run's reviews, its own model
    open_ = SolveConfig(problems=problem_dir, run=memory.path, model="openai/c")
    with pytest.raises(ValidationError, match="this run's are open"):
        worker_config(options, publish.settings_of(open_, load_set(problem_dir), ["sum"], 600))


@pytest.mark.slow  # a coordinator process with worker slots of its own over a file:// remote: about 30 s
@pytest.mark.anyio
async def test_a_coordinators_own_slots_run_their_reviews_on_the_reviewer_model(tmp_path: Path):
    from gitswarm.demo.brain import respond

    url = bare(tmp_path / "run.git").as_uri()
    mirror, env = tmp_path / "mirror", {**os.environ, "OPENAI_API_KEY": "not-secret"}
    async with serve(respond) as workers, serve(respond) as reviewers:
        with anyio.fail_after(240):
            done = await anyio.run_process(
                [sys.executable, "-m", "gitswarm", "solve", str(resolve_set("demo")), "--run", url, "--mirror",
                 str(mirror), "--workers", "4", "--budget", "12", "--problem", "demo-odd-sum", "--no-tui",
                 "--model", "openai/worker-model", "--api-base", workers.url, "--reviewer-model",
                 "openai/reviewer-model", "--reviewer-api-base", reviewers.url], env=env, check=False)
    assert done.returncode == 0, done.stderr.decode()
    records = [r for r in Ledger.load(Memory(mirror)).episodes.values() if r.episode != "merger"]
    reviews = [r for r in records if r.reviews]
    assert reviews and all(r.model == "openai/reviewer-model" for r in reviews)
    asked = [r for r in reviewers.requests if r.get("tools")]
    assert asked and all(r["model"] == "reviewer-model" for r in asked)  # called, not only named
    assert not [r for r in workers.requests if r.get("tools") and "You are a reviewer" in r["messages"][0]["content"]]
