"""The scripted model: reads the engine's prompts like a worker would and answers with tool
calls from `script.yaml`. Deterministic; it plays note -> attempt -> reviews by other workers
(naming the attempt they review and the script's verdict; a first try the script marks flawed
gets a critical review and then a revision) -> nominations where the header asks for them. It
follows the state header's advice ("most useful next"); with `--verify 0`, it nominates."""

from __future__ import annotations

import json
import re

from gitswarm.demo import judge
from gitswarm.demo.script import script
from gitswarm.fakeserver import FakeReply
from gitswarm.models import textproto

STATE = re.compile(r"problem: (\S+) \((\w+)\).*?episode: (\S+)", re.DOTALL)
ROW = re.compile(r"^\| ((?:notes|lemmas|attempts|reviews|code)/\S+) \| ([0-9a-f]{7,40}) \|", re.MULTILINE)
BY_A_PERSON = re.compile(r"^\| (?:notes|lemmas)/\S+ \| ([0-9a-f]{7,40}) \|[^\n]*\(by a person\)", re.MULTILINE)
"""An item-list row of a person's note or lemma (`gitswarm note`), which the scripted model's
attempts cite."""
TEXT_CALLS = "# How to call tools"
"""The heading of the text protocol's instructions in the system prompt."""
REVIEW = re.compile(r"^most useful next: review (\S+) \(", re.MULTILINE)
NOMINATE = re.compile(r"^most useful next: nominate (\S+) \(", re.MULTILINE)
ASSIGNED = re.compile(r"^assignment: review (\S+) \(", re.MULTILINE)
"""The state block of a review episode the scheduler assigned a candidate to."""
ALONE = "In this run every attempt is made independently"
"""The first prompt of an episode that sees only its statement (isolation independent, best-of-n)."""
"""The state header's advice to review a candidate."""
REVISE = re.compile(r"^most useful next: revise (\S+): its critical review \S+ \(commit ([0-9a-f]+)\)", re.MULTILINE)
"""The state header's advice to revise a candidate, naming its critical review's commit."""
NOT_REQUIRED = "this problem needs: the candidate with the most nominations is selected"
"""The header's line when the run selects by plain plurality (`--verify 0`)."""
FIRST_TRY = "attempts/first-try-"
"""Where the scripted model writes a problem's flawed first try (its reviewers find the error)."""
EXIT = re.compile(r"^exit code (-?\d+)", re.MULTILINE)
"""The first line of a shell tool result."""
HEREDOC = "GITSWARM_END_OF_FILE"
"""The delimiter of the here-documents the scripted code worker writes its files with."""
CODE_KINDS = ("program", "reproduce")
FENCED = re.compile(r'<memory-data source="([^"]+)">\n(.*?)\n</memory-data>', re.DOTALL)


def respond(request: dict, persist: bool = False) -> FakeReply:
    """Answer one chat-completion request as the engine's worker or merger would: with native
    tool calls, or in the text protocol when the tools are described in the prompt instead.
    `persist`: where nothing is advised, another attempt rather than an abstention, as a real
    model on a problem that stays open keeps trying (a benchmark's long run; `_plan`)."""
    messages = request.get("messages", [])
    if messages and judge.is_judge_request(text_of(messages[0])):
        return FakeReply(content=judge.judge(text_of(messages[-1])))
    text_protocol = TEXT_CALLS in text_of(messages[0]) if messages else False
    ping = _ping(request, messages)
    if ping is not None:
        return FakeReply(tool_calls=[ping])
    if not request.get("tools") and not text_protocol:
        return FakeReply(content=_merger(text_of(messages[-1])))
    # The episode's first prompt: the first user turn with a state header (some providers'
    # adapters turn the system prompt into a user turn, e.g. litellm for OpenAI o-series).
    first = next((t for m in messages if m["role"] == "user" and STATE.search(t := text_of(m))), "")
    state = STATE.search(first)
    if state is None:
        return FakeReply(tool_calls=[tool_call("abstain", reason="no state header in the prompt")])
    problem, kind, episode = state.groups()
    items: dict[str, list[tuple[str, str]]] = {}
    for path, commit in ROW.findall(first):
        items.setdefault(path.split("/")[0], []).append((path, commit))
    done = sum(1 for m in messages if m["role"] == "assistant")
    exits = EXIT.findall("\n".join(text_of(m) for m in messages[1:] if m["role"] in ("tool", "user")))
    plan = _plan(problem, kind, episode, items, first, exits[-1] if exits else None, persist)
    call = plan[min(done, len(plan) - 1)]
    if text_protocol:
        return FakeReply(content=textproto.format_calls([(call["name"], call["arguments"])]))
    return FakeReply(tool_calls=[call])


