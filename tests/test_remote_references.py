"""A remote worker and the reference executables of reproduce problems, through the real CLI
over a `file://` remote: without `--references` it never claims a reproduce problem and says
so; with a set that lacks one it is refused at start; with the run's set its shell runs the
reference. The first prompt promises the reference only to an episode that has it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from conftest import git
from test_remote_claims import TTL, Clock
from test_remote_claims import worker as claims_of

from gitswarm.engine.ledger import Ledger
from gitswarm.engine.references import ReferencesRefused, built_from
from gitswarm.memory.repo import Memory
from gitswarm.remote.daemon import bare
from gitswarm.remote.source import ClaimSource
from gitswarm.resources import render, resolve_set

MODEL = "openai/gitswarm-scripted"
SHOUT = "demo-shout"
TITLE = "Rebuild shout, a filter that upper-cases text"


def worker(url: str, api: str, name: str, folder: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gitswarm", "worker", url, "--name", name, "--model", MODEL,
                           "--api-base", api, "--dir", str(folder), "--json", *extra],
                          capture_output=True, text=True, timeout=240, env={**os.environ, "OPENAI_API_KEY": "x"})


def said(done: subprocess.CompletedProcess[str]) -> str:
    return " ".join(done.stderr.split())


def claimed_by(remote: Path, name: str) -> list[str]:
    """The problems of the claims worker `name` holds on the remote (while the run goes on)."""
    refs = git(remote, "for-each-ref", "--format=%(refname)", "refs/gitswarm/claims/").split()
    found = [json.loads(git(remote, "show", f"{ref}:claim.json")) for ref in refs]
    return [c["problem"] for c in found if c["worker"] == name]


def events(folder: Path) -> list[dict]:
    return [json.loads(line) for line in (folder / "gitswarm-events.jsonl").open()]


def coordinator(url: str, mirror: Path, api: str, budget: int) -> subprocess.Popen[str]:
    """The coordinator of a run of the demo's reproduce problem alone, with no worker of its own."""
    return subprocess.Popen([sys.executable, "-m", "gitswarm", "solve", str(resolve_set("demo")), "--run", url,
                             "--mirror", str(mirror), "--workers", "0", "--budget", str(budget), "--problem", SHOUT,
                             "--model", MODEL, "--api-base", api, "--no-tui"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "OPENAI_API_KEY": "x"})


def transcripts(folder: Path) -> str:
    """Every transcript of the worker's episodes, from its commits' notes or its transcripts book."""
    memory = Memory(folder)
    records = Ledger.load(memory).episodes.values()
    return "".join((memory.transcript(r.commit) if r.commit else memory.book_text(r.transcript)) or ""
                   for r in records)


def ended(coord: subprocess.Popen[str]) -> None:
    _, err = coord.communicate(timeout=120)
    assert coord.returncode == 0, err


