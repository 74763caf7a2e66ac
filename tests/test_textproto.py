"""The text tool protocol: calls written and parsed back over the real tools, every mistake a
precise error, conversations rewritten for chat templates, and a reply through real litellm."""

from __future__ import annotations

import json

import anyio
import pytest

from gitswarm.engine.tools import tool_schemas
from gitswarm.fakeserver import FakeReply, serve
from gitswarm.models.lib import litellm_module
from gitswarm.models.textproto import format_calls, instructions, parse_reply, to_text_messages
from gitswarm.resources import render

TOOLS = tool_schemas()
NAMES = [tool["function"]["name"] for tool in TOOLS]


def tricky(key: str) -> str:
    """A raw body with TeX, escapes, quotes, the protocol's own tag lines in a code block, CRLF."""
    return ("  indented first line\n"
            "$\\frac{1}{2} + \\binom{n}{k} \\theta$, a literal \\n, \"double\" and 'single' quotes\n"
            "```xml\n"
            f"</{key}>\n"
            "</call>\n"
            '<call name="abstain">\n'
            "```\n"
            "\n"
            "a CRLF line\r\n"
            "trailing spaces   ")


def sample(spec: dict, key: str, plain: bool) -> object:
    """A value of the schema's type for property `key`."""
    if "enum" in spec:
        return spec["enum"][-1]
    kind = spec.get("type")
    if kind in ("integer", "number", "boolean"):
        return {"integer": 3, "number": 2.5, "boolean": True}[kind]
    if kind == "array":
        return ["3f2a9c1", "b71e04d"]
    return "attempts/p1.md" if plain else tricky(key)


def all_calls(plain: bool) -> list[tuple[str, dict]]:
    """One call of every tool with every argument it has."""
    return [(tool["function"]["name"],
             {key: sample(spec, key, plain) for key, spec in tool["function"]["parameters"]["properties"].items()})
            for tool in TOOLS]


@pytest.mark.parametrize("plain", [False, True], ids=["raw-bodies", "one-line-values"])
def test_round_trip_every_tool(plain: bool) -> None:
    calls = all_calls(plain)
    prose, parsed = parse_reply(f"Working on it.\n\n{format_calls(calls)}\n\nThat is all.", TOOLS)
    assert prose == "Working on it.\n\nThat is all."
    assert [(c.name, c.arguments) for c in parsed] == calls
    assert [c.error for c in parsed] == [None] * len(NAMES)
    assert [c.id for c in parsed] == [f"text_call_{n}" for n in range(1, len(NAMES) + 1)]
    assert [json.loads(c.raw_arguments) for c in parsed] == [args for _, args in calls]


def test_bodies_are_written_raw() -> None:
    body = tricky("content")
    text = format_calls([("write_file", {"path": "attempts/p1.md", "content": body})])
    assert "\\frac{1}{2}" in text and '"double"' in text and "\\\\" not in text  # nothing escaped
    assert '<content until="END-CONTENT">' in text  # the body holds a line `</content>`
    _, [call] = parse_reply(text, TOOLS)
    assert call.arguments == {"path": "attempts/p1.md", "content": body}


def test_crlf_reply_reads_as_lf() -> None:
    calls = [("write_file", {"path": "a.md", "content": "line one\n\\theta\n"}), ("announce", {"intent": "x"})]
    _, parsed = parse_reply(format_calls(calls).replace("\n", "\r\n"), TOOLS)
    assert [(c.name, c.arguments) for c in parsed] == calls


