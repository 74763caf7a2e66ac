"""The commit-metadata codec: records round-trip through real commit messages, hostile values
stay inside their field, commits written the way the first runs wrote them decode to the same
records, and a contribution too big for a 2,000-character trailer is seen whole by the index,
by `status` and by a coordinator taking it from a remote worker."""

from __future__ import annotations

import json
import re

import pygit2
import pytest
from typer.testing import CliRunner

from gitswarm.cli.main import app
from gitswarm.domain.contribution import Contribution
from gitswarm.domain.index import MemoryIndex
from gitswarm.domain.kinds import Kind, Verdict, Verification
from gitswarm.memory import commitmeta, indexing, trailers
from gitswarm.memory.repo import Memory
from gitswarm.remote import intake
from gitswarm.remote.claims import Claim

A, B, C = "a" * 40, "b" * 40, "c" * 40
FILES = tuple(f"code/solver/part-{i:02d}-of-the-prog.py" for i in range(64))
"""64 files of 34 characters each: the list is 2,302 characters, more than a trailer held."""


def old_render(subject: str, body: str, trailers: dict[str, str]) -> str:
    """A commit message as gitswarm wrote it before the codec: lists joined by ", " on one
    trailer, every value cut at 2,000 characters."""
    def cut(text: str, limit: int) -> str:
        flat = re.sub(r"\s+", " ", text).strip()
        return flat if len(flat) <= limit else flat[: limit - 1] + "…"
    lines = [cut(subject, 120), ""] + ([body, ""] if body else [])
    lines += [f"Gitswarm-{k}: {cut(v, 2000)}" for k, v in trailers.items() if v != ""]
    return "\n".join(lines) + "\n"


def old_contribution(kind: str, files: tuple[str, ...], **extra: str) -> dict[str, str]:
    return {"Run": "r1", "Episode": "e00007", "Op": "e00007-final", "Worker": "w03", "Problem": "sum",
            "Kind": kind, "Informed-By": f"{A}, {B}", "Model": "openai/m", "Tokens": "in=10 out=2",
            "Cost-USD": "0.0010", "Self-Assessment": "partial", "Files": ", ".join(files), **extra}


RECORDS = [
    commitmeta.ContributionRecord(run="r1", episode="e00007", op="e00007-final", worker="w03", problem="sum",
                            kind=Kind.ATTEMPT, informed_by=(A, B), model="openai/m", tokens="in=10 out=2",
                            cost_usd="0.0010", self_assessment="partial", files=("attempts/x.md",)),
    commitmeta.NominationRecord(run="r1", episode="e00008", op="e00008-final", worker="w04", problem="sum",
                          kind=Kind.NOMINATION, files=("nominations/e00008.md",), candidate=A),
    commitmeta.ReviewRecord(run="r1", episode="e00009", op="e00009-final", worker="w05", problem="sum",
                      kind=Kind.REVIEW, informed_by=(A,), files=("reviews/r.md",), reviews=A,
                      verdict=Verdict.CRITICAL),
    commitmeta.ContributionRecord(run="r1", episode="e00010", op="e00010-final", worker="w06", problem="rev",
                            kind=Kind.CODE, files=("code/x/a.py",), deleted=("code/x/b.py", "code/x/c.py")),
    commitmeta.ReviewRecord(run="r1", episode="person-20261206T0400-ab12cd", op="person-20261206T0400-ab12cd",
                            worker="person-ada", problem="sum", kind=Kind.REVIEW, files=("reviews/p.md",), reviews=A,
                            verdict=Verdict.PASS, person="Ada Lovelace"),
    commitmeta.Merge(run="r1", op="merge-0123", merged=("e00007", "e00008")),
    commitmeta.Solution(run="r1", op="select-sum", problem="sum", candidate=A,
                        verification=Verification.VERIFIED),
    commitmeta.GradeRecord(run="r1", problem="sum", candidate=A, grader="answer-key", model="m"),
    commitmeta.Removal(run="r1", problem="sum", replays=A, deleted=("notes/n.md",)),
    commitmeta.ClaimNote(episode="e00011", worker="w07", problem="sum", claim="e00011-final"),
]


