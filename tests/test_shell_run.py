"""A full scripted run on the shipped reproduce set through the real engine: the real litellm
client against the fake server, a test-local scripted model, the real sandbox, shell and
reference; then the real `gitswarm grade`, `status` and `report`.

The script: the first episode probes the reference `tally` with the shell, writes a partial
Python candidate with compile.sh through the shell, builds it, compares it with the
reference and contributes it as code; the second tries to pass the reference off as its own
(compile.sh copies it); the others nominate the first. Grading scores the partial candidate
strictly between 0 and 1 and the copy 0, and `status` and the report show the grade.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import anyio
from typer.testing import CliRunner

from gitswarm.cli.main import app
from gitswarm.engine.config import SolveConfig
from gitswarm.engine.run import solve
from gitswarm.fakeserver import FakeReply, serve
from gitswarm.memory.repo import Memory
from gitswarm.models import textproto
from gitswarm.models.client import LiteLLMModel
from gitswarm.models.config import ModelConfig
from gitswarm.problems.loader import load_set
from gitswarm.referee.grades import GradeStore
from gitswarm.resources import resolve_set

runner = CliRunner()
SHIPPED = resolve_set("reproduce")

TALLY_PY = r'''#!/usr/bin/env python3
import sys
args = sys.argv[1:]
flags = set()
while args and args[0].startswith("-") and args[0] != "-":
    word = args.pop(0)
    if word == "--":
        break
    flags |= set(word[1:])
show = [k for k in "lwc" if k in flags] or list("lwc")
def counts(data):
    return {"l": data.count(b"\n"), "w": len(data.split()), "c": len(data)}
def line(c, name=None):
    return " ".join(str(c[k]) for k in show) + ("" if name is None else " " + name)
if not args:
    print(line(counts(sys.stdin.buffer.read())))
else:
    total = {"l": 0, "w": 0, "c": 0}
    for name in args:
        data = sys.stdin.buffer.read() if name == "-" else open(name, "rb").read()
        c = counts(data)
        print(line(c, name))
        for k in total:
            total[k] += c[k]
    if len(args) > 1:
        print(line(total, "total"))
'''

PROBE = "printf 'one two\\nthree\\n' | tally; echo \"exit $?\"; tally -l nothing-here; echo \"exit $?\""
WRITE = (f"mkdir -p tally-py/tests && cd tally-py && cat > tally.py <<'PY'\n{TALLY_PY}PY\n"
         "printf '#!/bin/sh\\ncp tally.py executable && chmod +x executable\\n' > compile.sh\n"
         "cat > tests/compare.sh <<'SH'\n"
         "for input in 'a b\\n' '' 'x\\ny z\\n' 'no newline'; do\n"
         "  want=$(printf \"$input\" | tally -lw; echo \"exit $?\"); got=$(printf \"$input\" | ./executable -lw; "
         "echo \"exit $?\")\n"
         "  [ \"$want\" = \"$got\" ] && echo same || echo \"differs on '$input'\"\ndone\nSH\n"
         "sh compile.sh && sh tests/compare.sh")
CHEAT = ("mkdir -p copy && printf '#!/bin/sh\\ncp \"$(command -v tally)\" executable\\n' > copy/compile.sh && "
         "cd copy && sh compile.sh; ls")


def call(name: str, **arguments) -> dict:
    return {"name": name, "arguments": arguments}


def plan(first: str) -> list[dict]:
    """The calls of one episode, from the items its first prompt lists."""
    if "code/tally-py/" not in first:
        return [call("shell", command=PROBE), call("shell", command=WRITE),
                call("contribute", kind="code", title="a partial tally in Python",
                     summary="Counts lines, words and bytes; no --help, no error messages yet.",
                     self_assessment="partial: the comparison passes on plain input only")]
    if "code/copy/" not in first:
        return [call("shell", command=CHEAT),
                call("contribute", kind="code", title="tally by copying", summary="compile.sh copies tally.")]
    return [call("nominate", candidate="code/tally-py", rationale="The comparison with tally passes.")]


def respond(request: dict) -> FakeReply:
    """The scripted worker and merger: native tool calls, or the text protocol's blocks when
    the tools are described in the system prompt."""
    messages = request.get("messages", [])
    system = str(messages[0].get("content") or "") if messages else ""
    text = "# How to call tools" in system
    if not request.get("tools") and not text:
        return FakeReply(content="A partial tally in Python is the leading codebase.")
    first = next(str(m["content"]) for m in messages if m["role"] == "user")
    done = sum(1 for m in messages if m["role"] == "assistant")
    steps = plan(first)
    chosen = steps[min(done, len(steps) - 1)]
    if text:
        return FakeReply(content=textproto.format_calls([(chosen["name"], chosen["arguments"])]))
    return FakeReply(tool_calls=[chosen])


async def scripted_run(run: Path, protocol: str = "native", **options):
    problem_set = load_set(SHIPPED)
    async with serve(respond) as server:
        config = ModelConfig(model="openai/gitswarm-scripted", api_base=server.url, api_key="k",
                             reply_timeout_s=30, backoff_base_s=0.01, backoff_cap_s=0.05,
                             tool_protocol=protocol)
        model = LiteLLMModel(config)
        # One worker keeps the script's order; verify=0: selection asks for no reviews here.
        cfg = SolveConfig(problems=SHIPPED, run=run, model=config.model, problem_ids=("tally",),
                          workers=1, verify=0, tool_protocol=protocol, **options)
        with anyio.fail_after(120):
            return await solve(cfg, problem_set, model, model), server


def tool_results(server) -> list[str]:
    """Every tool result the worker read, in order (the last request holds them all)."""
    last = [r for r in server.requests if r.get("messages")]
    found: list[str] = []
    for request in last:
        for m in request["messages"]:
            text = str(m.get("content") or "")
            if (m["role"] == "tool" or "<result call=" in text) and text not in found:
                found.append(text)
    return found


def test_a_scripted_run_builds_grades_and_shows_a_code_candidate(tmp_path: Path, monkeypatch) -> None:
    run, scratch = tmp_path / "run", tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))  # where the run's trees and references go
    result, server = anyio.run(lambda: scripted_run(run, budget=4, settle_nominations=2))
    assert result.charged == 4, result.reason
    assert list(scratch.iterdir()) == []  # the code trees and the references folder are gone
    offered = {t["function"]["name"] for r in server.requests for t in r.get("tools") or []}
    assert "shell" in offered
    first_prompt = next(str(m["content"]) for m in server.requests[0]["messages"] if m["role"] == "user")
    assert "probe the reference" in first_prompt and "`tally`" in first_prompt
    results = tool_results(server)
    assert any("2 3 14\nexit 0" in r for r in results)  # the probe reached the reference
    built = next((r for r in results if "tests/compare.sh" in r), "")
    assert built.count("same") == 4 and "staged under code/" in built, results
    assert any("Permission denied" in r or "No such file" in r for r in results)  # the copy failed

    graded = runner.invoke(app, ["grade", str(run), "--all"])
    assert graded.exit_code == 0, graded.output
    scores = GradeStore(Memory(run)).scores("tally")
    assert len(scores) == 2
    honest, cheat = sorted(scores.values(), reverse=True)
    assert 0 < honest < 1 and cheat == 0

    status = runner.invoke(app, ["status", str(run), "--json"])
    assert status.exit_code == 0, status.output
    problem = next(p for p in json.loads(status.output)["problems"] if p["id"] == "tally")
    assert problem["state"] == "selected" and problem["selected"] == "problems/tally/code/tally-py"
    shown = f"{honest:.2f} ({round(honest * 49)}/49 tests)"
    assert problem["grade"] == shown
    assert {c["path"]: c["grade"] for c in problem["candidates"]}["problems/tally/code/copy"] == "0.00 (0/49 tests)"

    report = runner.invoke(app, ["report", str(run), "-f", "md"])
    assert report.exit_code == 0, report.output
    row = next(line for line in report.output.splitlines() if line.startswith("| tally |"))
    assert "problems/tally/code/tally-py" in row and shown in row


def test_the_text_protocol_offers_and_runs_the_shell(tmp_path: Path) -> None:
    result, server = anyio.run(lambda: scripted_run(tmp_path / "run", "text", budget=1))
    assert result.charged == 1
    system = str(server.requests[0]["messages"][0]["content"])
    assert "### shell\n" in system and not server.requests[0].get("tools")
    assert any("2 3 14\nexit 0" in r for r in tool_results(server))
