"""The Messages API's documented rules, each refused with Anthropic's own wording."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from gitswarm.fakeserver.caching import breakpoints
from gitswarm.fakeserver.catalog import ModelSpec
from gitswarm.fakeserver.responders import FakeError
from gitswarm.fakeserver.thinking import Signer

DOCS = "https://docs.claude.com/en/docs/build-with-claude/extended-thinking"
CONSIDERATIONS = f"Please consult our documentation at {DOCS}#important-considerations-when-using-extended-thinking"
MAX_BREAKPOINTS = 4
MIN_BUDGET = 1024


def bad(message: str) -> FakeError:
    """A 400 invalid_request_error."""
    return FakeError(400, message, "invalid_request_error")


def authenticate(headers: Mapping[str, str], api_key: str | None) -> FakeError | None:
    """x-api-key is required (and must match when the server has a key); so is anthropic-version."""
    key = headers.get("x-api-key")
    if not key:
        return FakeError(401, "x-api-key header is required", "authentication_error")
    if api_key is not None and key != api_key:
        return FakeError(401, "invalid x-api-key", "authentication_error")
    if not headers.get("anthropic-version"):
        return bad("anthropic-version: header is required")
    return None


def validate(body: dict, spec: ModelSpec, signer: Signer) -> FakeError | None:
    """The first rule this request breaks, in roughly the order the API checks them."""
    checks: list[Callable[[], FakeError | None]] = [
        lambda: _required(body), lambda: _max_tokens(body, spec), lambda: _thinking_config(body),
        lambda: _breakpoints(body), lambda: _tool_pairs(body["messages"]),
        lambda: _thinking_blocks(body, signer),
    ]
    return next((error for check in checks if (error := check()) is not None), None)


def thinking_on(body: dict) -> bool:
    """Whether the request turns extended thinking on."""
    thinking = body.get("thinking")
    return isinstance(thinking, dict) and thinking.get("type") == "enabled"


def content_blocks(content: object) -> list[dict]:
    """A message's content as a list of blocks (a string is one text block)."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [block for block in content if isinstance(block, dict)] if isinstance(content, list) else []


def _required(body: dict) -> FakeError | None:
    for name in ("model", "max_tokens", "messages"):
        if name not in body:
            return bad(f"{name}: Field required")
    if not isinstance(body["max_tokens"], int) or body["max_tokens"] < 1:
        return bad("max_tokens: Input should be greater than or equal to 1")
    if not isinstance(body["messages"], list):
        return bad("messages: Input should be a valid list")
    return None


def _max_tokens(body: dict, spec: ModelSpec) -> FakeError | None:
    if body["max_tokens"] <= spec.output_limit:
        return None
    return bad(f"max_tokens: {body['max_tokens']} > {spec.output_limit}, which is the maximum allowed number "
               f"of output tokens for {body['model']}")


def _thinking_config(body: dict) -> FakeError | None:
    if not thinking_on(body):
        return None
    budget = body["thinking"].get("budget_tokens")
    if budget is None:
        return bad("thinking.enabled.budget_tokens: Field required")
    if not isinstance(budget, int) or budget < MIN_BUDGET:
        return bad(f"thinking.enabled.budget_tokens: Input should be greater than or equal to {MIN_BUDGET}")
    if budget >= body["max_tokens"]:
        return bad("`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our documentation "
                   f"at {DOCS}#max-tokens-and-context-window-size")
    return _sampling_with_thinking(body)


def _sampling_with_thinking(body: dict) -> FakeError | None:
    if body.get("temperature") not in (None, 1, 1.0):
        return bad(f"`temperature` may only be set to 1 when thinking is enabled. {CONSIDERATIONS}")
    if body.get("top_k") is not None:
        return bad(f"`top_k` must be unset when thinking is enabled. {CONSIDERATIONS}")
    top_p = body.get("top_p")
    if top_p is not None and not 0.95 <= top_p <= 1:
        return bad(f"`top_p` must be greater than or equal to 0.95 or unset when thinking is enabled. {CONSIDERATIONS}")
    if (body.get("tool_choice") or {}).get("type") in ("any", "tool"):
        return bad("Thinking may not be enabled when tool_choice forces tool use.")
    return None