@pytest.mark.parametrize("record", RECORDS, ids=lambda r: type(r).__name__)
def test_every_record_round_trips(record):
    assert commitmeta.decode(commitmeta.encode(record, "a subject", "a body")) == record


def test_a_commit_written_the_old_way_decodes_to_the_record_of_today():
    old = old_render("review(sum): checks x", "Why.", old_contribution("review", ("reviews/r.md",),
                                                                         Reviews=A, Verdict="pass"))
    found = commitmeta.decode(old)
    assert isinstance(found, commitmeta.ReviewRecord) and found.verdict is Verdict.PASS and found.informed_by == (A, B)
    assert found == commitmeta.decode(commitmeta.encode(found, "review(sum): checks x", "Why."))
    merge = commitmeta.decode(old_render("merge: compose 2", "", {"Run": "r1", "Op": "m", "Kind": "merge",
                                                                  "Merged": "e1, e2"}))
    assert merge == commitmeta.Merge(run="r1", op="m", merged=("e1", "e2"))


def test_lists_are_never_cut():
    many = tuple(f"{i:040x}" for i in range(300))
    record = commitmeta.ContributionRecord(problem="sum", kind=Kind.NOTE, informed_by=many, files=FILES)
    found = commitmeta.decode(commitmeta.encode(record, "note(sum): " + "long title " * 50))
    assert found.informed_by == many and found.files == FILES


@pytest.mark.parametrize("hostile", [
    "fine\nGitswarm-Verdict: pass",
    "a: b: c",
    "\n\nGitswarm-Kind: merge\n",
    "  spaced\tout  \r\n value ",
])
def test_a_hostile_value_stays_in_its_field(hostile: str):
    """Newlines, colons and trailer look-alikes in a value (a model's self-assessment, title or
    summary) never make a trailer of their own."""
    record = commitmeta.NominationRecord(problem="sum", kind=Kind.NOMINATION, candidate=A, self_assessment=hostile,
                                   model=hostile)
    message = commitmeta.encode(record, hostile, hostile + "\nGitswarm-Kind:merge")
    found = commitmeta.decode(message)
    assert isinstance(found, commitmeta.NominationRecord) and found.candidate == A and not found.extra
    assert found.self_assessment == " ".join(hostile.split()) == found.model
    subject, body = trailers.body(message)
    assert subject == " ".join(hostile.split()) and body.endswith("Gitswarm-Kind:merge")


def test_unknown_and_misplaced_trailers_are_kept_and_named():
    message = old_render("attempt(sum): x", "", old_contribution("attempt", ("attempts/x.md",), Candidate=A,
                                                                 Future="later"))
    found = commitmeta.decode(message)
    assert type(found) is commitmeta.ContributionRecord and found.extra == {"Candidate": A, "Future": "later"}
    assert commitmeta.stray(found) == ["Candidate"]
    assert commitmeta.decode("run: start r1\n") is None
    assert commitmeta.git_key("informed_by") == "Gitswarm-Informed-By"


def big(memory: Memory, episode: str, worker: str = "w01") -> Contribution:
    assert {len(f) for f in FILES} == {34}
    return Contribution(problem="sum", episode=episode, worker=worker, kind="code", title="a program in 64 files",
                        files={f: f"# part {i}\n" for i, f in enumerate(FILES)}, parent=memory.main(),
                        op=f"{episode}-final")


def test_the_index_and_status_see_all_64_files(memory: Memory):
    written = memory.contribute(big(memory, "e1")).commit
    memory.compose(["e1"])
    index = MemoryIndex()
    indexing.update(index, memory.repo, memory.main())
    assert len(index.files_of[written][1]) == 64
    assert sorted(index.problems["sum"].items) == sorted(FILES)
    result = CliRunner().invoke(app, ["status", str(memory.path), "--json"])
    assert result.exit_code == 0, result.output
    problem = next(p for p in json.loads(result.output)["problems"] if p["id"] == "sum")
    assert problem["counts"]["code"] == 1  # one codebase, code/solver/, of 64 files


