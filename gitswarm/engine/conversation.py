"""The lossless record of an episode's conversation: every call exactly as sent and returned.

Beside the readable transcript (a note on the episode's commit, `episode.transcript`), each
episode keeps its conversation as JSON, for export as training data (`gitswarm export`). It is
recorded at the client boundary (`models.calls`: what litellm got and returned), and workers
never read it: no prompt, search or memory overview looks at this ref.

Where it lives: a books-style ref, `refs/gitswarm/conversations` (`CONVERSATIONS_REF`), one
JSON file per episode at `episodes/<first 4 chars>/<episode>.json`, as the ledger keeps its
records. Not a note: a note hangs on a commit, and the episodes that end without one (failed,
abstained, stopped) would need a second home, as their transcripts do; keyed by the episode,
every record has one address, derived from the episode id alone, and `git log` of the ref shows
when each was written. A remote worker pushes its book as `refs/gitswarm/workers/<name>/
gitswarm/conversations` (`remote.results`), which stays on the remote (the coordinator prunes
only per-episode refs); `read_conversation` looks there when the run's own book lacks the
episode, preferring the book of the worker the run's ledger says closed it.

Reading it back is `memory.conversations` (`read_conversation`, `all_conversations`), so the
export reads it without the engine. Contract (version 1), as `read_conversation` returns it:

    {"version": 1, "episode": str, "problem": str, "worker": str, "kind": str, "model": str,
     "params": {"model", "reasoning_effort", "max_output_tokens", "tool_protocol": "native"|"text",
                "temperature", "stream"},      # of the first request
     "tools": [OpenAI tool schemas, as offered],  # sent as `tools` when a call's protocol is native,
                                                  # written into its messages when it is text
     "calls": [{"started": float, "ended": float,   # epoch seconds of one attempt
                "request": {"messages": [the whole list as litellm got it], "protocol": "native"|"text",
                            "max_tokens", "tool_choice", "stream", ...other litellm arguments},
                "reply": {"content": str|None, "tool_calls": [{"id", "name", "arguments": str as sent}],
                          "thinking": [thinking blocks, with signatures], "reasoning_content": str|None,
                          "finish_reason": str|None, "provider_fields": dict|None,
                          "read_calls": [{"id", "name", "arguments", "error", "leaked"}]} | None,
                "usage": {"input_tokens", "output_tokens", "cached_tokens", "cache_write_tokens",
                          "reasoning_tokens", "estimated_tokens", "cost_usd", "raw"} | None,
                "error": str|None}],
     "outcome": str, "failure": str, "note": str, "commit": str|None, "started": float, "ended": float,
     "trims": [{"step", "at", "kind": "stub"|"compact", "what", "by"}],  # only where the context
     "outputs": {tool call id: the whole output}}                         # policy trimmed any

One entry per attempt: a retried call appears once per attempt, the failed ones with `error`
and `reply` None. `read_calls` are the calls the engine ran: the model's own, or those it wrote
as text (the text protocol, a call leaked into prose), whose ids the engine made; the tool
results in the next request answer these ids. An episode's last reply has no request after
it: the results of its calls (a final action's commit) are in the readable transcript and the
ledger. Stored, each call keeps only the messages after those it shares with the previous
call's (`kept`: how many; `CallLog.delta`); reading restores the whole list. No api key is
stored (a request's key is never recorded, and any text equal to one, or to an `*_API_KEY` of
the environment, is replaced before writing), and no hidden part of a problem: workers never
see one. Calls outside an episode (the merger's summaries, the referee's judge) have no record.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable

from gitswarm.domain.episode import EpisodeRecord
from gitswarm.engine.plan import EpisodePlan
from gitswarm.memory.conversations import BOOK, path_of
from gitswarm.memory.store import Store
from gitswarm.models.calls import CallLog

VERSION = 1
REDACTED = "[redacted]"
MIN_SECRET = 8
"""Characters a key has before it is looked for in the record."""


def of_episode(log: CallLog, ep: EpisodePlan, record: EpisodeRecord, model: str, context: dict | None = None) -> dict:
    """The whole record of a finished episode (the contract's form); `context`: its `trims`
    and the tool `outputs` they hid (`ContextPolicy.kept`), where the policy trimmed any."""
    trimmed = context if context and context["trims"] else {}
    return trimmed | {"version": VERSION, "episode": ep.episode, "problem": ep.problem_id, "worker": ep.worker,
            "kind": ep.kind, "model": model, "params": log.params, "tools": log.tools, "calls": log.calls,
            "outcome": record.status, "failure": record.failure, "note": record.note, "commit": record.commit,
            "started": record.started, "ended": time.time()}


async def keep(store: Store, conversation: dict, secrets: Iterable[str] = ()) -> None:
    """Write the record to the run's book (its messages as `CallLog.delta` kept them), any text equal to one of
    `secrets` (the api keys its requests carried) removed."""
    await store.put_files(BOOK, {path_of(conversation["episode"]): encoded(conversation, secrets)},
                          f"conversation of {conversation['episode']}")


def encoded(record: dict, secrets: Iterable[str] = ()) -> bytes:
    """The record as stored: compact JSON, keys sorted, every occurrence of a secret replaced
    (an error message may quote a key); a key too short to be a credential (a local server's
    placeholder) would only blot out text. One pass of the C encoder: a record holds every
    message of a long episode (hundreds of KB), and an indented dump (the books' records,
    `books.put`) runs Python's own encoder, 5 times slower, with the git thread holding the GIL."""
    text = json.dumps(record, sort_keys=True, separators=(",", ":"))  # ASCII: a lone surrogate is escaped too
    for secret in secrets:
        if len(secret) >= MIN_SECRET:
            text = text.replace(json.dumps(secret)[1:-1], REDACTED)
    return text.encode("ascii")