def test_tolerated_variations() -> None:
    reply = ("<think>\nMaybe:\n<call name=\"abstain\">\n<reason>no</reason>\n</call>\n</think>\n"
             "Here are my calls:\n```xml\n"
             "<call name='read_file'>   \n  <path> notes/a.md </path>  \n\n</call>  \n"
             '<call tool="in_flight"/>\n'
             "```\n"
             '<call name="contribute">\n<kind>note</kind>\n<title>T</title>\n<summary>S</summary>\n'
             '<informed_by>["3f2a9c1", "b71e04d"]</informed_by>\n</call>\n'
             '<call name="contribute">\n<kind>note</kind>\n<title>T</title>\n<summary>S</summary>\n'
             "<informed_by>\n- 3f2a9c1\n\n- b71e04d\n</informed_by>\n</call>")
    prose, calls = parse_reply(reply, TOOLS)
    assert [c.name for c in calls] == ["read_file", "in_flight", "contribute", "contribute"]  # not the draft
    assert [c.error for c in calls] == [None] * 4
    assert calls[0].arguments == {"path": "notes/a.md"}
    assert calls[2].arguments["informed_by"] == calls[3].arguments["informed_by"] == ["3f2a9c1", "b71e04d"]
    assert prose.startswith("<think>") and prose.endswith("Here are my calls:") and "```" not in prose


def test_a_closing_tag_at_the_end_of_the_last_line() -> None:
    reply = '<call name="write_file">\n<path>a.md</path>\n<content>\n$x$ is \\frac{1}{2}.\nDone.</content>\n</call>'
    _, [call] = parse_reply(reply, TOOLS)
    assert call.arguments == {"path": "a.md", "content": "$x$ is \\frac{1}{2}.\nDone."}


def test_prose_keeps_its_own_code_blocks() -> None:
    reply = 'Check:\n```python\nprint(1)\n```\n<call name="in_flight">\n</call>\nDone.'
    prose, [call] = parse_reply(reply, TOOLS)
    assert prose == "Check:\n```python\nprint(1)\n```\n\nDone." and call.error is None


def test_booleans_and_numbers() -> None:
    tool = {"type": "function", "function": {"name": "set", "parameters": {"type": "object", "properties": {
        "on": {"type": "boolean"}, "rate": {"type": ["number", "null"]}}}}}
    _, [ok, bad] = parse_reply("<call name=\"set\">\n<on>True</on>\n<rate>0.5</rate>\n</call>\n"
                               "<call name=\"set\">\n<on>maybe</on>\n</call>", [tool])
    assert ok.arguments == {"on": True, "rate": 0.5}
    assert bad.error == "`on` must be true or false; got 'maybe'"
    written = format_calls([("set", {"on": False, "rate": 2.5})])
    assert written == '<call name="set">\n<on>false</on>\n<rate>2.5</rate>\n</call>'


ERRORS = [
    ('<call name="delete_file">\n<path>a</path>\n</call>',
     f"there is no tool 'delete_file'; the tools are: {', '.join(NAMES)}"),
    ('<call name="write_file">\n<path>a.md</path>\n</call>',
     "write_file needs `content`: add `<content>...</content>` to the call"),
    ('<call name="read_file">\n<file>a.md</file>\n</call>',
     "read_file needs `path`: add `<path>...</path>` to the call (read_file has no argument `file`)"),
    ('<call name="read_file">\n<path>a.md</path>\n<offset>ten</offset>\n</call>',
     "`offset` must be an integer, written in digits; got 'ten'"),
    ('<call name="contribute">\n<kind>note</kind>\n<title>t</title>\n<summary>s</summary>\n'
     '<informed_by>["abc",</informed_by>\n</call>',
     "`informed_by` starts like a JSON list but is not valid JSON (Expecting value: line 1 column 8 (char 7)): "
     "give one item per line instead"),
    ('<call name="write_file">\n<path>a.md</path>\n<content>\n\\frac{1}{2}\n</call>',
     "the value of `content` is not terminated, so the rest of your reply was read as part of it: "
     "end the value with a line that is exactly `</content>`"),
    ('<call name="write_file">\n<path>a.md</path>\n<content until="EOF">\nx\n</content>\n</call>',
     "the value of `content` is not terminated, so the rest of your reply was read as part of it: "
     "end the value with a line that is exactly `EOF`"),
    ('<call name="search">\n<query>x</query>\n',
     "the call is not terminated: end it with a line that is exactly `</call>`"),
    ('<call name="search">\n<query>x</query>\n<query>y</query>\n</call>', "the argument `query` is given twice"),
    ('<call name="search">\nquery: x\n</call>',
     "the line 'query: x' inside the call is not an argument: write each argument as `<NAME>value</NAME>`, "
     "or a long value between a line `<NAME>` and a line `</NAME>`"),
    ('<call name="write_file">\n<path>a.md</path>\n<content>\n```\n</content>\n```\n</content>\n</call>',
     "the line '```' inside the call is not an argument: write each argument as `<NAME>value</NAME>`, "
     "or a long value between a line `<NAME>` and a line `</NAME>` (if it belongs to `content`, that value "
     'contains a line `</content>`: open it with `<content until="END-WORD">` and end it with a line that is '
     "exactly `END-WORD`)"),
]


