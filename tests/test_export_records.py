"""The layouts of `gitswarm export` on conversations made by hand: a readable transcript read
back (an old run), a lossless record in both tool protocols, and the chat checker failing on
records that break the layout."""

from __future__ import annotations

import json

from gitswarm.engine.episode import transcript
from gitswarm.export.credit import step_rewards
from gitswarm.export.records import chat_record, check_chat, of_conversation, of_transcript, step_records
from gitswarm.export.transcripts import read_messages

TOOLS = [{"type": "function", "function": {"name": n, "parameters": {"type": "object"}}}
         for n in ("read_file", "write_file", "contribute", "abstain")]
NAMES = [t["function"]["name"] for t in TOOLS]


def call(call_id: str, name: str, arguments: str) -> dict:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


ENGINE_MESSAGES = [
    {"role": "system", "content": "You are one worker.\n\n### Not a turn\n-> read_file( is prose here"},
    {"role": "user", "content": "# Problem p\n\n<state>step 1</state>"},
    {"role": "assistant", "content": "Reading first.", "reasoning_content": "think\nhard",
     "tool_calls": [call("a1", "read_file", '{"path": "notes/a.md"}'),
                    call("a2", "write_file", '{\n  "path": "attempts/x.md",\n  "content": "1\\n2"\n}')]},
    {"role": "tool", "tool_call_id": "a1", "content": "the note"},
    {"role": "tool", "tool_call_id": "a2", "content": "staged attempts/x.md"},
    {"role": "user", "content": "<state>step 2</state>"},
    {"role": "assistant", "content": None,
     "tool_calls": [call("b1", "contribute", '{"kind": "attempt"}'), call("b2", "read_file", "{}")]},
    {"role": "tool", "tool_call_id": "b2", "content": "episode ended by an earlier call"},
]
"""An episode as the engine's message list holds it: the final call is never answered, the
calls after it are."""


def test_a_readable_transcript_reads_back_into_the_engine_messages():
    found = read_messages(transcript(ENGINE_MESSAGES), NAMES)
    assert [m["role"] for m in found] == [m["role"] for m in ENGINE_MESSAGES]
    assert found[0]["content"] == ENGINE_MESSAGES[0]["content"]
    assert found[2]["content"] == "Reading first." and found[2]["reasoning_content"] == "think\nhard"
    sent = [(c["function"]["name"], c["function"]["arguments"]) for c in ENGINE_MESSAGES[2]["tool_calls"]]
    assert [(c["function"]["name"], c["function"]["arguments"]) for c in found[2]["tool_calls"]] == sent
    assert found[3]["tool_call_id"] == found[2]["tool_calls"][0]["id"]
    assert found[4]["tool_call_id"] == found[2]["tool_calls"][1]["id"]
    # the answer after the final action is the second call's: the contribute call has none
    assert found[6]["content"] is None
    assert found[7]["tool_call_id"] == found[6]["tool_calls"][1]["id"]


def test_a_transcript_makes_a_valid_chat_record_that_says_what_it_lacks():
    dialogue = of_transcript(transcript(ENGINE_MESSAGES), TOOLS)
    record = chat_record(dialogue, {"episode": "e00001", "outcome": "contributed", "credit": 0.5})
    assert check_chat(record) == []
    labels = record["labels"]
    assert labels["source"] == "transcript" and labels["lossless"] is False and "tool call ids" in labels["missing"]
    assert labels["synthesized_answers"] == 1
    ending = next(m for m in record["messages"] if m["role"] == "tool" and "ended it" in m["content"])
    assert ending["tool_call_id"] == record["messages"][6]["tool_calls"][0]["id"]
    steps = step_records(dialogue, record["labels"], step_rewards(0.5, len(dialogue.steps)))
    assert [(s["step"], len(s["context"]), s["reward"], s["return"]) for s in steps] == [(1, 2, 0.0, 0.5),
                                                                                        (2, 6, 0.5, 0.5)]


def conversation(protocol: str) -> dict:
    """A lossless record (engine.conversation's contract) of a two-call episode, the first
    attempt of the second call failed and retried."""
    first = ENGINE_MESSAGES[:2]
    reply1 = {"content": "Reading first.", "tool_calls": [{"id": "a1", "name": "read_file",
                                                            "arguments": '{"path": "notes/a.md"}'}],
              "thinking": [{"type": "thinking", "thinking": "hm", "signature": "sig"}], "finish_reason": "tool_calls"}
    if protocol == "text":
        reply1 = {"content": '<call name="read_file">\n<path>notes/a.md</path>\n</call>', "tool_calls": [],
                  "read_calls": [{"id": "t1", "name": "read_file", "arguments": {"path": "notes/a.md"}}]}
        second = [*first, {"role": "assistant", "content": reply1["content"]},
                  {"role": "user", "content": '<result call="1" tool="read_file">the note</result>\n<state>2</state>'}]
    else:
        second = [*first, {"role": "assistant", "content": "Reading first.",
                           "tool_calls": [call("a1", "read_file", '{"path": "notes/a.md"}')]},
                  {"role": "tool", "tool_call_id": "a1", "content": "the note"},
                  {"role": "user", "content": "<state>2</state>"}]
    last = {"content": "", "tool_calls": [{"id": "c1", "name": "abstain", "arguments": '{"reason": "none"}'}],
            "finish_reason": "tool_calls"}
    if protocol == "text":
        last = {"content": '<call name="abstain">\n<reason>none</reason>\n</call>', "tool_calls": [],
                "read_calls": [{"id": "t2", "name": "abstain", "arguments": {"reason": "none"}}]}
    calls = [{"started": 1.0, "ended": 2.0, "request": {"messages": first, "protocol": protocol}, "reply": reply1,
              "usage": {"input_tokens": 10, "output_tokens": 5}, "error": None},
             {"started": 3.0, "ended": 4.0, "request": {"messages": second, "protocol": protocol}, "reply": None,
              "usage": None, "error": "server: 500"},
             {"started": 5.0, "ended": 6.0, "request": {"messages": second, "protocol": protocol}, "reply": last,
              "usage": {"input_tokens": 20, "output_tokens": 5}, "error": None}]
    return {"version": 1, "episode": "e00002", "problem": "p", "worker": "w01", "model": "openai/m",
            "params": {"reasoning_effort": None, "max_output_tokens": 100, "tool_protocol": protocol},
            "tools": TOOLS, "calls": calls, "outcome": "abstain"}


