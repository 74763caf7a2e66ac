"""`gitswarm export` on a real demo run made by the real CLI (`gitswarm demo`, offline: the
scripted model behind the fake server, graded by the scripted judge): every chat record is
valid for the layout, the steps are the ledger's calls, and every label is recomputed here
with the git CLI alone (`git log` trailers, `git show` of the ledger, SOLUTION.md and grades)."""

from __future__ import annotations

import json
import re
from collections import defaultdict
from functools import cache
from pathlib import Path

import pytest
from conftest import git
from typer.testing import CliRunner

from gitswarm.cli.main import app

runner = CliRunner()
SEP = "\x1f"
FIELDS = ("Episode", "Worker", "Problem", "Kind", "Informed-By", "Model", "Reviews", "Verdict", "Candidate")


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = tmp_path_factory.mktemp("export") / "demo"
    result = runner.invoke(app, ["demo", "--run", str(where), "--no-tui"])
    assert result.exit_code == 0, result.output
    return where


def export(run: Path | str, tmp: Path, *options: str) -> list[dict]:
    out = tmp / "out.jsonl"
    result = runner.invoke(app, ["export", str(run), "--out", str(out), *options])
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]


def valid_chat(record: dict) -> None:
    """The chat layout, checked here without the exporter's own checker: system then user
    first, an assistant after a user or tool turn, every tool call answered by a tool turn
    with its id before anything else, no answer to no call, tool schemas with tool calls."""
    messages = record["messages"]
    assert messages and [m["role"] for m in messages[:2]] == ["system", "user"]
    waiting: list[str] = []
    for before, message in zip([None, *messages], messages, strict=False):
        if message["role"] == "tool":
            assert message["tool_call_id"] in waiting, message
            waiting.remove(message["tool_call_id"])
            continue
        assert not waiting, f"{message['role']} before the answers to {waiting}"
        if message["role"] == "assistant":
            assert before["role"] in ("user", "tool")
            calls = message.get("tool_calls") or []
            assert all(isinstance(c["function"]["arguments"], str) for c in calls)
            waiting = [c["id"] for c in calls]
            assert len(set(waiting)) == len(waiting) and all(waiting)
            assert not calls or {c["function"]["name"] for c in calls} <= {
                t["function"]["name"] for t in record["tools"]}
    assert not waiting


def test_every_chat_record_is_valid_and_every_call_is_a_step(run: Path, tmp_path: Path):
    chat = export(run, tmp_path)
    episodes = ledger(run)
    assert [r["labels"]["episode"] for r in chat] == sorted(episodes)
    for record in chat:
        valid_chat(record)
        assert record["tools"] and record["labels"]["source"] in ("conversation", "transcript")
        assert record["labels"]["lossless"] == (record["labels"]["source"] == "conversation")
    steps = export(run, tmp_path, "--format", "steps", "--credit", "ancestry+reviews")
    by_episode = defaultdict(list)
    for step in steps:
        by_episode[step["episode"]].append(step)
    for episode, found in by_episode.items():
        assert [s["step"] for s in found] == list(range(1, len(found) + 1))
        assert len(found) == episodes[episode]["calls"]  # no call failed in the demo
        credit = found[0]["labels"]["credit"]
        assert [s["reward"] for s in found] == [0.0] * (len(found) - 1) + [credit]
        assert all(s["return"] == credit and s["reply"]["role"] == "assistant" for s in found)
        assert all(s["context"][-1]["role"] in ("user", "tool") for s in found)


@pytest.mark.parametrize("layout", ["chat", "steps"])
def test_hugging_face_datasets_loads_the_records(run: Path, tmp_path: Path, layout: str):
    datasets = pytest.importorskip("datasets")
    records = export(run, tmp_path, "--format", layout)
    loaded = datasets.load_dataset("json", data_files=str(tmp_path / "out.jsonl"), split="train")
    assert len(loaded) == len(records)