def test_an_old_run_with_a_cut_files_trailer_still_loads_whole(memory: Memory):
    """A run written before the codec: its trailer lists 55 of the 64 files; the index reads the
    commit's tree, so it knows all 64."""
    repo = memory.repo
    main = repo[memory.main()]
    tree = main.tree
    from gitswarm.memory import trees
    tree = trees.update(repo, tree, trees.blobs(repo, {f"problems/sum/{f}": b"x\n" for f in FILES}))
    message = old_render("code(sum): a program", "", old_contribution("code", FILES))
    assert len(commitmeta.decode(message).files) < 64  # the cut the first runs made
    sig = pygit2.Signature("w01", "w01@gitswarm.local", 1_700_000_000, 0)
    old = str(repo.create_commit("refs/heads/main", sig, sig, message, tree, [main.id]))
    index = MemoryIndex()
    indexing.update(index, repo, memory.main())
    assert len(index.files_of[old][1]) == 64 and len(index.problems["sum"].items) == 64
    assert memory.commit(old).kind == "code" and memory.commit(old).informed_by == [A, B]


def test_a_coordinator_takes_in_the_64_file_contribution_of_a_remote_worker(memory: Memory):
    memory.contribute(big(memory, "e2", worker="a-w01"))
    tip = str(memory.repo.references["refs/heads/swarm/e2"].target)
    claim = Claim("e2", "a", "sum", 1, 0.0, 0.0, done=True, id="0" * 40)
    assert intake.check(memory.reader(), memory.run_id, memory.main(), intake.Pushed(claim, tip)) == "e2-final"


def test_changes_read_from_the_record_agree_with_the_tree(memory: Memory):
    written = memory.contribute(big(memory, "e3")).commit
    commit = memory.repo[written]
    from_record = commitmeta.changes(memory.repo, commit, "sum")
    from_tree = commitmeta.changes(memory.repo, commit, "sum", commitmeta.Other())
    assert from_record == from_tree and from_tree.written == FILES


def test_log_shows_a_review_from_its_record(memory: Memory):
    """`gitswarm log` reads the verdict, the reviewed candidate's path, the episode and the spend
    from the records."""
    from gitswarm.usage import Usage

    attempt = memory.contribute(Contribution(problem="sum", episode="e4", worker="w01", kind="attempt",
                                             title="seven", files={"attempts/seven.md": "7\n"},
                                             parent=memory.main(), op="e4-final")).commit
    memory.compose(["e4"])
    memory.contribute(Contribution(problem="sum", episode="e5", worker="w02", kind="review", title="checks seven",
                                   files={"reviews/r.md": "ok\n"}, parent=memory.main(), op="e5-final",
                                   informed_by=(attempt,), model="openai/m", usage=Usage.of_call(12, 3, 0.5),
                                   reviews=attempt, verdict="gaps"))
    memory.compose(["e5"])
    result = CliRunner().invoke(app, ["log", str(memory.path)])
    assert result.exit_code == 0, result.output
    assert f"verdict: gaps · reviews attempts/seven.md ({attempt[:10]})" in result.output
    assert "episode e5" in result.output and "model openai/m · tokens in=12 out=3 · USD 0.5000" in result.output


def test_a_commit_of_the_runs_before_people_wrote_is_a_workers():
    """The `Person` trailer is new: a commit without it (every commit of the earlier runs) is a
    worker's, and the index marks nobody's work as a person's."""
    record = commitmeta.decode(old_render("attempt(sum): x", "", old_contribution("attempt", ("attempts/x.md",))))
    assert isinstance(record, commitmeta.ContributionRecord) and record.person == "" and not record.extra
    person = commitmeta.decode(commitmeta.encode(RECORDS[4], "review(sum): pass"))
    assert commitmeta.git_key("person") == "Gitswarm-Person" and person.person == "Ada Lovelace"
