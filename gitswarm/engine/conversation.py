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
gitswarm/conversations` (`remote.results`), which stays on the remote; `read_conversation`
looks there when the run's own book lacks the episode.

Contract (version 1), as `read_conversation` returns it:

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
     "outcome": str, "failure": str, "note": str, "commit": str|None, "started": float, "ended": float}

One entry per attempt: a retried call appears once per attempt, the failed ones with `error`
and `reply` None. `read_calls` are the calls the engine ran: the model's own, or those it wrote
as text (the text protocol, a call leaked into prose), whose ids the engine made; the tool
results in the next request answer these ids. Stored, each call keeps only the messages that
differ from the previous call's (`kept`: how many of those it starts with); reading restores
the whole list. No api key is stored (a request's key is never recorded, and any text equal
to one is replaced before writing), and no hidden part of a problem: workers never see one.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Iterator

import pygit2

from gitswarm.engine.context import EpisodeInfo
from gitswarm.engine.ledger import EpisodeRecord
from gitswarm.memory import books, refnames
from gitswarm.memory.repo import Memory
from gitswarm.models.calls import CallLog

BOOK = "conversations"
CONVERSATIONS_REF = books.ref_name(BOOK)
VERSION = 1
WORKERS = "refs/gitswarm/workers/"
"""Where a remote's workers push their books (`remote.layout.WORKERS`)."""
REDACTED = "[redacted]"
MIN_SECRET = 8
"""Characters a key has before it is looked for in the record."""


def path_of(episode: str) -> str:
    """The record's file in the book."""
    return f"episodes/{episode[:4]}/{episode}.json"


def of_episode(log: CallLog, ep: EpisodeInfo, record: EpisodeRecord, model: str) -> dict:
    """The whole record of a finished episode (the contract's form)."""
    started = log.calls[0]["started"] if log.calls else record.started
    return {"version": VERSION, "episode": ep.episode, "problem": ep.problem_id, "worker": ep.worker,
            "kind": ep.kind, "model": model, "params": log.params, "tools": log.tools, "calls": log.calls,
            "outcome": record.status, "failure": record.failure, "note": record.note, "commit": record.commit,
            "started": started, "ended": time.time()}


def keep(memory: Memory, conversation: dict, secrets: Iterable[str] = ()) -> None:
    """Write the record to the run's book, its messages as deltas, any text equal to one of
    `secrets` (the api keys its requests carried) removed."""
    memory.put_records(BOOK, {path_of(conversation["episode"]): _redacted(stored(conversation), secrets)},
                       f"conversation of {conversation['episode']}")


def read_conversation(repo: pygit2.Repository, episode: str) -> dict | None:
    """The episode's record (the contract's form), or None: an episode of an older run, or
    one that never ran."""
    path = path_of(episode)
    for ref in _books(repo):
        found = books.get(repo, ref.removeprefix("refs/gitswarm/"), path)
        if isinstance(found, dict):
            return restored(found)
    return None


def all_conversations(repo: pygit2.Repository) -> Iterator[dict]:
    """Every episode's record, in episode order, each once (the run's book first)."""
    seen: set[str] = set()
    for ref in _books(repo):
        records = books.all_records(repo, ref.removeprefix("refs/gitswarm/"), "episodes")
        for path in sorted(records):
            record = records[path]
            if isinstance(record, dict) and record.get("episode") not in seen:
                seen.add(record.get("episode"))
                yield restored(record)


def stored(conversation: dict) -> dict:
    """The record with each call's messages cut to those that differ from the previous call's."""
    calls, before = [], []
    for call in conversation["calls"]:
        messages = call["request"]["messages"]
        kept = _common(before, messages)
        calls.append({**call, "request": {**call["request"], "kept": kept, "messages": messages[kept:]}})
        before = messages
    return {**conversation, "calls": calls}


def restored(record: dict) -> dict:
    """`stored` undone: every call's whole list of messages."""
    calls, before = [], []
    for call in record.get("calls", []):
        request = dict(call["request"])
        messages = before[:request.pop("kept", 0)] + request["messages"]
        calls.append({**call, "request": {**request, "messages": messages}})
        before = messages
    return {**record, "calls": calls}


def _common(before: list[dict], after: list[dict]) -> int:
    """How many messages `after` starts with that `before` also starts with."""
    n = 0
    while n < min(len(before), len(after)) and before[n] == after[n]:
        n += 1
    return n


def _redacted(record: dict, secrets: Iterable[str]) -> dict:
    """The record with every occurrence of a secret replaced (an error message may quote a key);
    a key too short to be a credential (a local server's placeholder) would only blot out text."""
    text = json.dumps(record, ensure_ascii=False)
    for secret in secrets:
        if len(secret) >= MIN_SECRET:
            text = text.replace(json.dumps(secret, ensure_ascii=False)[1:-1], REDACTED)
    return json.loads(text)


def _books(repo: pygit2.Repository) -> list[str]:
    """The run's book, then each remote worker's, as their refs exist here."""
    own = [CONVERSATIONS_REF] if repo.references.get(CONVERSATIONS_REF) is not None else []
    pushed = sorted(r for r in refnames.under(repo, WORKERS) if r.endswith(f"/gitswarm/{BOOK}"))
    return own + pushed