def test_every_label_is_recomputed_with_git_alone(run: Path, tmp_path: Path):
    chat = {r["labels"]["episode"]: r["labels"] for r in export(run, tmp_path)}
    episodes, commits = ledger(run), history(run)
    solutions, grades = selected(run), graded(run)
    ancestry = {c for s in solutions.values() for c in closure(commits, s)}
    credit = {c: v for p, s in solutions.items() for c, v in shares(commits, s, grades.get(s)).items()}
    assert credit, "the demo's selected solutions are graded, so some commits earn credit"
    for episode, record in episodes.items():
        labels, commit = chat[episode], record["commit"] or None
        trailers = commits.get(commit, {})
        reviews = [c for c, t in commits.items() if t["Kind"] == "review" and t["Reviews"] == commit]
        solution = solutions.get(record["problem"])
        assert (labels["problem"], labels["worker"], labels["kind"]) == (
            record["problem"], record["worker"], kind_of(run, record["problem"]))
        assert labels["outcome"] == {"contribute": "contributed", "nominate": "nominated", "abstain": "abstained",
                                     "failed": "failed"}[record["status"]]
        assert labels["failure"] == (record["failure"] or None)
        if commit:
            assert labels["model"] == trailers["Model"]
        assert labels["contribution"] == (commit and {"kind": trailers["Kind"], "commit": commit,
                                                      "subject": trailers["subject"]})
        assert labels["cites"] == cites(trailers)
        assert sorted((r["episode"], r["verdict"]) for r in labels["reviews_received"]) == sorted(
            (commits[c]["Episode"], commits[c]["Verdict"]) for c in reviews)
        assert labels["nominations"] == sum(t["Kind"] == "nomination" and t["Candidate"] == commit
                                            for t in commits.values())
        assert labels["built_on"] == sum(commit in cites(t) for c, t in commits.items() if c != commit)
        assert labels["selected"] == (commit is not None and commit == solution)
        assert labels["in_ancestry"] == (commit in ancestry)
        assert labels["grade"]["fraction"] == grades[solution]
        assert labels["credit"] == pytest.approx(credit.get(commit, 0.0))
        if trailers.get("Kind") in ("attempt", "code"):
            assert labels["verified"] == verified(commits, commit, reviews)
    assert any(chat[e]["in_ancestry"] and not chat[e]["selected"] for e in chat)


def test_filters_and_a_folder_that_is_not_a_run(run: Path, tmp_path: Path):
    every = export(run, tmp_path)
    only = export(run, tmp_path, "--ancestry-only", "--problem", "demo-odd-sum", "--min-grade", "1")
    expected = {r["labels"]["episode"] for r in every
                if r["labels"]["in_ancestry"] and r["labels"]["problem"] == "demo-odd-sum"}
    assert only and {r["labels"]["episode"] for r in only} == expected
    remote = export(f"file://{run}", tmp_path, "--problem", "demo-odd-sum")  # a URL, as `status` takes it
    assert [r["labels"] for r in remote] == [r["labels"] for r in every if r["labels"]["problem"] == "demo-odd-sum"]
    abstained = export(run, tmp_path, "--outcome", "abstained")
    assert all(r["labels"]["outcome"] == "abstained" for r in abstained)
    for args in (["export", str(tmp_path)], ["export", str(run), "--outcome", "won"],
                 ["export", str(run), "--problem", "nope", "--out", str(tmp_path / "never.jsonl")]):
        result = runner.invoke(app, args)
        assert result.exit_code == 2, result.output
        assert result.stderr.startswith("gitswarm: ") and "Traceback" not in result.output
    assert not (tmp_path / "never.jsonl").exists()


# -- the labels again, from the git CLI ---------------------------------------------------------

def ledger(run: Path) -> dict[str, dict]:
    paths = git(run, "ls-tree", "-r", "--name-only", "refs/gitswarm/ledger", "episodes").split()
    records = [json.loads(git(run, "show", f"refs/gitswarm/ledger:{p}")) for p in paths]
    return {r["episode"]: r for r in records if r["episode"] != "merger"}


def history(run: Path) -> dict[str, dict]:
    """Every commit of main and the branches: its subject and `Gitswarm-*` trailers as git reads them."""
    keys = "".join(f"{SEP}%(trailers:key=Gitswarm-{k},valueonly,separator=%x2C)" for k in FIELDS)
    found = {}
    for line in git(run, "log", "--branches", f"--format=%H{SEP}%s{keys}").splitlines():
        commit, subject, *values = line.split(SEP)
        found[commit] = {"subject": subject, **dict(zip(FIELDS, values, strict=True))}
    return found


def cites(trailers: dict) -> list[str]:
    return [c for c in re.split(r"[,\s]+", trailers.get("Informed-By", "")) if c]


def selected(run: Path) -> dict[str, str]:
    found = {}
    for problem in git(run, "ls-tree", "--name-only", "main", "problems/").split():
        text = git(run, "show", f"main:{problem}/SOLUTION.md") if "SOLUTION.md" in git(
            run, "ls-tree", "--name-only", f"main:{problem}") else ""
        if match := re.search(r"^candidate: (\w+)$", text, re.M):
            found[problem.removeprefix("problems/")] = match.group(1)
    return found


