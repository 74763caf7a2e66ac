"""What an episode sends the model each step: its conversation, bounded (`ContextPolicy`).

The episode keeps its whole conversation (`messages`: every tool output as it came, the
readable transcript is made of it); the policy decides what of it the model sees:

- **Stubs.** The newest steps' tool outputs are sent whole up to `whole_share` of the model's
  window. An older output longer than `stub_chars` is replaced by a stub that names the call
  that made it, its size, and how to get it again. Stubs come in batches as large as the whole part: between two batches
  every request extends the previous one, so the provider reads all of it but the new step
  from its prompt cache, and a batch's cache miss is paid once per many steps.
- **State blocks.** A step's state block is replaced by one line as soon as a newer one is
  sent: the change is at the end of the conversation, which the request's breakpoint before
  its last message keeps cached (`models.request.CACHE_POINTS`).
- **Compaction.** Past `compact_at` of the model's window, the steps before those sent whole
  are replaced by one account: what the episode did, staged, learned and meant to
  do next, written by the model (`prompts/compact.md.j2`, one call charged to the episode) or
  assembled without a call (`compact_by` digest), with the staged files.
- **What stays whole.** The system prompt, the first prompt (the problem and the memory's
  overview) and the newest state block: the stable prefix of every request, in that order.

Each trim is a `Trim`, which the transcript shows where it happened (`episode.transcript`).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

from gitswarm.resources import render

CHARS_PER_TOKEN = 4
STAGED_SHARE = 4
"""The staged files go whole into an account while they take at most 1/this of the window."""
MIN_COVERED = 2
"""Steps a compaction covers at least: in a window too small for it, compacting at every step
would spend a call a step and save nothing."""
DIGEST_LINES = 40
"""Steps an assembled account lists one line each (the newest); the older ones are counted."""


@dataclass(frozen=True)
class Trim:
    """One change to what the model sees: `at` is the length of the conversation when it was
    made (the transcript shows it before that message), `kind` is `stub` or `compact`."""

    step: int
    at: int
    kind: str
    what: str
    """What was replaced, in words."""
    by: str
    """What replaced it: a stub's text (the first of the batch) or the account."""


@dataclass(frozen=True)
class Trimming:
    """The policy's settings: the run's fields of the same names (`engine.config.SolveConfig`),
    which `plan.terms` hands each episode."""

    trim_context: bool
    whole_share: float
    stub_chars: int
    compact_at: float
    context_window: int
    """The window assumed of a model litellm does not know."""
    compact_by: str
    """`model` (a call of the episode's model writes a compaction's account) or `digest`."""