@pytest.mark.slow  # two short runs of the demo's reproduce problem, four workers: about a minute and a half
def test_only_a_worker_given_the_set_runs_a_reproduce_problem(tmp_path: Path, model_server: str):
    remote = tmp_path / "run.git"
    bare(remote)
    git(remote, "symbolic-ref", "HEAD", "refs/heads/main")
    url, mirror = f"file://{remote}", tmp_path / "mirror"
    coord = coordinator(url, mirror, model_server, 1)
    try:
        bare_hands = worker(url, model_server, "bare", tmp_path / "bare", "--patience", "5")
        assert bare_hands.returncode == 0, bare_hands.stderr  # its patience ran out: the run's own end
        assert f"this worker runs no reproduce problem ({SHOUT})" in said(bare_hands)
        assert said(bare_hands).count(f"every open problem of the run ({SHOUT}) is a reproduce problem") == 1
        assert "--references SET" in said(bare_hands)
        kinds = [e["kind"] for e in events(tmp_path / "bare")]
        assert "episode_started" not in kinds and kinds.count("skipped_only") == 1
        assert claimed_by(remote, "bare") == [] and Ledger.load(Memory(tmp_path / "bare")).episodes == {}

        wrong = worker(url, model_server, "wrong", tmp_path / "wrong", "--references", str(resolve_set("answers")))
        assert wrong.returncode == 2, wrong.stderr
        assert f"the set has no reproduce problem {SHOUT}" in said(wrong)
        assert "Give the problem set the run's coordinator runs" in said(wrong) and "Traceback" not in wrong.stderr

        held = ("held", tmp_path / "held", "--references", "demo", "--workers", "1", "--patience", "60")
        done = worker(url, model_server, *held)  # the run's first episode: a note
        assert done.returncode == 0, done.stderr
        ended(coord)
        coord = coordinator(url, mirror, model_server, 2)  # resumed with one more episode: an attempt on the note
        done = worker(url, model_server, *held)
        assert done.returncode == 0, done.stderr
        ended(coord)
    finally:
        coord.kill()
        coord.wait()
    shown = transcripts(tmp_path / "held")
    assert "The reference executable, `shout`, is on the shell's PATH" in shown
    assert "HELLO, WORLD" in shown  # the attempt's probe: `printf 'hello, world\\n' | shout`
    assert "command not found" not in shown and "no reference executable" not in shown
    taken = [(r.process, r.problem) for r in Ledger.load(Memory(mirror)).episodes.values()]
    assert taken == [("held", SHOUT)] * 2


def test_a_worker_without_references_leaves_the_expired_claims_of_reproduce_problems(tmp_path: Path):
    """A dead worker's expired claims: one on the reproduce problem (first in line, as the
    scheduler's pick names it) and one on another problem; only the other one is taken over."""
    url, clock = bare(tmp_path / "remote.git").as_uri(), Clock()
    dead = claims_of(url, tmp_path, "dead", clock)
    on_shout, on_sum = dead.claim_next([SHOUT, "sum"], cap=100)
    clock.now += TTL + 1
    mine = claims_of(url, tmp_path, "mine", clock)
    source = ClaimSource(mine.remote, mine, None, None, {}, TTL, skip=frozenset({SHOUT}))
    assert [c.episode for c in source._take_expired(SHOUT)] == [on_sum.episode]
    assert source._take_expired(SHOUT) == []  # the reproduce problem's claim is left to a worker with references
    assert mine.read(on_shout.episode).worker == "dead"


def test_a_set_without_the_problem_or_whose_reference_does_not_build_is_refused(tmp_path: Path):
    limiter = anyio.CapacityLimiter(1)
    with pytest.raises(ReferencesRefused, match=f"its {SHOUT} is titled '{TITLE}', the run's 'Shout'"):
        anyio.run(built_from, resolve_set("demo"), {SHOUT: "Shout"}, limiter)
    with pytest.raises(ReferencesRefused, match="no such problem set"):
        anyio.run(built_from, tmp_path / "nowhere", {SHOUT: TITLE}, limiter)
    broken = tmp_path / "demo"
    shutil.copytree(resolve_set("demo"), broken)
    statement = broken / f"{SHOUT}.md"
    statement.write_text(statement.read_text().replace("cc -std=c99", "cc -std=c99 -DBROKEN -include nowhere.h"))
    with pytest.raises(ReferencesRefused) as refused:  # named as `problems check` names it, nothing claimed
        anyio.run(built_from, broken, {SHOUT: TITLE}, limiter)
    assert refused.value.problem == SHOUT
    assert f"{statement}:7: the reference does not build (exit 1" in str(refused.value)
    assert "gitswarm problems check" in str(refused.value)


def test_the_prompt_promises_the_reference_only_to_an_episode_that_has_it():
    has = render("code_work.md.j2", kind="reproduce", executable="shout", builds_on=True)
    lacks = render("code_work.md.j2", kind="reproduce", executable=None, builds_on=True)
    assert "`shout`, is on the shell's PATH" in has
    assert "PATH" not in lacks and "no reference executable" in lacks and "./executable" in lacks