@pytest.mark.parametrize(("reply", "error"), ERRORS)
def test_each_mistake_is_a_precise_error(reply: str, error: str) -> None:
    _, [call] = parse_reply(reply, TOOLS)
    assert (call.id, call.arguments, call.error) == ("text_call_1", None, error)
    assert isinstance(json.loads(call.raw_arguments), dict)


def test_an_argument_the_tool_lacks_passes_as_raw_text_for_the_engine_to_drop() -> None:
    reply = '<call name="read_file">\n<path>a.md</path>\n<offset>5</offset>\n<verbose>yes</verbose>\n</call>'
    _, [call] = parse_reply(reply, TOOLS)
    assert (call.arguments, call.error) == ({"path": "a.md", "offset": 5, "verbose": "yes"}, None)


def test_a_broken_call_leaves_the_next_one_intact() -> None:
    reply = '<call name="search">\n<query>x</query>\n<call name="read_file">\n<path>a.md</path>\n</call>'
    _, [broken, ok] = parse_reply(reply, TOOLS)
    assert broken.error.startswith("the call is not terminated") and json.loads(broken.raw_arguments) == {"query": "x"}
    assert (ok.id, ok.arguments, ok.error) == ("text_call_2", {"path": "a.md"}, None)


SYSTEM = render("worker_system.md.j2", max_steps=6, code=False, verify=2, settle_nominations=3, in_row=False,
                nominations=True, assigned=False, reviewer=False, blind=False)