def _breakpoints(body: dict) -> FakeError | None:
    found = breakpoints(body)
    if found <= MAX_BREAKPOINTS:
        return None
    return bad(f"A maximum of {MAX_BREAKPOINTS} blocks with cache_control may be provided. Found {found}.")


def _tool_pairs(messages: list) -> FakeError | None:
    """Each tool_use is answered by a tool_result at the start of the very next user turn, and
    each tool_result answers a tool_use of the turn just before it."""
    asked: list[str] = []
    for i, message in enumerate(messages):
        blocks = content_blocks(message.get("content"))
        if message.get("role") == "user":
            answered, error = _answers(blocks, asked, i)
            if error:
                return error
            missing = [tool_id for tool_id in asked if tool_id not in answered]
            if missing:
                return _unanswered(i - 1, missing)
        elif asked:
            return _unanswered(i - 1, asked)
        asked = [b.get("id", "") for b in blocks if b.get("type") == "tool_use"] \
            if message.get("role") == "assistant" else []
    return _unanswered(len(messages) - 1, asked) if asked else None


def _answers(blocks: list[dict], asked: list[str], turn: int) -> tuple[set[str], FakeError | None]:
    """The tool_use ids answered by the leading tool_result blocks of a user turn."""
    answered: set[str] = set()
    leading = True
    for j, block in enumerate(blocks):
        if block.get("type") != "tool_result":
            leading = False
            continue
        tool_id = block.get("tool_use_id")
        if tool_id not in asked:
            return answered, bad(f"messages.{turn}.content.{j}: unexpected `tool_use_id` found in `tool_result` "
                                 f"blocks: {tool_id}. Each `tool_result` block must have a corresponding "
                                 "`tool_use` block in the previous message.")
        if leading:
            answered.add(tool_id)
    return answered, None


def _unanswered(turn: int, ids: list[str]) -> FakeError:
    return bad(f"messages.{turn}: `tool_use` ids were found without `tool_result` blocks immediately after: "
               f"{', '.join(ids)}. Each `tool_use` block must have a corresponding `tool_result` block in the "
               "next message.")


def _thinking_blocks(body: dict, signer: Signer) -> FakeError | None:
    """With thinking on, an assistant turn holding tool_use starts with a thinking block, and
    every thinking block carries this server's signature."""
    if not thinking_on(body):
        return None
    for i, message in enumerate(body["messages"]):
        if message.get("role") != "assistant":
            continue
        blocks = content_blocks(message.get("content"))
        for j, block in enumerate(blocks):
            if not _signed(block, signer):
                return bad(f"messages.{i}.content.{j}: Invalid `signature` in `thinking` block")
        if any(b.get("type") == "tool_use" for b in blocks) and blocks[0].get("type") not in _THINKING:
            return bad(f"messages.{i}.content.0.type: Expected `thinking` or `redacted_thinking`, but found "
                       f"`{blocks[0].get('type')}`. When `thinking` is enabled, a final `assistant` message must "
                       "start with a thinking block (preceeding the lastmost set of `tool_use` and `tool_result` "
                       "blocks). We recommend you include thinking blocks from previous turns. To avoid this "
                       f"requirement, disable `thinking`. Please consult our documentation at {DOCS}")
    return None


_THINKING = ("thinking", "redacted_thinking")


def _signed(block: dict, signer: Signer) -> bool:
    if block.get("type") == "thinking":
        return signer.verify(block.get("thinking"), block.get("signature"))
    if block.get("type") == "redacted_thinking":
        return signer.verify_redacted(block.get("data"))
    return True
