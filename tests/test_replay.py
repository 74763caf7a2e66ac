"""`gitswarm replay`: a run made by the real engine with the scripted solver behind the fake
server, an attempt in it that cites a right note, replayed with and without that note through
the real CLI; the arms' runs read back with git; the original run checked byte for byte; a
second invocation that runs nothing; the bad inputs; Fisher's exact test on fixed data."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from conftest import git
from typer.testing import CliRunner

from gitswarm.cli.main import app
from gitswarm.demo.solver import digest
from gitswarm.domain.contribution import Contribution
from gitswarm.experiment.replay_draws import FINISHED, DrawResult
from gitswarm.experiment.replay_tally import compare, fisher_exact, table, tally
from gitswarm.memory.repo import Memory
from gitswarm.problems.loader import load_set
from gitswarm.referee.grades import GradeStore

runner = CliRunner()
KEYS = {"q1": "17", "q2": "5"}
SURE = ["--model", "scripted-solver", "--scripted", "p=0", "--scripted", "boost=1", "--scripted", "check=1"]
"""The solver is wrong unless the memory it is shown holds a right attempt or note; then always right."""


def write_set(folder: Path, proof: bool = False) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for pid, key in KEYS.items():
        (folder / f"{pid}.md").write_text(f"---\nid: {pid}\ntitle: {pid}\nkind: answer\nsource: test\n"
                                          f"answer: '{key}'\n---\nFind it.\n")
    if proof:
        (folder / "pr.md").write_text("---\nid: pr\ntitle: pr\nkind: proof\nsource: test\n---\nProve it.\n")
    return folder


def contribute(memory: Memory, episode: str, kind: str, files: dict[str, str], cites: tuple[str, ...] = (),
               problem: str = "q1") -> str:
    """One contribution written through the memory as an episode writes it, then merged into main."""
    written = memory.contribute(Contribution(problem=problem, episode=episode, worker="w09", kind=kind,
                                             title=f"{kind} {episode}", files=files, parent=memory.main(),
                                             op=f"{episode}-final", informed_by=cites))
    memory.compose()
    return written.commit


def right(text: str = "Attempt") -> str:
    """An item whose first line (the overview's title) names the right answer, as the solver's do."""
    return f"# {text} {digest(KEYS['q1'])}: the answer is {KEYS['q1']}\n\nAnswer: {KEYS['q1']}\n"


def add_history(run: Path) -> dict[str, str]:
    """On q1: a right note, the attempt C that cites it, then an attempt citing nothing and a
    note citing the first note (after C, so C's start state holds the note alone)."""
    memory = Memory(run)
    note = contribute(memory, "x00001", "note", {"notes/lead.md": right("Lead")})
    attempt = contribute(memory, "x00002", "attempt", {"attempts/c.md": right()}, (note,))
    alone = contribute(memory, "x00003", "attempt", {"attempts/d.md": right()})
    later = contribute(memory, "x00004", "note", {"notes/e.md": "More on the lead.\n"}, (note,))
    other = contribute(memory, "x00005", "attempt", {"attempts/o.md": "Answer: 5\n"}, (note,), problem="q2")
    return {"note": note, "attempt": attempt, "alone": alone, "later": later, "other": other}


def snapshot(folder: Path) -> dict[str, str]:
    """Every file of a folder, by its digest."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def engine_run(tmp_path: Path) -> Path:
    """A run the engine made with the scripted solver (two wrong attempts, its ledger, ops and
    transcripts; graded, so it has grades too), and then C on top."""
    write_set(tmp_path / "set")
    spec = tmp_path / "spec.toml"
    spec.write_text('problems = "set"\nseeds = [0]\n[budget]\nepisodes = 2\n[solve]\nmodel = "scripted-solver"\n'
                    "workers = 1\nverify = 0\n[scripted]\np = 0.0\ncheck = 1.0\n[arms]\nsingle = {}\n")
    made = runner.invoke(app, ["experiment", str(spec), "--no-tui", "--out", str(tmp_path / "exp")])
    assert made.exit_code == 0, made.output
    run = tmp_path / "exp" / "runs" / "single-s0"
    assert runner.invoke(app, ["grade", str(run), "--all"]).exit_code in (0, 1)
    return run


def replay(run: Path, candidate: str, out: Path, *extra: str, problem: str = "q1"):
    return runner.invoke(app, ["replay", str(run), "--problem", problem, "--candidate", candidate,
                               "--out", str(out), *extra])


def first_parents(run: Path) -> list[str]:
    return git(run, "rev-list", "--first-parent", "main").split()


def test_replay_runs_both_arms_from_the_start_state_and_leaves_the_run_alone(engine_run: Path, tmp_path: Path):
    ids = add_history(engine_run)
    refs = set(git(engine_run, "for-each-ref", "--format=%(refname)").split())
    assert {"refs/gitswarm/ledger", "refs/gitswarm/grades", "refs/notes/transcripts",
            "refs/gitswarm/ops/e00001-final"} <= refs
    before, refs_before = snapshot(engine_run), git(engine_run, "for-each-ref")
    start = git(engine_run, "rev-parse", f"{ids['attempt']}^1").strip()
    out = tmp_path / "replay"

    result = replay(engine_run, ids["attempt"][:12], out, "-k", "4", "--json", *SURE)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert snapshot(engine_run) == before and git(engine_run, "for-each-ref") == refs_before
    assert (data["candidate"], data["start"], data["cited"], data["removed"]) == (
        ids["attempt"], start, [ids["note"]], ["notes/lead.md"])
    arms = {a["arm"]: a for a in data["arms"]}
    assert (arms["with-memory"]["episodes"], arms["with-memory"]["accepted"]) == (4, 4)
    assert (arms["without-memory"]["episodes"], arms["without-memory"]["accepted"]) == (4, 0)
    assert data["comparison"]["fisher_p"] == pytest.approx(2 / 70) and not data["comparison"]["within_noise"]
    assert "unlikely to be noise" in data["comparison"]["sentence"] and "not evidence" in data["comparison"]["sentence"]
    assert "With 4 episodes an arm only a large difference can show" in data["comparison"]["sentence"]
    assert arms["with-memory"]["did"] == arms["without-memory"]["did"] == {"attempt": 4}  # like with like
    assert "Among the episodes that wrote a candidate, 4 of 4 were accepted (100%) with it and 0 of 4 (0%) " \
        "without." in data["comparison"]["sentence"]
    assert "differ in what their episodes chose to do" not in data["comparison"]["sentence"]

    for arm in ("with-memory", "without-memory"):
        graded = 0
        for n in range(1, 5):
            run = out / arm / f"episode-{n:02d}"
            names = set(git(run, "for-each-ref", "--format=%(refname)").split())
            assert not any(name.startswith(("refs/heads/swarm/", "refs/gitswarm/ops/x")) for name in names)
            assert names >= {"refs/heads/main", "refs/gitswarm/meta", "refs/gitswarm/ops/e00001-final"}
            episode = git(run, "rev-parse", "refs/gitswarm/ops/e00001-final").strip()
            first = git(run, "rev-parse", f"{episode}^1").strip()
            chain, original = first_parents(run), first_parents(engine_run)
            assert chain[chain.index(start):] == original[original.index(start):]  # main's first commits
            shown = git(run, "notes", "--ref=transcripts", "show", episode)  # what the episode was shown
            assert ("notes/lead.md" in shown) == (arm == "with-memory")
            if arm == "with-memory":
                assert first == start  # the episode started from C's start state itself
            else:
                assert git(run, "rev-parse", f"{first}^1").strip() == start  # one commit on top of it
                tree = git(run, "ls-tree", "-r", "--name-only", first).split()
                assert "problems/q1/notes/lead.md" not in tree and "problems/q1/attempts/d.md" not in tree
                assert "problems/q1/notes/lead.md" in git(run, "ls-tree", "-r", "--name-only", start).split()
                assert "Gitswarm-Deleted: notes/lead.md" in git(run, "log", "-1", "--format=%B", first)
            memory = Memory(run)
            assert json.loads(git(run, "show", "refs/gitswarm/meta:run.json"))["replay"]["arm"] == arm
            scores = [g.score for g in GradeStore(memory).for_candidate("q1", episode)]
            graded += scores == [1.0]
            assert scores in ([1.0], [0.0])
        assert graded == arms[arm]["accepted"]  # the counts are the arms' graded attempts

    again = replay(engine_run, ids["attempt"], out, "-k", "4", *SURE)
    assert again.exit_code == 0, again.output
    assert "started" not in again.output and again.output.count("(not run again)") == 8
    assert "with-memory     4         4         4         1.00" in again.output
    for arm in ("with-memory", "without-memory"):
        log = (out / arm / "episode-01" / "gitswarm-events.jsonl").read_text().splitlines()
        assert sum(json.loads(line)["kind"] == "run_started" for line in log) == 1
    assert snapshot(engine_run) == before

    changed = replay(engine_run, ids["attempt"], out, "-k", "4", "--seed", "3", *SURE)
    assert changed.exit_code == 2 and "settings.seed: 0 -> 3" in changed.output


@pytest.fixture
def made_run(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A run written through the memory alone (no engine): enough for the inputs' checks."""
    run = tmp_path / "run"
    Memory.create(run, load_set(write_set(tmp_path / "set", proof=True)), run_id="made")
    ids = add_history(run)
    memory = Memory(run)
    lemma = contribute(memory, "x00006", "note", {"notes/pr.md": "Even and odd.\n"}, problem="pr")
    ids["proof"] = contribute(memory, "x00007", "attempt", {"attempts/p.md": "A proof.\n"}, (lemma,), problem="pr")
    return run, ids


@pytest.mark.parametrize(("which", "problem", "extra", "said"), [
    ("unknown", "q1", SURE, "no commit 'deadbeef00' in the run"),
    ("other", "q1", SURE, "is a commit of problem q2, not of q1"),
    ("later", "q1", SURE, "is a note, not an attempt"),
    ("alone", "q1", SURE, "cites nothing: there is no inherited memory to remove"),
    ("attempt", "q9", SURE, "no problem 'q9' in the run"),
    ("proof", "pr", SURE, "pr is a proof problem: its attempts cannot be judged without a referee model"),
    ("attempt", "q1", ["--model", "scripted-solver", "--scripted", "p=2"], "--scripted: p:"),
    ("attempt", "q1", ["--model", "openai/gpt-5.5", "--scripted", "p=0.2"], "it goes with --model scripted-solver"),
])
def test_bad_input_is_one_paragraph_and_writes_nothing(made_run, tmp_path: Path, which: str, problem: str,
                                                       extra: list[str], said: str):
    run, ids = made_run
    before = snapshot(run)
    out = tmp_path / "out"
    result = replay(run, ids.get(which, "deadbeef00"), out, *extra, problem=problem)
    assert result.exit_code == 2, result.output
    assert said in result.output and result.output.startswith("gitswarm: ") and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1
    assert not out.exists() and snapshot(run) == before


def test_a_config_files_verify_that_is_no_number_is_one_paragraph(made_run, tmp_path: Path, monkeypatch):
    """The draws' worker count is read from verify: a word there was a ValueError's traceback."""
    run, ids = made_run
    (tmp_path / "gitswarm.toml").write_text('[solve]\nverify = "two"\n')
    monkeypatch.setenv("GITSWARM_CONFIG", str(tmp_path / "gitswarm.toml"))
    result = replay(run, ids["attempt"], tmp_path / "out", *SURE)
    assert result.exit_code == 2, result.output
    assert "verify" in result.output and result.output.startswith("gitswarm: ") and "Traceback" not in result.output


def test_fisher_exact_on_fixed_tables():
    assert fisher_exact(4, 4, 0, 4) == pytest.approx(2 / 70)
    assert fisher_exact(3, 4, 1, 4) == pytest.approx(0.4857142857)
    assert fisher_exact(2, 4, 2, 4) == pytest.approx(1.0)
    assert fisher_exact(7, 10, 2, 10) == pytest.approx(2 * (5940 + 495 + 11) / 184756)  # by hand
    assert fisher_exact(0, 0, 1, 3) == 1.0


def test_a_change_of_next_action_is_not_read_as_a_change_of_quality():
    """What a demo replay once reported as the memory's effect on quality: every episode with the
    memory wrote an attempt (6 of 10 accepted), every one without it reviewed an older attempt
    instead. The sentence says what the test measured, and that the arms differ in what their
    episodes chose to do, not in the quality of their attempts."""
    with_ = [DrawResult("with-memory", n, f"w{n}", FINISHED, "settled", 1, ["attempts/a.md"],
                        [1.0 if n <= 6 else 0.0], [], ["attempt"]) for n in range(1, 11)]
    without = [DrawResult("without-memory", n, f"o{n}", FINISHED, "settled", 1, [], [], [], ["review"])
               for n in range(1, 11)]
    counted = tally(with_ + without)
    assert counted["with-memory"].did == {"attempt": 10} and counted["without-memory"].did == {"review": 10}
    assert counted["with-memory"].rate_of_attempts == 0.6 and counted["without-memory"].rate_of_attempts is None
    sentence = compare(counted, with_ + without, "c0ffee" * 7)["sentence"]
    assert "unlikely to be noise" in sentence  # the rates do differ: 6 of 10 against 0 of 10
    assert "whatever it chose to do (with c0ffeec0ff cited: 10 attempt; without: 10 review)" in sentence
    assert "No episode without it wrote a candidate, so the quality of the arms' attempts cannot be compared" \
        in sentence
    assert "The arms differ in what their episodes chose to do (10 of 10 wrote a candidate with it, 0 of 10 " \
        "without): the difference in rate may be a change of next action rather than of the attempts' quality" \
        in sentence
    assert "OF ATTEMPTS" in table(counted) and "10 review" in table(counted)