def graded(run: Path) -> dict[str, float]:
    found = {}
    for path in git(run, "ls-tree", "-r", "--name-only", "refs/gitswarm/grades").split():
        grade = json.loads(git(run, "show", f"refs/gitswarm/grades:{path}"))
        found[grade["candidate"]] = grade["score"] / grade["max"]
    return found


@cache
def _statement(run: Path, problem: str) -> str:
    return git(run, "show", f"main:problems/{problem}/statement.md")


def kind_of(run: Path, problem: str) -> str:
    return re.search(r"^- kind:\s*(\w+)", _statement(run, problem), re.M).group(1)


def closure(commits: dict[str, dict], start: str) -> set[str]:
    seen, todo = {start}, [start]
    while todo:
        for cited in cites(commits.get(todo.pop(), {})):
            if cited not in seen:
                seen.add(cited)
                todo.append(cited)
    return seen


def shares(commits: dict[str, dict], solution: str, grade: float | None) -> dict[str, float]:
    """The `ancestry` rule by its definition: the sum over every citation path from the
    solution of grade * product of 0.5 / (citations of each commit passed)."""
    found: dict[str, float] = defaultdict(float)

    def walk(commit: str, amount: float) -> None:
        found[commit] += amount
        cited = [c for c in cites(commits.get(commit, {})) if c != commit]
        for c in cited:
            walk(c, amount * 0.5 / len(cited))

    if grade is not None:
        walk(solution, grade)
    return found


def verified(commits: dict[str, dict], candidate: str, reviews: list[str]) -> bool:
    """Two passes from other workers than its author (each one's latest review) and no critical."""
    author = commits[candidate]["Worker"]
    latest = {}
    for review in reversed(reviews):  # git log lists newest first
        latest[commits[review]["Worker"]] = commits[review]["Verdict"]
    verdicts = [v for w, v in latest.items() if w != author]
    return verdicts.count("pass") >= 2 and "critical" not in verdicts


def test_the_docs_chat_sample_is_shaped_as_the_export(run: Path, tmp_path: Path):
    """docs/exports.md's `chat` record (shortened) has the export's keys and values' types: an
    assistant turn of tool calls carries "" as its text, and its call ids have the export's form."""
    page = (Path(__file__).resolve().parents[1] / "docs" / "exports.md").read_text(encoding="utf-8")
    sample = json.loads(re.search(r"```json\n(.*?)```", page, flags=re.S)[1])
    real = export(run, tmp_path)[0]
    assert set(sample) == set(real) and set(sample["labels"]) <= set(real["labels"])
    for message in (m for m in sample["messages"] if isinstance(m, dict)):
        twin = next(m for m in real["messages"] if m["role"] == message["role"] and
                    ("tool_calls" in m) == ("tool_calls" in message))
        assert set(message) == set(twin) and type(message["content"]) is type(twin["content"])
    for record in (sample, real):  # call ids of one form (their numbers are the fake server's), answered by id
        turns = [m for m in record["messages"] if isinstance(m, dict)]
        call = next(m for m in turns if m.get("tool_calls"))["tool_calls"][0]["id"]
        assert re.fullmatch(r"call_\d+_\d+", call) and any(m.get("tool_call_id") == call for m in turns)


def test_status_columns_line_up_with_the_demos_grades(run: Path):
    """(Here for this module's run: the demo, graded.) Each row's SELECTED starts under its heading,
    whatever the width of the grades ("1.00 (10/10 tests)")."""
    table = runner.invoke(app, ["status", str(run)]).output.splitlines()
    header = next(i for i, line in enumerate(table) if line.startswith("PROBLEM"))
    column = table[header].index("SELECTED")
    rows = [line for line in table[header + 1:] if line.strip()]
    assert rows and all(line[column:].startswith("problems/") for line in rows), "\n".join(table)
    assert any("tests)" in line for line in rows)


def test_export_writes_its_file_with_o_as_report_does(run: Path, tmp_path: Path):
    """-o/--output FILE is how report, experiment --report and export write a file (--out still works)."""
    for option in ("-o", "--output", "--out"):
        out = tmp_path / f"{option.strip('-')}.jsonl"
        result = runner.invoke(app, ["export", str(run), option, str(out)])
        assert result.exit_code == 0 and out.read_text().count("\n") >= 1, result.output