PING_WORD = re.compile(r"`word`\s+set to `([^`]*)`")
PING_COUNT = re.compile(r"numbers from 1 to (\d+)")


def _ping(request: dict, messages: list[dict]) -> dict | None:
    """`gitswarm doctor`'s probe (a request whose one tool is `ping`): the ping it asks for, so
    doctor passes against the offline fake as `solve` runs on it."""
    names = [(t.get("function") or {}).get("name") for t in request.get("tools") or []]
    if names != ["ping"] or not messages:
        return None
    asked = text_of(messages[-1])
    count = PING_COUNT.search(asked)
    word = PING_WORD.search(asked)
    said = " ".join(str(n) for n in range(1, int(count[1]) + 1)) if count else (word[1] if word else "")
    return tool_call("ping", word=said)


def text_of(message: dict) -> str:
    """A message's text, whether its content is a string or a list of parts."""
    content = message.get("content") or ""
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return str(content)


def _nomination_plan(candidate: str, note_path: str) -> list[dict]:
    return [tool_call("read_file", path=candidate if not candidate.startswith("code/") else note_path),
            tool_call("nominate", candidate=candidate,
                  rationale="Verified by other workers' reviews, and checked again: correct and complete.")]


def _plan(problem: str, kind: str, episode: str, items: dict, prompt: str, last_exit: str | None,
          persist: bool = False) -> list[dict]:
    """The tool calls of this episode, one per step, chosen from what the memory holds and
    what the header advises: a note, then an attempt (the script's flawed first try where it
    has one), then the advised nomination, review or revision, then a nomination of a
    verified candidate; with nothing left to do for this worker, it abstains, or (`persist`)
    makes another attempt. `last_exit` is the exit code of the last shell command so far: a
    review of a program passes only when its check ran clean."""
    text = script().get(problem) or script()["default"]
    if assigned := ASSIGNED.search(prompt):  # a review episode: its review, nothing else
        return _review_plan(kind, episode, text, assigned.group(1), last_exit, assigned=True)
    alone = ALONE in prompt
    if alone:  # no note to build on, nothing to review: an attempt of its own
        first = "flawed" in text and kind != "program"
        path = f"{FIRST_TRY}{episode}.md" if first else f"attempts/attempt-{episode}.md"
        return _attempt_plan(kind, episode, text, text["flawed"] if first else text.get("attempt", ""), path,
                             [], "An independent attempt.", "statement.md", summary_file=False)
    if "notes" not in items:
        return [tool_call("read_file", path="SUMMARY.md"), tool_call("announce", intent="first observations"),
                tool_call("write_file", path=f"notes/observations-{episode}.md", content=text["note"]),
                tool_call("contribute", kind="note", title="first observations",
                      summary="Small cases and a plan.", self_assessment="partial: no proof yet")]
    note_path, note = items["notes"][0]
    hints = [c for c in BY_A_PERSON.findall(prompt) if c != note]
    if not items.get("attempts") and not items.get("code"):
        first = "flawed" in text and kind != "program"
        path = f"{FIRST_TRY}{episode}.md" if first else f"attempts/attempt-{episode}.md"
        return _attempt_plan(kind, episode, text, text["flawed"] if first else text.get("attempt", ""), path,
                             [note, *hints], f"Built on {note_path}.", note_path)
    if advised := NOMINATE.search(prompt):
        return _nomination_plan(advised.group(1), note_path)
    if review := REVIEW.search(prompt):
        return _review_plan(kind, episode, text, review.group(1), last_exit)
    if revise := REVISE.search(prompt):
        return _attempt_plan(kind, episode, text, text.get("attempt", ""), f"attempts/revision-{episode}.md",
                             [revise.group(2), revise.group(1), note, *hints],
                             f"Revises {revise.group(1)}, answering its critical review.", revise.group(1))
    if NOT_REQUIRED in prompt:  # plain plurality: the newest candidate that is not a flawed first try
        made = [_candidate(p) for p, _ in items.get("attempts", []) + items.get("code", [])]
        shown = [p for p in made if not p.startswith(FIRST_TRY)][-1:] or made[-1:]
        return _nomination_plan(shown[0], note_path)
    if persist:
        return _attempt_plan(kind, episode, text, text.get("attempt", ""), f"attempts/attempt-{episode}.md",
                             [note, *hints], f"Another attempt, built on {note_path}.", note_path)
    return [tool_call("abstain", reason="nothing to review, revise or nominate yet: waiting for other workers")]


