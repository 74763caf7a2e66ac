"""`gitswarm demo`: the whole pipeline offline, the scripted model behind a fake provider."""

from __future__ import annotations

import contextlib
import functools
import sys
import time
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from gitswarm.cli.common import user_errors
from gitswarm.cli.resume import check_resume
from gitswarm.cli.running import refuse_busy, run_swarm
from gitswarm.cli.solve import TuiOpt, _config, _load, _want_tui, confine


class Provider(StrEnum):
    """The provider the fake server plays for the demo."""

    OPENAI = "openai"
    ANTHROPIC = "anthropic"
    OPENAI_REASONING = "openai-reasoning"
    LOCAL_NO_TOOLS = "local-no-tools"


MODELS: dict[Provider, tuple[str, dict[str, str]]] = {
    Provider.OPENAI: ("openai/gitswarm-scripted", {}),
    Provider.ANTHROPIC: ("anthropic/claude-sonnet-4-5", {"reasoning_effort": "low"}),
    Provider.OPENAI_REASONING: ("openai/o4-mini", {"reasoning_effort": "low"}),
    Provider.LOCAL_NO_TOOLS: ("openai/llama-local", {}),
}
"""The model each provider serves in the demo, and the settings a real run would give it."""


def demo_run(provider: Provider) -> Path:
    """The demo's run folder: `runs/demo`, or `runs/demo-<provider>` for another provider, so a
    demo with another provider starts its own run rather than resuming one made under another
    model (a run is resumed with the settings it started with)."""
    return Path("runs/demo" if provider is Provider.OPENAI else f"runs/demo-{provider.value}")


def demo(
    run: Annotated[Path | None, typer.Option(
        help="Where to write the demo run (default runs/demo, or runs/demo-<provider> with another "
             "--provider); an existing run is resumed.", show_default=False)] = None,
    workers: Annotated[int, typer.Option("--workers", min=1, help="Episodes in flight.")] = 4,
    provider: Annotated[Provider, typer.Option(
        help="The provider the fake server plays, with its documented rules: an OpenAI-compatible "
             "server; Anthropic's Messages API (thinking, prompt caching); an OpenAI reasoning "
             "model; a local server without tool calls (the text protocol).")] = Provider.OPENAI,
    as_json: Annotated[bool, typer.Option("--json", help="Print events as JSON lines.")] = False,
    latency: Annotated[float, typer.Option(
        min=0, help="Seconds the scripted model takes per call, to watch the swarm at human speed.")] = 0.0,
    tui: TuiOpt = None,
) -> None:
    """Run the whole pipeline offline on problems/demo: no API key, a scripted model.

    The scripted model answers through a fake provider on 127.0.0.1, so the demo exercises
    exactly the path a real model takes. With a priced model (--provider anthropic or
    openai-reasoning) the cost shown is what the provider would bill for those tokens; none
    is spent. Each provider's demo has a run folder of its own; running it again resumes
    that run. It ends by grading the selected solutions: answers and programs for real,
    proofs by a scripted judge (labelled so), into refs/gitswarm/grades.
    """
    from gitswarm.demo.brain import respond
    from gitswarm.fakeserver import FaultPlan
    from gitswarm.resources import data_dir

    model, settings = MODELS[provider]
    run = run or demo_run(provider)
    started = int(time.time())  # grades stored from here on are this demo's own, not "stored earlier"
    with user_errors():  # the shipped set, even where a folder named demo (a run?) is at hand
        problem_set = _load(str(data_dir("problems") / "demo"))
        cfg = _config(problem_set, model, run, workers=workers, seed=0, api_key="demo-key-not-secret", **settings)
        refuse_busy(run)
        check_resume(cfg, option=None)
        confine(cfg, problem_set)
    code = run_swarm(cfg, problem_set, as_json, responder=respond, faults=FaultPlan(latency_s=latency),
                     tui=_want_tui(tui, as_json), personality=provider.value,
                     after=functools.partial(_grade_quietly, run, problem_set))
    if code == 0:
        if as_json:  # stdout holds JSON lines only; the grades go to stderr
            with contextlib.redirect_stdout(sys.stderr):
                code = grade_demo(run, problem_set, started)
        else:
            code = grade_demo(run, problem_set, started)
    raise typer.Exit(code)


async def _grade_quietly(run: Path, problem_set) -> None:
    """Grade the selected solutions inside the dashboard, printing nothing (the table shows the
    grades); `grade_demo` prints them afterwards, from what is stored."""
    from gitswarm.cli.grade import grade_all
    from gitswarm.memory.repo import Memory

    async with _judge() as judge:
        await grade_all(Memory(run), list(problem_set.problems), judge, 3, False, False, 900.0)


@contextlib.asynccontextmanager
async def _judge():
    """The demo's scripted judge, behind a fake server of its own."""
    from gitswarm.demo.brain import respond
    from gitswarm.demo.judge import JUDGE_MODEL
    from gitswarm.fakeserver import serve
    from gitswarm.models.client import LiteLLMModel
    from gitswarm.models.config import ModelConfig

    async with serve(respond) as server:
        yield LiteLLMModel(ModelConfig(JUDGE_MODEL, api_base=server.url, api_key="demo-key-not-secret"))


def grade_demo(run: Path, problem_set, since: float | None = None) -> int:
    """Grade the demo's selected solutions: answers and programs for real, proofs by the
    scripted judge behind the fake server (it knows only the script's texts, and its grades
    are stored under its own model name). Returns `gitswarm grade`'s exit code."""
    import anyio

    from gitswarm.cli.grade import grade_and_print
    from gitswarm.demo.judge import JUDGE_MODEL
    from gitswarm.memory.repo import Memory

    async def grade() -> int:
        async with _judge() as judge:
            return await grade_and_print(Memory(run), list(problem_set.problems), judge, since=since)

    typer.echo(f"\nGrading the selected solutions (refs/gitswarm/grades): answers and programs against the "
               f"hidden key and tests; proofs by the demo's scripted judge ({JUDGE_MODEL}), which knows "
               "only the script's texts and is no real referee.")
    return anyio.run(grade)
