"""A person in the swarm and a run that inherits a run, through the real CLI: `gitswarm note` on
a finished run and on a live one (merged while it goes on, listed to the next episodes marked
"by a person", cited by them), `gitswarm review` under `--person-reviews advice` and `counts`,
`gitswarm solve --from`, and bad input refused with exit 2 and nothing written."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest
from conftest import brain_server, fsck_clean, git
from demo_run import demo_run, run_demo
from typer.testing import CliRunner

from gitswarm.cli.main import app
from gitswarm.domain.index import MemoryIndex
from gitswarm.engine.ledger import Ledger
from gitswarm.memory.repo import Memory
from gitswarm.resources import resolve_set

runner = CliRunner()
ADA = "Ada Lovelace <ada@example.org>"


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return demo_run(tmp_path_factory)


def cli(*args: str, code: int = 0) -> str:
    result = runner.invoke(app, [str(a) for a in args], env={"OPENAI_API_KEY": "not-secret"})
    assert result.exit_code == code, result.output
    return result.output


def written(run: Path) -> str:
    """Every ref of the run and what it points at: unchanged means nothing was written."""
    return git(run, "for-each-ref", "--format=%(refname) %(objectname)")


def index_of(run: Path) -> MemoryIndex:
    index = MemoryIndex()
    Memory(run).snapshot().catch_up(index)
    return index


def text_file(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text)
    return path


def selected(run: Path, problem: str) -> dict:
    return json.loads(cli("show", run, problem, "--json"))


def test_a_note_on_a_finished_run_is_merged_authored_marked_and_cited_as_given(demo: Path, tmp_path: Path):
    run = tmp_path / "run"
    shutil.copytree(demo, run)
    cited = git(run, "log", "-1", "--format=%H", "main").strip()
    hint = text_file(tmp_path, "hint.md", "# Induct on n\n\nThe sum of the first n odd numbers is n^2.\n")
    said = cli("note", run, "demo-odd-sum", hint, "--title", "Induct on n", "--cites", cited[:10], "--author", ADA)
    assert "merged into main" in said
    commit = git(run, "log", "-1", "--format=%H", "main^2").strip()  # the merge's second parent: the note
    assert git(run, "log", "-1", "--format=%an <%ae>", commit).strip() == ADA
    trailers = git(run, "log", "-1", "--format=%(trailers)", commit)
    assert "Gitswarm-Person: Ada Lovelace" in trailers and "Gitswarm-Kind: note" in trailers
    assert f"Gitswarm-Informed-By: {cited}" in trailers
    assert git(run, "show", "main:problems/demo-odd-sum/notes/induct-on-n.md").startswith("# Induct on n")
    index = index_of(run)
    assert index.problems["demo-odd-sum"].items["notes/induct-on-n.md"] == commit
    assert index.mark(commit) == "by a person" and index.mark(cited) == ""
    again = cli("note", run, "demo-odd-sum", hint, "--kind", "lemma", "--author", ADA)  # the title: its first line
    assert "lemma" in again and git(run, "show", "main:problems/demo-odd-sum/lemmas/induct-on-n.md")
    assert git(run, "branch", "--list", "swarm/*").strip() == "" and fsck_clean(run)


@pytest.mark.parametrize("case", ["problem", "candidate", "not a run", "from another set"])
def test_bad_input_is_a_clear_error_exit_2_and_nothing_written(case: str, demo: Path, tmp_path: Path,
                                                              memory: Memory):
    run = tmp_path / "copy"
    shutil.copytree(demo, run)
    text = text_file(tmp_path, "text.md", "Step 3 does not follow.\n")
    before = written(run)
    if case == "problem":
        said = cli("note", run, "demo-odd-summ", text, "--author", ADA, code=2)
        assert "has no problem 'demo-odd-summ'" in said and "demo-odd-sum" in said
    elif case == "candidate":
        said = cli("review", run, "demo-odd-sum", "attempts/nothing.md", text, "--verdict", "critical",
                   "--author", ADA, code=2)
        assert "no candidate 'attempts/nothing.md'" in said and "attempts/revision-" in said
    elif case == "not a run":
        said = cli("note", tmp_path, "demo-odd-sum", text, "--author", ADA, code=2)
        assert "is not a gitswarm run" in said
    else:
        new = tmp_path / "new"
        said = cli("solve", resolve_set("demo"), "--run", new, "--from", memory.path, "--model", "openai/x",
                   "--api-base", "http://127.0.0.1:9/v1", "--workers", "3", "--no-tui", code=2)
        assert "--from" in said and "not 'demo'" in said and not new.exists()
    assert written(run) == before


async def _demo_odd_sum(run: Path, mode: str) -> None:
    await run_demo(run, workers=3, problem_ids=("demo-odd-sum",), person_reviews=mode)


@pytest.mark.slow  # two small runs, each resumed
@pytest.mark.parametrize("mode", ["advice", "counts"])
def test_a_persons_critical_review_blocks_the_candidate_under_counts_only(mode: str, tmp_path: Path):
    run = tmp_path / "run"
    anyio.run(_demo_odd_sum, run, mode)
    first = selected(run, "demo-odd-sum")
    assert first["verification"] == "verified"
    review = text_file(tmp_path, "review.md", "## Verdict\n\nThe induction step assumes what it proves.\n")
    cli("review", run, "demo-odd-sum", first["selected"], review, "--verdict", "critical", "--author", ADA)
    anyio.run(_demo_odd_sum, run, mode)  # the same run again: it resumes, and selects under its rule
    after = selected(run, "demo-odd-sum")
    blocked = json.loads(cli("show", run, "demo-odd-sum", "--candidate", first["selected_commit"], "--json"))
    [person] = [r for r in blocked["trail"] if r["person"]]
    shown = cli("show", run, "demo-odd-sum", "--candidate", first["selected_commit"])
    if mode == "advice":
        assert after["selected_commit"] == first["selected_commit"] and after["verification"] == "verified"
        assert not person["counted"] and "(a person's review: advice, not counted)" in shown
    else:
        assert after["selected_commit"] != first["selected_commit"]
        assert person["counted"] and blocked["reviews"]["critical"] >= 1 and not blocked["verified"]
        assert "(a person's review)" in shown
    assert "(a person)" in cli("report", run)


def _events(run: Path) -> list[dict]:
    path = run / "gitswarm-events.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _transcripts(run: Path) -> list[str]:
    listed = git(run, "notes", "--ref=transcripts", "list").split()
    return [git(run, "notes", "--ref=transcripts", "show", commit) for commit in listed[1::2]]


@pytest.mark.slow  # a real run in its own process, the scripted model at 0.3 s a call
def test_a_note_added_to_a_live_run_is_merged_while_it_runs_listed_marked_and_cited(tmp_path: Path):
    served = brain_server("0.3")
    api = next(served)
    run = tmp_path / "run"
    solve = subprocess.Popen([sys.executable, "-m", "gitswarm", "solve", str(resolve_set("demo")), "--run", str(run),
                              "--model", "openai/gitswarm-scripted", "--api-base", api, "--workers", "3",
                              "--no-tui"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env={**os.environ, "OPENAI_API_KEY": "not-secret"})
    try:
        deadline = time.monotonic() + 60
        while sum(e["kind"] == "episode_started" for e in _events(run)) < 2:
            assert time.monotonic() < deadline and solve.poll() is None
            time.sleep(0.2)
        hint = text_file(tmp_path, "hint.md", "# Pair 2k-1 with its neighbour\n\nA hint from a person.\n")
        said = cli("note", run, "demo-odd-sum", hint, "--author", ADA)
        assert "a solve is running on this run" in said
        _, err = solve.communicate(timeout=180)
        assert solve.returncode == 0, err
    finally:
        if solve.poll() is None:
            solve.kill()
        served.close()
    note = git(run, "log", "--all", "--format=%H", "--author=Ada Lovelace").split()[0]
    git(run, "merge-base", "--is-ancestor", note, "main")
    events = _events(run)
    kinds = [e["kind"] for e in events]
    merged = next(i for i, e in enumerate(events) if e["kind"] == "merged" and
                  any(ep.startswith("person-") for ep in e["data"]["episodes"]))
    assert "episode_started" in kinds[merged:] and kinds.index("run_stopped") > merged  # the run went on
    rows = [line for text in _transcripts(run) for line in text.splitlines() if note[:12] in line and "|" in line]
    assert rows and all("(by a person)" in row for row in rows)
    cited = git(run, "log", "main", "--format=%(trailers:key=Gitswarm-Informed-By,valueonly)").split()
    assert note in cited  # a later attempt built on it, and plain git shows the citation
    assert git(run, "branch", "--list", "swarm/*").strip() == "" and fsck_clean(run)


@pytest.mark.slow  # a second run of the demo set, from the first
def test_a_run_from_a_run_inherits_its_memory_and_spends_its_own_budget(demo: Path, tmp_path: Path,
                                                                       model_server: str):
    new = tmp_path / "stronger"
    old_main = git(demo, "rev-parse", "main").strip()
    old_id = Memory(demo).run_id
    cli("solve", resolve_set("demo"), "--run", new, "--from", demo, "--model", "openai/gitswarm-stronger",
        "--api-base", model_server, "--workers", "3", "--budget", "6", "--no-tui")
    git(new, "merge-base", "--is-ancestor", old_main, "main")  # git log and citations reach the old work
    ledger = Ledger.load(Memory(new))
    assert ledger.charged == 6 and Ledger.load(Memory(demo)).charged > 6  # its own budget, from zero
    assert all(r.model == "openai/gitswarm-stronger" for k, r in ledger.episodes.items() if k != "merger")
    index = index_of(new)
    assert Memory(new).run_id != old_id  # even when made within the same minute
    assert index.inherited and set(index.inherited.values()) == {old_id}
    rows = [line for text in _transcripts(new) for line in text.splitlines() if f" of {old_id} (inherited)" in line]
    assert rows  # listed to its workers, marked, its author named with its run
    assert index.built_on  # and cited by them
    report = cli("report", new)
    assert f"Inherited from run {old_id}" in report and "built on" in report
    assert "SOLUTION.md" not in git(new, "ls-tree", "-r", "--name-only", Memory(new).root())  # the old selection stays
    elsewhere = tmp_path / "elsewhere"  # the same command again resumes; another origin is refused
    shutil.copytree(demo, elsewhere)
    before = written(new)
    said = cli("solve", resolve_set("demo"), "--run", new, "--from", elsewhere, "--model", "openai/gitswarm-stronger",
               "--api-base", model_server, "--workers", "3", "--budget", "6", "--no-tui", code=2)
    assert "did not begin from" in said and written(new) == before


@pytest.mark.slow  # a coordinator and a worker, each a process of its own
def test_a_note_added_to_a_live_remote_run_is_checked_merged_and_listed(tmp_path: Path, model_server: str):
    from remote_fixture import fsck_served, served
    from test_remote_run import coordinator, finish, server_repo, worker

    url = f"file://{server_repo(tmp_path / 'run.git')}"
    mirror = tmp_path / "mirror"
    # one problem, no reproduce problem: a worker here has no references, and would leave it open
    coord = coordinator(url, mirror, model_server, "--problem", "demo-odd-sum")
    one = worker(url, tmp_path / "a", "a", model_server, slots=3)
    try:
        deadline = time.monotonic() + 60
        while len(git(tmp_path / "run.git", "for-each-ref", "refs/gitswarm/claims/").split("\n")) < 3:
            assert time.monotonic() < deadline and coord.poll() is None  # two episodes claimed: the run goes
            time.sleep(0.2)
        hint = text_file(tmp_path, "hint.md", "# Pair 2k-1 with its neighbour\n\nA hint from a person.\n")
        said = cli("note", url, "demo-odd-sum", hint, "--author", ADA)
        assert "pushed to" in said
        code, _, err = finish(coord)
        assert code == 0, err
        assert finish(one)[0] == 0
    finally:
        for process in (coord, one):
            if process.poll() is None:
                process.kill()
    remote = served(url, tmp_path)
    note = git(remote, "log", "--all", "--format=%H", "--author=Ada Lovelace").split()[0]
    git(remote, "merge-base", "--is-ancestor", note, "main")  # checked, adopted, merged, published
    assert "Gitswarm-Person: Ada Lovelace" in git(remote, "log", "-1", "--format=%(trailers)", note)
    rows = [line for text in _transcripts(mirror) for line in text.splitlines() if note[:12] in line and "|" in line]
    assert rows and all("(by a person)" in row for row in rows)
    assert note in git(remote, "log", "main", "--format=%(trailers:key=Gitswarm-Informed-By,valueonly)").split()
    assert fsck_served(remote)