def _attempt_plan(kind: str, episode: str, text: dict, body: str, path: str, cites: list[str],
                  summary: str, read: str, summary_file: bool = True) -> list[dict]:
    told = [tool_call("write_file", path="SUMMARY.md",
                      content=f"# Summary\n\n- {episode}: {path} ({summary.lower().rstrip('.')}).\n")]
    return [tool_call("read_file", path=read), tool_call("announce", intent=summary),
            *_attempt(kind, episode, text, body, path), *(told if summary_file else []),
            tool_call("contribute", kind="code" if kind in CODE_KINDS else "attempt", title="a full attempt",
                  summary=summary, informed_by=cites, self_assessment="complete")]


def _review_plan(kind: str, episode: str, text: dict, target: str, last_exit: str | None,
                 assigned: bool = False) -> list[dict]:
    """A review of `target` with the script's verdict; critical for a flawed first try, and
    for a program whose check (run in the shell) failed. An `assigned` review episode neither
    announces nor writes the summary: it has only its review to write."""
    flawed = target.startswith(FIRST_TRY) and "flawed_review" in text
    verdict = "critical" if flawed else text["verdict"]
    failed = target.startswith("code/") and last_exit not in (None, "0")
    if failed:
        verdict, text = "critical", {**text, "review": f"# Review\n\nCritical: the check exits {last_exit}: "
                                                       "it does not build or does not behave as specified.\n"}
    if not target.startswith("code/"):
        look = [tool_call("read_file", path=target)]
    elif kind == "reproduce":  # run it beside the reference
        look = [tool_call("shell", command=f"ls {target[5:]}"),
                tool_call("shell", command=f"cd {target[5:]} && {text['check']}")]
    else:  # run the script's checks on it
        look = [tool_call("shell", command=f"cd {target[5:]} && python3 - <<'{HEREDOC}'\n{text['check']}{HEREDOC}")]
    shared = [] if assigned else [
        tool_call("announce", intent=f"reviewing {target}"),
        tool_call("write_file", path="SUMMARY.md",
                  content=f"# Summary\n\n- {episode}: {target} reviewed: verdict {verdict}.\n")]
    return [*look, *shared[:1],
            tool_call("write_file", path=f"reviews/review-{episode}.md",
                  content=text["flawed_review"] if flawed else text["review"]),
            *shared[1:],
            tool_call("contribute", kind="review", title=f"review of {target}", summary="Step-by-step check.",
                  reviews=target, verdict=verdict, self_assessment="complete")]


def _candidate(path: str) -> str:
    """The candidate an item belongs to: an attempt file, or a program's `code/<slug>`."""
    return "/".join(path.split("/")[:2]) if path.startswith("code/") else path


def _attempt(kind: str, episode: str, text: dict, body: str, path: str) -> list[dict]:
    if kind == "reproduce" and "program" in text:  # a code worker at its shell: probe, write, compare
        files = f"mkdir -p {episode} && cat > {episode}/main.py <<'{HEREDOC}'\n{text['program']}{HEREDOC}\n" \
                f"cat > {episode}/compile.sh <<'{HEREDOC}'\n{text['compile']}{HEREDOC}\nchmod +x {episode}/compile.sh"
        return [tool_call("shell", command=text["probe"]), tool_call("shell", command=files),
                tool_call("shell", command=f"cd {episode} && {text['check']}")]
    if kind != "program" or "code" not in text:
        return [tool_call("write_file", path=path, content=body)]
    return [tool_call("write_file", path=f"code/{episode}/solution.py", content=text["code"]),
            tool_call("run_python", code=text["check"])]


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


def tool_call(name: str, **arguments: object) -> dict:
    return {"name": name, "arguments": json.loads(json.dumps(arguments))}