@dataclass
class ContextPolicy:
    """The view of an episode's conversation the model is sent, and when to compact it."""

    cfg: Trimming
    window: int
    """The model's context window, in tokens."""
    stubbed_before: int = 2
    """Tool outputs and state blocks before this index are stubbed in the view."""
    kept_from: int = 0
    """The compacted steps end here: the view is the prefix, the account, then messages from here."""
    account: str = ""
    """What replaces the compacted steps (`prompts/compacted.md.j2`)."""
    covered: list[dict] = field(default_factory=list)
    """One line per compacted step (`_digest`)."""
    trims: list[Trim] = field(default_factory=list)
    compactions: int = 0
    _estimated: int = 0

    @classmethod
    def of(cls, cfg: Trimming, window: int | None) -> ContextPolicy:
        """The policy of an episode on a model of `window` tokens (None: `cfg.context_window`)."""
        return cls(cfg, window or cfg.context_window)

    @property
    def on(self) -> bool:
        return self.cfg.trim_context

    def view(self, messages: list[dict], step: int) -> list[dict]:
        """What to send at `step`: the whole conversation with the policy off, else the prefix,
        the account of the compacted steps, and the rest with its old outputs stubbed (a new
        batch of stubs is decided here)."""
        if not self.on:
            return messages
        self._stub_batch(messages, step)
        shown = self._shown(messages)
        self._estimated = estimate(shown)
        return shown

    def over(self, messages: list[dict], last_in: int) -> bool:
        """The next request would pass `compact_at` of the window: its size estimated from the
        conversation, scaled by what the provider counted for the last one (`last_in`)."""
        starts = steps_of(messages)
        covered = _step_at(starts, self._line(messages)) - _step_at(starts, max(2, self.kept_from))
        if not self.on or covered < MIN_COVERED:
            return False
        scale = last_in / self._estimated if last_in and self._estimated else 1.0
        return estimate(self._shown(messages)) * scale > self.cfg.compact_at * self.window

    def request(self, messages: list[dict], staged: dict[str, str]) -> list[dict]:
        """The model call that writes the account: the conversation as the model sees it, then
        the request (the cached prefix is read again)."""
        starts = steps_of(messages)
        ask = render("compact.md.j2", staged=sorted(staged), upto=_step_at(starts, self._line(messages)) - 1)
        return [*self._shown(messages), {"role": "user", "content": ask}]

    def compact(self, messages: list[dict], step: int, written: str, staged: dict[str, str]) -> None:
        """Replace the steps before those sent whole by an account: `written` by the model (or "",
        and the account is assembled), a digest of the steps, and the staged files."""
        starts = steps_of(messages)
        begin, cut = max(2, self.kept_from), self._line(messages)
        first, last = _step_at(starts, begin), _step_at(starts, cut) - 1
        whole = sum(len(c) for c in staged.values()) <= self.window * CHARS_PER_TOKEN // STAGED_SHARE
        self.covered += _digest(messages, begin, cut)
        self.account = render("compacted.md.j2", written=written.strip(), digest=self.covered[-DIGEST_LINES:],
                              earlier=max(0, len(self.covered) - DIGEST_LINES), files=sorted(staged.items()),
                              whole=whole, last=last, step=step)
        self.kept_from, self.stubbed_before = cut, max(self.stubbed_before, cut)
        self.compactions += 1
        how = " the model wrote" if written.strip() else " assembled without a call"
        self.trims.append(Trim(step, len(messages), "compact",
                               f"steps {first}-{last} ({cut - begin} messages) replaced by an account{how}",
                               self.account))

    @property
    def stubbed(self) -> int:
        """Batches of stubs made so far."""
        return sum(t.kind == "stub" for t in self.trims)

    def kept(self, messages: list[dict]) -> dict:
        """What the conversation record keeps of the policy: each trim, and every tool output
        some request did not show whole, by its call's id (the requests hold what was shown)."""
        hidden = max(self.stubbed_before, self.kept_from) if self.trims else 0
        outputs = {m["tool_call_id"]: _text(m) for m in messages[:hidden]
                   if m.get("role") == "tool" and m.get("tool_call_id")}
        return {"trims": [asdict(t) for t in self.trims], "outputs": outputs}

    @property
    def whole_chars(self) -> int:
        """Characters of tool output the newest steps may send whole (`whole_share`)."""
        return int(self.cfg.whole_share * self.window) * CHARS_PER_TOKEN

    def _line(self, messages: list[dict]) -> int:
        """Where the steps sent whole begin: the oldest step start from which the outputs fit
        `whole_chars`, the last finished step's at least (the current step has none yet)."""
        starts, room = steps_of(messages), self.whole_chars
        if len(starts) < 2:
            return starts[0] if starts else 1
        line = starts[-2]
        for start in reversed(starts[:-2]):
            if sum(len(_text(m)) for m in messages[start:] if m.get("role") == "tool") > room:
                break
            line = start
        return line

    def _stub_batch(self, messages: list[dict], step: int) -> None:
        """Move the stub line to where the steps sent whole begin, once what it would stub is
        as large as they may be: a cache miss paid for many steps."""
        starts, line = steps_of(messages), self._line(messages)
        begin = max(self.stubbed_before, self.kept_from)
        saved = [i for i in range(begin, line) if _stubbable(messages[i], self.cfg.stub_chars)]
        chars = sum(len(_text(messages[i])) for i in saved)
        if not saved or chars < self.whole_chars:
            return
        first = _text(self._stub(messages, saved[0]))
        self.stubbed_before = line
        self.trims.append(Trim(step, len(messages), "stub", f"{len(saved)} tool output(s) of steps "
                               f"{_step_at(starts, begin)}-{_step_at(starts, line) - 1} ({chars:,} characters) "
                               "replaced by stubs", first))

    def _shown(self, messages: list[dict]) -> list[dict]:
        head, rest = messages[:2], messages[max(2, self.kept_from):]
        newest = steps_of(messages)[-1]
        shown = [self._stub(messages, i) if i < self.stubbed_before or _superseded(m, i, newest) else m
                 for i, m in enumerate(rest, max(2, self.kept_from))]
        if self.account and shown:
            shown[0] = {**shown[0], "content": f"{self.account}\n\n{_text(shown[0])}"}
        return [*head, *shown]

    def _stub(self, messages: list[dict], i: int) -> dict:
        """Message `i` as the view shows it once stubbed (unchanged where there is nothing to stub)."""
        m = messages[i]
        if m.get("role") == "user":
            return {**m, "content": render("stub_state.md.j2", step=_step_at(steps_of(messages), i))}
        if not _stubbable(m, self.cfg.stub_chars):
            return m
        name, arguments = _call_of(messages, i)
        text = _text(m)
        return {**m, "content": render("stub_output.md.j2", name=name, arguments=arguments, chars=len(text),
                                       lines=text.count("\n") + 1, first=text.strip().splitlines()[0][:160]
                                       if text.strip() else "")}