def test_a_lossless_native_record_keeps_ids_every_attempt_and_the_reply_as_returned():
    dialogue = of_conversation(conversation("native"))
    record = chat_record(dialogue, {"episode": "e00002", "outcome": "abstained", "credit": 0.0})
    assert check_chat(record) == []
    assert record["tools"] == TOOLS and record["labels"]["lossless"] and record["labels"]["missing"] == []
    assert record["messages"][-2]["tool_calls"][0]["id"] == "c1" == record["messages"][-1]["tool_call_id"]
    steps = step_records(dialogue, record["labels"], step_rewards(0.0, len(dialogue.steps)))
    assert [(s["error"], s["reply"] is None, s["protocol"]) for s in steps] == [
        (None, False, "native"), ("server: 500", True, "native"), (None, False, "native")]
    assert steps[0]["raw_reply"]["thinking"][0]["signature"] == "sig" and steps[0]["usage"]["input_tokens"] == 10


def test_a_text_protocol_episode_is_the_plain_text_it_was():
    record = chat_record(of_conversation(conversation("text")), {"episode": "e00002", "outcome": "abstained"})
    assert check_chat(record) == []
    assert record["tools"] == [] and record["labels"]["protocol"] == "text"
    assert all("tool_calls" not in m and m["role"] != "tool" for m in record["messages"])
    last = {"role": "assistant", "content": '<call name="abstain">\n<reason>none</reason>\n</call>'}
    assert record["messages"][-1] == last


def test_the_chat_checker_names_each_break_of_the_layout():
    good = chat_record(of_conversation(conversation("native")), {"outcome": "abstained"})
    assert check_chat(good) == []
    unanswered = {**good, "messages": good["messages"][:-1]}
    assert check_chat(unanswered) == ["the last tool calls are not answered: ['c1']"]
    wrong_id = {**good, "messages": [*good["messages"][:-1], {"role": "tool", "tool_call_id": "zz", "content": ""}]}
    assert any("answering no open call" in p for p in check_chat(wrong_id))
    assert any("no tools" in p for p in check_chat({**good, "tools": []}))
    swapped = {**good, "messages": [good["messages"][1], good["messages"][0], *good["messages"][2:]]}
    assert any("system after user" in p for p in check_chat(swapped))
    assert check_chat({"messages": []}) == ["no messages"]


def test_an_old_run_with_an_abstention_and_an_episode_cut_off(tmp_path):
    """A run without lossless records: the abstention's transcript (in the transcripts book) is
    read back and said to be one; the episode a crash cut off has nothing and is named."""
    from conftest import write_set
    from typer.testing import CliRunner

    from gitswarm.cli.main import app
    from gitswarm.domain.episode import EpisodeRecord
    from gitswarm.engine.ledger import Ledger
    from gitswarm.memory.repo import Memory
    from gitswarm.problems.loader import load_set

    memory = Memory.create(tmp_path / "run", load_set(write_set(tmp_path / "set")))
    messages = [*ENGINE_MESSAGES[:2], {"role": "assistant", "content": None,
                                       "tool_calls": [call("x1", "abstain", '{"reason": "nothing new"}')]}]
    abstained = EpisodeRecord("e00001", "w01", "sum", status="abstain",
                              transcript=memory.put_transcript("e00001", transcript(messages)))
    ledger = Ledger()
    ledger.save(memory, abstained)
    ledger.save(memory, EpisodeRecord("e00002", "w02", "odd"))  # running: the crash came first
    result = CliRunner().invoke(app, ["export", str(tmp_path / "run")])
    assert result.exit_code == 0, result.output
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r["labels"]["episode"] for r in records] == ["e00001"]
    assert check_chat(records[0]) == [] and records[0]["labels"]["source"] == "transcript"
    assert records[0]["labels"]["outcome"] == "abstained" and records[0]["messages"][-1]["role"] == "tool"
    assert "1 episode(s) left out" in result.stderr and "e00002" in result.stderr
