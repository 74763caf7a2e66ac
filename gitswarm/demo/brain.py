"""The scripted model: reads the engine's prompts like a worker would and answers with tool
calls from `script.yaml`. Deterministic; it plays note -> attempt -> review (naming the attempt
it reviews and the script's verdict) -> nominations."""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path

import yaml

from gitswarm.fakeserver import FakeReply
from gitswarm.models import textproto

STATE = re.compile(r"problem: (\S+) \((\w+)\).*?episode: (\S+)", re.DOTALL)
ROW = re.compile(r"^\| ((?:notes|lemmas|attempts|reviews|code)/\S+) \| ([0-9a-f]{7,40}) \|", re.MULTILINE)
TEXT_CALLS = "# How to call tools"
"""The heading of the text protocol's instructions in the system prompt."""
NEXT_REVIEW = re.compile(r"^most useful next: review (\S+) \(", re.MULTILINE)
"""The state header's advice to review an attempt no other worker has reviewed."""
FENCED = re.compile(r'<memory-data source="([^"]+)">\n(.*?)\n</memory-data>', re.DOTALL)


@cache
def script() -> dict:
    return yaml.safe_load((Path(__file__).with_name("script.yaml")).read_text(encoding="utf-8"))


def respond(request: dict) -> FakeReply:
    """Answer one chat-completion request as the engine's worker or merger would: with native
    tool calls, or in the text protocol when the tools are described in the prompt instead."""
    messages = request.get("messages", [])
    text_protocol = TEXT_CALLS in _text(messages[0]) if messages else False
    if not request.get("tools") and not text_protocol:
        return FakeReply(content=_merger(_text(messages[-1])))
    # The episode's first prompt: the first user turn with a state header (some providers'
    # adapters turn the system prompt into a user turn, e.g. litellm for OpenAI o-series).
    first = next((t for m in messages if m["role"] == "user" and STATE.search(t := _text(m))), "")
    state = STATE.search(first)
    if state is None:
        return FakeReply(tool_calls=[_call("abstain", reason="no state header in the prompt")])
    problem, kind, episode = state.groups()
    items = {}
    for path, commit in ROW.findall(first):
        items.setdefault(path.split("/")[0], []).append((path, commit))
    done = sum(1 for m in messages if m["role"] == "assistant")
    advice = NEXT_REVIEW.search(first) if "nominations so far: none" in first else None
    plan = _plan(problem, kind, episode, items, advice.group(1) if advice else None)
    call = plan[min(done, len(plan) - 1)]
    if text_protocol:
        return FakeReply(content=textproto.format_calls([(call["name"], call["arguments"])]))
    return FakeReply(tool_calls=[call])


def _text(message: dict) -> str:
    """A message's text, whether its content is a string or a list of parts."""
    content = message.get("content") or ""
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return str(content)


def _plan(problem: str, kind: str, episode: str, items: dict, to_review: str | None) -> list[dict]:
    """The tool calls of this episode, one per step, chosen from what the memory holds. It
    reviews the attempt the header advises reviewing (`to_review`: only before the first
    nomination), else, when there is no review yet, the first one, even if it is this worker's
    own (committed, but not counted as a check); then it nominates."""
    text = script().get(problem) or script()["default"]
    summary = f"- {episode}: "
    if "notes" not in items:
        return [_call("read_file", path="SUMMARY.md"), _call("announce", intent="first observations"),
                _call("write_file", path=f"notes/observations-{episode}.md", content=text["note"]),
                _call("contribute", kind="note", title="first observations",
                      summary="Small cases and a plan.", self_assessment="partial: no proof yet")]
    note_path, note = items["notes"][0]
    candidates = items.get("attempts", []) + items.get("code", [])
    if not candidates:
        return [_call("read_file", path=note_path), _call("announce", intent="a full attempt"),
                *_attempt(kind, episode, text),
                _call("write_file", path="SUMMARY.md",
                      content=f"# Summary\n\n{summary}an attempt built on {note_path}.\n"),
                _call("contribute", kind="code" if kind == "program" else "attempt",
                      title="a full attempt", summary=f"Built on {note_path}.", informed_by=[note],
                      self_assessment="complete")]
    path = next((p for p, _ in candidates if _candidate(p) == to_review), candidates[0][0])
    target = _candidate(path)
    if to_review or "reviews" not in items:
        verdict = text["verdict"]
        return [_call("read_file", path=path), _call("announce", intent=f"reviewing {path}"),
                _call("write_file", path=f"reviews/review-{episode}.md", content=text["review"]),
                _call("write_file", path="SUMMARY.md",
                      content=f"# Summary\n\n{summary}{path} reviewed: verdict {verdict}.\n"),
                _call("contribute", kind="review", title=f"review of {path}", summary="Step-by-step check.",
                      reviews=target, verdict=verdict, self_assessment="complete")]
    return [_call("read_file", path=path),
            _call("nominate", candidate=target, rationale="Reviewed and checked: correct and complete.")]


def _candidate(path: str) -> str:
    """The candidate an item belongs to: an attempt file, or a program's `code/<slug>`."""
    return "/".join(path.split("/")[:2]) if path.startswith("code/") else path


def _attempt(kind: str, episode: str, text: dict) -> list[dict]:
    if kind != "program" or "code" not in text:
        return [_call("write_file", path=f"attempts/attempt-{episode}.md", content=text["attempt"])]
    return [_call("write_file", path=f"code/{episode}/solution.py", content=text["code"]),
            _call("run_python", code=text["check"])]


def _merger(prompt: str) -> str:
    """Compose two versions of a file, or rewrite a summary from the items shown."""
    sources = FENCED.findall(prompt)
    if "Rewrite the running summary" in " ".join(prompt.split()):
        lines = [f"- `{src.split('/', 2)[-1]}`: {_first_line(body)}" for src, body in sources[1:]]
        return "# Summary\n\nItems so far (composed by the merger):\n\n" + "\n".join(lines) + "\n"
    versions = {src.split(" ")[0]: body for src, body in sources}
    seen, merged = set(), []
    for line in (versions.get("ours", "") + "\n" + versions.get("theirs", "")).splitlines():
        if line.strip() and line not in seen:
            seen.add(line)
            merged.append(line)
    return "\n".join(merged) + "\n"


def _first_line(body: str) -> str:
    return next((ln.strip("# ").strip() for ln in body.splitlines() if ln.strip()), "")


def _call(name: str, **arguments: object) -> dict:
    return {"name": name, "arguments": json.loads(json.dumps(arguments))}
