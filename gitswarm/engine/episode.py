"""One episode: a short tool loop through the model that ends in exactly one final action."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Protocol

import anyio

from gitswarm.engine import context
from gitswarm.engine.context import EpisodeInfo, RunView
from gitswarm.engine.events import EventLog
from gitswarm.engine.gitio import GitThread
from gitswarm.engine.index import MemoryIndex
from gitswarm.engine.ledger import EpisodeRecord, Ledger
from gitswarm.engine.tools import Final, Toolbox, ToolError, tool_schemas
from gitswarm.memory.errors import PathRejected
from gitswarm.memory.repo import Memory
from gitswarm.resources import render
from gitswarm.usage import Usage


class Model(Protocol):
    """What the engine needs of a model (gitswarm.models.LiteLLMModel in production)."""

    async def complete(self, messages: list[dict], tools: list[dict] | None = None): ...


class CapReached(Exception):
    """A USD or token cap would be passed by another call; the run stops cleanly."""


@dataclass
class Shared:
    """What every episode of a run shares."""

    memory: Memory
    git: GitThread
    index: MemoryIndex
    view: RunView
    model: Model
    events: EventLog
    sandbox: anyio.CapacityLimiter
    check_caps: Callable[[], None]
    """Raises CapReached when the next call may not be made."""
    ledger: Ledger


async def run_episode(shared: Shared, ep: EpisodeInfo, record: EpisodeRecord) -> EpisodeRecord:
    """Run the tool loop and commit its final action; the record comes back filled in."""
    cfg = shared.view.config
    tools = Toolbox(shared.memory, shared.git, shared.index, shared.view, ep, shared.sandbox)
    head = context.header(shared.view, shared.index, ep, 1, [])
    first = await shared.git(context.overview, shared.memory, shared.view, shared.index, ep, head)
    messages = [{"role": "system", "content": render("worker_system.md.j2", worker=ep.worker,
                                                     max_steps=cfg.max_steps)},
                {"role": "user", "content": first}]
    try:
        with anyio.fail_after(cfg.episode_timeout_s):
            final = await _loop(shared, ep, record, tools, messages)
    except TimeoutError:
        final = Final("abstain", reason=f"episode wall-clock limit ({cfg.episode_timeout_s:.0f} s)")
    finally:
        shared.view.announcements.pop(ep.worker, None)
    record.status = final.action
    record.note = final.reason
    if record.commit:
        await shared.git(shared.memory.add_transcript, record.commit, transcript(messages))
    return record


async def _loop(shared: Shared, ep: EpisodeInfo, record: EpisodeRecord, tools: Toolbox,
                messages: list[dict]) -> Final:
    cfg = shared.view.config
    corrected = False
    for step in range(1, cfg.max_steps + 1):
        if step > 1:
            head = context.header(shared.view, shared.index, ep, step, sorted(tools.staged))
            messages.append({"role": "user", "content": render("step.md.j2", header=head, note="")})
        shared.check_caps()
        shared.events.emit("step", episode=ep.episode, worker=ep.worker, problem=ep.problem_id, step=step)
        reply = await shared.model.complete(messages, tools=tool_schemas())
        shared.ledger.charge(record, reply.usage)
        messages.append(reply.message)
        problem = _unusable(reply)
        if problem:
            if corrected:
                return Final("abstain", reason=f"unusable model reply twice: {problem}")
            corrected = True
            _answer_all(messages, reply, f"error: {problem}")
            messages.append({"role": "user", "content": render("corrective.md.j2", problem=problem)})
            continue
        final = await _run_calls(shared, ep, record, tools, messages, reply)
        if final is not None:
            return final
    return Final("abstain", reason=f"step limit ({cfg.max_steps}) reached without a final action")


async def _run_calls(shared, ep, record, tools, messages, reply) -> Final | None:
    """Run the reply's tool calls in order; a final action that commits ends the episode."""
    for n, call in enumerate(reply.tool_calls):
        shared.events.emit("tool", episode=ep.episode, worker=ep.worker, tool=call.name)
        try:
            result = await tools.call(call.name, call.arguments or {})
            if isinstance(result, Final):
                if result.contribution is not None:
                    spent = Usage(record.tokens_in, record.tokens_out, known_cost_usd=record.cost_usd,
                                  unpriced_calls=int(not record.cost_known), calls=record.calls)
                    contribution = replace(result.contribution, model=shared.view.config.model, usage=spent)
                    written = await shared.git(shared.memory.contribute, contribution)
                    record.commit = written.commit
                _answer_all(messages, reply, "episode ended by an earlier call", start=n + 1)
                return result
        except ToolError as exc:
            result = f"error: {exc}"
        except (PathRejected, ValueError) as exc:
            result = f"error: the contribution was refused: {exc}"
        messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
    return None


def _unusable(reply) -> str | None:
    if not reply.tool_calls:
        return "it called no tool" + (" (the output was cut off)" if reply.finish_reason == "length" else "")
    for call in reply.tool_calls:
        if call.error:
            return f"the arguments of {call.name!r} are not a JSON object ({call.error})"
    return None


def _answer_all(messages: list[dict], reply, text: str, start: int = 0) -> None:
    """Every tool call must get an answer before the conversation can go on."""
    for call in reply.tool_calls[start:]:
        messages.append({"role": "tool", "tool_call_id": call.id, "content": text})


def transcript(messages: list[dict]) -> str:
    """The conversation as readable text, for the transcript note on the episode's commit."""
    parts = []
    for m in messages:
        text = m.get("content") or ""
        calls = m.get("tool_calls") or []
        shown = "\n".join(f"-> {c['function']['name']}({c['function']['arguments']})" for c in calls)
        parts.append(f"### {m['role']}\n{text}\n{shown}".rstrip())
    return "\n\n".join(parts) + "\n"


