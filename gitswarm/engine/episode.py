"""One episode: a short tool loop through the model that ends in exactly one final action.

Replies that cannot be run as they are go back to the model as a message, never as an
abstention: a reply cut off at the output limit (no call of it is run), a reply with no tool
call (a thinking step, nudged a bounded number of times), a call whose arguments are broken.
The step limit and the episode's wall clock end it as failed, and what it had staged is kept
as an incomplete note.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import anyio

from gitswarm.core import event_types as ev
from gitswarm.core.status import Status
from gitswarm.core.stops import Stop, StopReason
from gitswarm.domain.contribution import Contribution
from gitswarm.domain.episode import EpisodeRecord, Failure
from gitswarm.domain.index import MemoryIndex
from gitswarm.engine import context, conversation, reviewing
from gitswarm.engine.failures import FATAL_KINDS, of_model_error
from gitswarm.engine.plan import EpisodePlan
from gitswarm.engine.shared import Caller, Shared, replied
from gitswarm.engine.stopping import Cut
from gitswarm.engine.tools import Final, Toolbox, ToolError, tool_schemas
from gitswarm.engine.window import ContextPolicy, Trim
from gitswarm.errors import Refusal
from gitswarm.models.calls import CallLog
from gitswarm.models.capabilities import known_context_window
from gitswarm.models.errors import ModelError
from gitswarm.resources import render
from gitswarm.usage import Usage

if TYPE_CHECKING:
    from gitswarm.models.errors import Retry

__all__ = ["Ended", "run_episode", "transcript"]

MAX_NUDGES = 3
"""Replies without a tool call an episode may have before it ends as failed."""


@dataclass(frozen=True)
class Ended:
    """A finished episode: its record, filled in, and the stop it calls for (a cap reached, a
    model error no retry can fix), if any."""

    record: EpisodeRecord
    stop: Stop | None = None
    review: dict[str, str] | None = None
    """Of a committed review, its `verdict` and the path of the candidate it `reviews`, for the
    `committed` event (the commit's trailers keep them; the ledger does not)."""


async def run_episode(shared: Shared, ep: EpisodePlan, record: EpisodeRecord, cut: Cut | None = None) -> Ended:
    """Run the tool loop and commit its final action. Nothing raised inside ends more than this
    episode: a failed model call and an unexpected error end it as `failed`, with its class
    (`engine.failures`); what it staged is kept as an incomplete note, its transcript always,
    also when the scheduler cuts it short (`cut`: then `stopped`, its last call counted, its
    tokens, cut off mid-reply, not)."""
    cut = cut or Cut()
    terms = ep.terms
    record.model, record.reviews = ep.model, ep.reviews
    index = shared.index if ep.powers.sees_memory else MemoryIndex()  # an isolated episode sees no one's work
    tools = Toolbox(shared.store, index, shared.view, ep, shared.sandbox, shared.references)
    messages: list[dict] = []
    window = ContextPolicy.of(terms.trimming, known_context_window(record.model))
    calls = CallLog.open()  # the client records each call of this task's episode in it
    stop, failure = None, Failure.MODEL
    try:
        _look(shared, tools)
        head = _header(shared, tools, 1)
        if ep.powers.shows == "candidate":
            first = await shared.store.run(reviewing.first_prompt, shared.memory, ep, head)
        else:
            first = await shared.store.run(context.overview, shared.memory, shared.view, tools.index, ep, head)
        messages += [{"role": "system", "content": context.system_prompt(ep)},
                     {"role": "user", "content": first}]
        final = None
        with anyio.move_on_after(terms.timeout_s), cut.scope:
            final = await _loop(shared, ep, record, tools, messages, window)
        if final is None and cut.scope.cancel_called:
            final = Final(Status.STOPPED, reason=f"{cut.why} after {record.calls} model calls")
        elif final is None:
            final = Final(Status.FAILED, reason=f"episode wall-clock limit ({terms.timeout_s:.0f} s) reached")
    except ModelError as exc:
        final, failure = Final(Status.FAILED, reason=str(exc)), of_model_error(exc.kind)
        stop = Stop(StopReason.MODEL_FATAL, str(exc)) if exc.kind in FATAL_KINDS else None
    except Exception as exc:  # the episode's boundary: a bug of ours ends this episode alone
        final, failure = Final(Status.FAILED, reason=_engine_error(shared, ep, exc)), Failure.ENGINE
    finally:
        calls.close()
        shared.view.finished(ep.worker)
        tools.close()
    if final.action in (Status.FAILED, Status.STOPPED) and tools.staged and record.commit is None:
        final, bug = await _keep_staged(shared, record, tools, final)
        failure = Failure.ENGINE if bug else failure
    record.status, record.note, stop = final.action, final.reason, stop or final.stop
    record.failure = failure.value if final.action == Status.FAILED else ""
    record.compactions, record.stubbed = window.compactions, window.stubbed
    await _keep_transcript(shared, record, messages, window.trims)
    lossless = conversation.of_episode(calls, ep, record, record.model, window.kept(messages))
    await conversation.keep(shared.store, lossless, calls.secrets)
    return Ended(record, stop, _review_of(index, ep, record, final))


def _review_of(index: MemoryIndex, ep: EpisodePlan, record: EpisodeRecord, final: Final) -> dict[str, str] | None:
    """The verdict of a committed review and the path of what it reviews (an assigned review's
    candidate, which a blind review's empty index does not hold)."""
    c = final.contribution
    if c is None or not record.commit or not c.verdict:
        return None
    found = (c.reviews, ep.assigned.path) if ep.reviewing else index.resolve(record.problem, c.reviews)
    return {"verdict": c.verdict, "reviews": found[1]} if found else None


async def _keep_transcript(shared: Shared, record: EpisodeRecord, messages: list[dict], trims: list[Trim]) -> None:
    """The transcript, whatever the outcome: a note on the episode's commit, or for an episode
    without one a file of the transcripts book, which the record names."""
    if not messages:
        return
    if record.commit:
        await shared.store.add_transcript(record.commit, transcript(messages, trims))
    else:
        record.transcript = await shared.store.put_transcript(record.episode, transcript(messages, trims))


async def _loop(shared: Shared, ep: EpisodePlan, record: EpisodeRecord, tools: Toolbox,
                messages: list[dict], window: ContextPolicy) -> Final:
    note, nudges, settled = "", 0, ep.problem_id in shared.view.settled
    for step in range(1, ep.terms.max_steps + 1):
        if step > 1:
            _look(shared, tools)
            head = _header(shared, tools, step)
            if not settled and ep.problem_id in shared.view.settled:  # told once, at its next step
                settled, note = True, "\n\n".join(filter(None, [note, render("settled_meanwhile.md.j2").strip()]))
            messages.append({"role": "user", "content": render("step.md.j2", header=head, note=note)})
        if (reached := shared.check_caps()) is not None:  # the run's stop: no more calls
            return Final(Status.STOPPED, reason=reached.detail, stop=reached)
        model = shared.model_of(ep)
        force = nudges > 0 and model.may_force_tools()
        await _fit(shared, ep, record, tools, messages, window, step)
        reply = await _call(shared, ep, record, window.view(messages, step), step, "required" if force else None)
        messages.append(reply.message)
        note = ""
        if reply.truncated:  # its calls are not in the history: the client left them out
            note = render("truncated.md.j2", limit=model.output_limit, calls=len(reply.tool_calls))
        elif not reply.tool_calls:
            nudges += 1
            if nudges > MAX_NUDGES:
                return Final(Status.FAILED, reason=f"{nudges} replies without a tool call")
            note = render("nudge.md.j2", empty=not reply.content.strip(), left=MAX_NUDGES - nudges + 1,
                          protocol=model.protocol)
        else:
            final = await _run_calls(shared, ep, record, tools, messages, reply)
            if final is not None:
                return final
    return Final(Status.FAILED, reason=f"step limit ({ep.terms.max_steps}) reached without a final action")


def _header(shared: Shared, tools: Toolbox, step: int) -> str:
    """The state block of `step`: a blind review's own, else the run's (`context.header`)."""
    if tools.ep.powers.shows == "candidate":
        return reviewing.header(shared.view, tools.ep, step, tools.staged_names())
    new = tools.new_items() if step > 1 else 0
    return context.header(shared.view, tools.index, tools.ep, step, tools.staged_names(), new)


def _look(shared: Shared, tools: Toolbox) -> None:
    """The step's view of main: the problem's part of the index as it stands now, frozen, so the
    state, the overview and every tool of the step read the same commit (an episode that sees
    no one's work keeps its empty index and its start commit)."""
    if tools.ep.powers.sees_memory:
        with shared.index.lock:  # an update's additions, not its git reads (`indexing._take`)
            tools.look(shared.index.pinned(tools.ep.problem_id))  # one copy per problem and tip


async def _call(shared: Shared, ep: EpisodePlan, record: EpisodeRecord, messages: list[dict], step: int,
                tool_choice: str | None):
    """One model call, charged to the episode whatever its outcome."""
    shared.view.working(ep.worker, ep.episode, ep.problem_id, step)
    shared.events.emit(ev.Step(episode=ep.episode, worker=ep.worker, problem=ep.problem_id, step=step,
                               tokens=record.tokens_in + record.tokens_out))  # the episode's so far, for the dashboard
    def retrying(retry: Retry) -> None:
        shared.events.emit(ev.Retry(episode=ep.episode, worker=ep.worker, problem=ep.problem_id, step=step,
                                    error=retry.kind, what=retry.what, attempt=retry.attempt,
                                    delay=round(retry.delay_s, 1)))

    began, who = time.monotonic(), Caller(ep.worker, record.model, ep.episode, ep.problem_id, step)

    def cut_off(spent: Usage) -> None:  # a stop or the wall clock: the attempts sent are counted still
        shared.ledger.charge(record, spent)
        replied(shared, spent, began, who, error="cut")

    try:
        tools = tool_schemas(ep.kind, ep.role)
        reply = await shared.model_of(ep).complete(messages, tools=tools, tool_choice=tool_choice,
                                                   on_retry=retrying, on_cut=cut_off)
    except ModelError as exc:
        shared.ledger.charge(record, exc.usage)
        replied(shared, exc.usage, began, who, error=exc.kind)
        raise
    shared.ledger.charge(record, reply.usage)
    record.calls_in.append(reply.usage.tokens_in)
    replied(shared, reply.usage, began, who, finish=reply.finish_reason)
    return reply


async def _fit(shared: Shared, ep: EpisodePlan, record: EpisodeRecord, tools: Toolbox, messages: list[dict],
               window: ContextPolicy, step: int) -> None:
    """Compact the conversation where the context policy says it is near the model's window:
    the account is the model's (one call, charged to the episode) or assembled without a call."""
    if not window.over(messages, record.calls_in[-1] if record.calls_in else 0):
        return
    written = ""
    if ep.terms.trimming.compact_by == "model":
        written = (await _call(shared, ep, record, window.request(messages, tools.staged), step, None)).content
    window.compact(messages, step, written, tools.staged)


def _engine_error(shared: Shared, ep: EpisodePlan, exc: Exception) -> str:
    """Log a bug met in episode `ep`, traceback and all; the reason the episode failed."""
    log = shared.events.log_error(f"engine error in episode {ep.episode} ({ep.worker} on {ep.problem_id})", exc)
    reason = " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
    return f"engine error: {reason} (the traceback is in {log})"


async def _run_calls(shared: Shared, ep: EpisodePlan, record: EpisodeRecord, tools: Toolbox,
                     messages: list[dict], reply) -> Final | None:
    """Run the reply's tool calls in order; a final action that commits ends the episode. A
    refusal (`errors.Refusal`: a tool's `ToolError`, a contribution the memory refuses) goes back
    to the model, and nothing else does: any other error is the episode's engine error."""
    for n, call in enumerate(reply.tool_calls):
        shared.events.emit(ev.Tool(episode=ep.episode, worker=ep.worker, tool=call.name))
        try:
            if call.error:
                raise ToolError(call.error)
            result = await tools.call(call.name, call.arguments or {})
            if isinstance(result, Final):
                if result.contribution is not None:
                    await _commit(shared, record, result.contribution)
                _answer_all(messages, reply, "episode ended by an earlier call", start=n + 1)
                return result
        except ToolError as exc:
            result = f"error: {exc}"
        except Refusal as exc:
            result = f"error: the contribution was refused: {exc}"
        messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
    return None


async def _commit(shared: Shared, record: EpisodeRecord, contribution: Contribution) -> None:
    """Commit with the model and what the episode spent in the trailers. Shielded: once the
    git thread writes, the episode's wall clock must not leave the record without its commit."""
    spent = replace(contribution, model=record.model, usage=record.usage)
    with anyio.CancelScope(shield=True):
        written = await shared.store.contribute(spent)
    record.commit = written.commit


async def _keep_staged(shared: Shared, record: EpisodeRecord, tools: Toolbox, final: Final) -> tuple[Final, bool]:
    """Commit a failed episode's staged files as an incomplete note; the record says where they
    went, or why they could not be kept. True with it when a bug kept them (logged as the
    episode's engine error: like any bug inside, it ends no more than this episode)."""
    kept, bug = f"its staged files are kept in notes/incomplete-{tools.ep.episode}.md", False
    try:
        await _commit(shared, record, _incomplete(tools, final.reason))
    except Refusal as exc:
        kept = f"its staged files were not kept: {exc}"
    except Exception as exc:
        kept, bug = f"its staged files were not kept: {_engine_error(shared, tools.ep, exc)}", True
    return replace(final, reason=f"{final.reason}; {kept}"), bug


def _incomplete(tools: Toolbox, reason: str) -> Contribution:
    """What a failed episode had staged, kept as one note: readable, never a candidate."""
    ep = tools.ep
    body = render("incomplete_note.md.j2", episode=ep.episode, reason=reason,
                  files=sorted(tools.staged.items()))
    return Contribution(problem=ep.problem_id, episode=ep.episode, worker=ep.worker, kind="note",
                        title=f"incomplete: what {ep.episode} had staged when it failed",
                        files={f"notes/incomplete-{ep.episode}.md": body}, parent=tools.at,
                        op=f"{ep.episode}-incomplete", summary=f"The episode failed: {reason}.",
                        self_assessment="incomplete: the episode did not finish")


def _answer_all(messages: list[dict], reply, text: str, start: int = 0) -> None:
    """Every tool call must get an answer before the conversation can go on."""
    for call in reply.tool_calls[start:]:
        messages.append({"role": "tool", "tool_call_id": call.id, "content": text})


def transcript(messages: list[dict], trims: list[Trim] | tuple[Trim, ...] = ()) -> str:
    """The conversation as readable text, for the transcript note on the episode's commit: every
    tool output whole, and where the context policy trimmed what the model saw, what it
    replaced and by what (`### context`); a reasoning model's thinking, where the provider
    returns it, is shown above its reply."""
    parts = []
    for n, m in enumerate(messages):
        parts += [f"### context (step {t.step}, {t.kind})\n{t.what}; the model saw instead:\n{t.by}".rstrip()
                  for t in trims if t.at == n]
        text = m.get("content") or ""
        if isinstance(text, list):
            text = "".join(part.get("text", "") for part in text if isinstance(part, dict))
        calls = m.get("tool_calls") or []
        shown = "\n".join(f"-> {c['function']['name']}({c['function']['arguments']})" for c in calls)
        thought = m.get("reasoning_content") or ""
        thinking = f"<thinking>\n{thought.strip()}\n</thinking>\n" if thought.strip() else ""
        parts.append(f"### {m['role']}\n{thinking}{text}\n{shown}".rstrip())
    parts += [f"### context (step {t.step}, {t.kind})\n{t.what}; the model saw instead:\n{t.by}".rstrip()
              for t in trims if t.at >= len(messages)]
    return "\n\n".join(parts) + "\n"