def conversation() -> list[dict]:
    """A worker conversation in OpenAI form: two tool turns, results, step messages."""
    body = tricky("content")

    def call(n: int, name: str, args: dict) -> dict:
        return {"id": f"call_{n}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}

    return [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": [{"type": "text", "text": "State and overview.", "cache_control": {}}]},
        {"role": "assistant", "content": "Let me read.",
         "tool_calls": [call(1, "read_file", {"path": "notes/a.md"}), call(2, "in_flight", {})]},
        {"role": "tool", "tool_call_id": "call_1", "content": "<memory-data>note text</memory-data>"},
        {"role": "tool", "tool_call_id": "call_2", "content": "nobody"},
        {"role": "user", "content": "Step 2 of 6."},
        {"role": "assistant", "content": None,
         "tool_calls": [call(3, "write_file", {"path": "attempts/p.md", "content": body})]},
        {"role": "tool", "tool_call_id": "call_3", "content": "staged attempts/p.md"},
        {"role": "user", "content": "Step 3 of 6."},
        {"role": "assistant", "content": "Done: abstaining."},
    ]


def test_conversation_for_a_model_without_tools() -> None:
    out = to_text_messages(conversation(), TOOLS)
    roles = [m["role"] for m in out]
    assert roles == ["system", "user", "assistant", "user", "assistant", "user", "assistant"]
    assert all(set(m) == {"role", "content"} and isinstance(m["content"], str) for m in out)
    assert out[0]["content"] == f"{SYSTEM}\n\n{instructions(TOOLS)}"
    assert out[1]["content"] == "State and overview."
    assert out[3]["content"] == ('<result call="1" tool="read_file">\n<memory-data>note text</memory-data>\n</result>'
                                 '\n\n<result call="2" tool="in_flight">\nnobody\n</result>\n\nStep 2 of 6.')
    assert out[5]["content"].startswith('<result call="1" tool="write_file">\nstaged attempts/p.md\n</result>')
    prose, calls = parse_reply(out[2]["content"], TOOLS)
    assert prose == "Let me read." and [(c.name, c.arguments) for c in calls] == [
        ("read_file", {"path": "notes/a.md"}), ("in_flight", {})]
    _, [write] = parse_reply(out[4]["content"], TOOLS)
    assert write.arguments == {"path": "attempts/p.md", "content": tricky("content")}


def test_turns_kept_as_protocol_text_get_labelled_results() -> None:
    """The client keeps a text-protocol turn as its own text, without `tool_calls`."""
    reply = "Reading.\n\n" + format_calls([("read_file", {"path": "a.md"}), ("nominate", {})])
    _, calls = parse_reply(reply, TOOLS)
    out = to_text_messages([{"role": "user", "content": "Go."}, {"role": "assistant", "content": reply},
                            *({"role": "tool", "tool_call_id": c.id, "content": c.error or "ok"} for c in calls)],
                           TOOLS)
    assert out[2] == {"role": "assistant", "content": reply}
    assert out[3]["content"] == ('<result call="1" tool="read_file">\nok\n</result>\n\n'
                                 f'<result call="2" tool="nominate">\n{calls[1].error}\n</result>')


def test_conversation_without_a_system_message() -> None:
    out = to_text_messages([{"role": "user", "content": "Hi"}, {"role": "user", "content": "there"}], TOOLS)
    assert out == [{"role": "system", "content": instructions(TOOLS)}, {"role": "user", "content": "Hi\n\nthere"}]


def test_instructions_render_for_the_real_tools() -> None:
    text = instructions(TOOLS)
    for tool in TOOLS:
        fn = tool["function"]
        assert f"### {fn['name']}\n" in text
        for key in fn["parameters"]["properties"]:
            required = "required" if key in fn["parameters"].get("required", []) else "optional"
            assert f"- `{key}` (" in text and required in text
    assert "- `informed_by` (list of text items, one per line, optional)" in text
    example = text.split("## Example")[1].split("## The tools")[0]
    prose, calls = parse_reply(example, TOOLS)
    assert [(c.name, c.error) for c in calls] == [("write_file", None), ("contribute", None)]
    assert "\\frac{1}{2}" in calls[0].arguments["content"] and "\n\n" in calls[0].arguments["content"]
    assert calls[1].arguments["informed_by"] == ["3f2a9c1", "b71e04d"]
    assert prose.startswith("I have checked")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_a_reply_through_real_litellm_without_tools() -> None:
    litellm = litellm_module()
    calls = [("write_file", {"path": "attempts/p.md", "content": tricky("content")}),
             ("contribute", {"kind": "attempt", "title": "T", "summary": "S", "informed_by": ["3f2a9c1"]})]

    def responder(request: dict) -> FakeReply:
        return FakeReply(content="Staging and contributing.\n\n" + format_calls(calls))

    with anyio.fail_after(30):
        async with serve(responder) as server:
            response = await litellm.acompletion(model="openai/local-model", api_base=server.url, api_key="k",
                                                 messages=to_text_messages(conversation(), TOOLS))
    request = server.requests[0]
    assert "tools" not in request and "tool_choice" not in request
    assert {m["role"] for m in request["messages"]} == {"system", "user", "assistant"}
    prose, parsed = parse_reply(response.choices[0].message.content, TOOLS)
    assert prose == "Staging and contributing."
    assert [(c.name, c.arguments, c.error) for c in parsed] == [(name, args, None) for name, args in calls]