def estimate(messages: list[dict]) -> int:
    """Tokens of a list of messages, roughly: characters of text and of tool calls over four."""
    return sum(len(_text(m)) + len(json.dumps(m.get("tool_calls") or "")) for m in messages) // CHARS_PER_TOKEN


def steps_of(messages: list[dict]) -> list[int]:
    """The index at which each step starts: the first prompt, then each step's user message."""
    return [i for i, m in enumerate(messages) if i >= 1 and m.get("role") == "user"]


def _step_at(starts: list[int], index: int) -> int:
    """The step whose messages include `index` (1-based)."""
    return max(1, sum(1 for s in starts if s <= index))


def _superseded(message: dict, i: int, newest: int) -> bool:
    """A step's state block once a newer one is sent: it goes at once, and the request's
    second-to-last cache breakpoint (`models.request.CACHE_POINTS`) keeps the rest cached."""
    return message.get("role") == "user" and i < newest


def _stubbable(message: dict, limit: int) -> bool:
    return message.get("role") == "tool" and len(_text(message)) > limit


def _text(message: dict) -> str:
    content = message.get("content") or ""
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return str(content)


def _call_of(messages: list[dict], i: int) -> tuple[str, str]:
    """The name and arguments of the call whose result is message `i`."""
    wanted = messages[i].get("tool_call_id")
    for m in reversed(messages[:i]):
        for call in m.get("tool_calls") or []:
            if call.get("id") == wanted:
                return call["function"]["name"], _short(call["function"].get("arguments") or "", 300)
    return "a tool", ""


def _digest(messages: list[dict], begin: int, end: int) -> list[dict]:
    """One line per step from `begin` to `end`: what the model said first, the calls it made,
    what each returned (its size and first line)."""
    starts, lines = steps_of(messages), []
    results: list[str] = []
    for i in range(begin, end):
        m = messages[i]
        if m.get("role") == "assistant":
            said = _text(m).strip().splitlines()
            calls = [f"{c['function']['name']}({_short(c['function'].get('arguments'))})"
                     for c in m.get("tool_calls") or []]
            results = []
            lines.append({"step": _step_at(starts, i), "said": said[0][:200] if said else "", "calls": calls,
                          "results": results})
        elif m.get("role") == "tool" and lines:
            text = _text(m).strip()
            results.append(f"{len(text):,} characters" + (f": {text.splitlines()[0][:120]}" if text else ""))
    return lines


def _short(arguments: object, limit: int = 120) -> str:
    shown = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return shown if len(shown) <= limit else shown[:limit] + "..."
