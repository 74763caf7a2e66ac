"""The coordinator's intake on commits written the way a worker writes them: a code
contribution that deletes files (as a shell command does) is taken in like a local one, and
a commit whose deletions its trailers do not own up to, or that deletes anything but code,
is refused."""

from __future__ import annotations

import pygit2
import pytest
from conftest import fsck_clean

from gitswarm.domain.contribution import Contribution
from gitswarm.memory import commitmeta, indexing, trees
from gitswarm.memory.repo import Memory
from gitswarm.memory.trailers import parse
from gitswarm.remote import intake
from gitswarm.remote.claims import Claim


def contribution(memory: Memory, episode: str, files: dict, **kw) -> Contribution:
    defaults = dict(problem="sum", episode=episode, worker="a-w01", kind="code", title=f"work of {episode}",
                    files=files, parent=memory.main(), op=f"{episode}-final")
    return Contribution(**(defaults | kw))


def closed(episode: str) -> Claim:
    return Claim(episode, "a", "sum", 1, 0.0, 0.0, done=True, id="0" * 40)


def pushed(memory: Memory, episode: str) -> intake.Pushed:
    return intake.Pushed(closed(episode), str(memory.repo.references[f"refs/heads/swarm/{episode}"].target))


def forged(memory: Memory, tree: pygit2.Oid, message: str) -> intake.Pushed:
    """A commit on main with `tree` and `message`, pushed as episode e3's branch."""
    sig = pygit2.Signature("a-w01", "a-w01@gitswarm.local", 1_700_000_000, 0)
    main = pygit2.Oid(hex=memory.main())
    commit = memory.repo.create_commit("refs/heads/swarm/e3", sig, sig, message, tree, [main])
    return intake.Pushed(closed("e3"), str(commit))


def test_a_pushed_deletion_named_by_its_trailer_is_taken_in(memory: Memory):
    memory.contribute(contribution(memory, "e1", {"code/x/a.py": "a\n", "code/x/b.py": "b\n"}))
    memory.compose(["e1"])
    memory.contribute(contribution(memory, "e2", {"code/x/a.py": "A\n"}, deleted=("code/x/b.py",)))
    item = pushed(memory, "e2")
    assert intake.check(memory.reader(), memory.run_id, memory.main(), item) == "e2-final"
    memory.compose(["e2"])
    assert memory.read_file("problems/sum/code/x/b.py") is None
    assert memory.read_file("problems/sum/code/x/a.py") == b"A\n"
    assert fsck_clean(memory.path)


def test_a_deletion_its_trailers_do_not_name_is_refused(memory: Memory):
    memory.contribute(contribution(memory, "e1", {"code/x/a.py": "a\n", "code/x/b.py": "b\n"}))
    memory.compose(["e1"])
    memory.contribute(contribution(memory, "e2", {"code/x/a.py": "A\n"}, deleted=("code/x/b.py",)))
    honest = memory.repo[pushed(memory, "e2").commit]
    message = honest.message.replace("e2", "e3")
    silent = "".join(ln for ln in message.splitlines(keepends=True) if not ln.startswith("Gitswarm-Deleted:"))
    with pytest.raises(intake.Refused, match="Deleted trailer does not list"):
        intake.check(memory.reader(), memory.run_id, memory.main(), forged(memory, honest.tree_id, silent))
    assert parse(message)["Deleted"] == "code/x/b.py"


@pytest.mark.parametrize("victim", ["statement.md", "reviews/r.md", "nominations/e0.md"])
def test_a_deletion_outside_code_is_refused(memory: Memory, victim: str):
    """A code worker's shell deletes only code; a pushed commit deleting a statement, another
    worker's review or a nomination (which would undo a verification or a vote) is refused."""
    memory.contribute(contribution(memory, "e1", {"code/x/a.py": "a\n", "reviews/r.md": "pass\n"}))
    memory.compose(["e1"])
    if victim.startswith("nominations/"):
        memory.commit_to_main({f"problems/sum/{victim}": b"vote\n"}, "a vote", commitmeta.Other(op="vote-op"))
    tip = memory.repo[memory.main()]
    tree = trees.update(memory.repo, tip.tree, {f"problems/sum/{victim}": None})
    message = memory.repo[memory.op_commit("e1-final")].message.replace("e1", "e3")
    message = message.replace("Gitswarm-Files: code/x/a.py, reviews/r.md",
                              f"Gitswarm-Files: \nGitswarm-Deleted: {victim}")
    with pytest.raises(intake.Refused, match=f"deletes problems/sum/{victim}; a contribution may delete only"):
        intake.check(memory.reader(), memory.run_id, memory.main(), forged(memory, tree, message))


def test_the_index_of_main_spares_the_walk_and_nothing_off_main_passes_for_it(memory: Memory):
    """`known` (the coordinator passes its `MemoryIndex.taken`) answers for the commits it holds;
    a commit it does not hold is still walked for, and one off main is refused as before."""
    from gitswarm.domain.index import MemoryIndex
    from gitswarm.remote.named import on_main

    memory.contribute(contribution(memory, "e1", {"attempts/a.md": "a\n"}, kind="attempt"))
    memory.compose(["e1"])
    index = MemoryIndex()
    indexing.update(index, memory.repo, memory.main())
    first = str(memory.repo.revparse_single("main~1").id)  # the run's first commit, the walk's far end
    assert first in index.taken and on_main(memory.reader(), memory.main(), first, index.taken)
    assert on_main(memory.reader(), memory.main(), first)  # the walk agrees
    memory.contribute(contribution(memory, "e2", {"attempts/b.md": "b\n"}, kind="attempt"))
    off = str(memory.repo.references["refs/heads/swarm/e2"].target)  # pending, not on main
    assert not on_main(memory.reader(), memory.main(), off, index.taken)
    item = pushed(memory, "e2")
    assert intake.check(memory.reader(), memory.run_id, memory.main(), item, known=index.taken) == "e2-final"


def test_a_workers_commit_that_claims_to_be_a_persons_is_refused(memory: Memory):
    """A `Person` trailer makes a review count as a person's where the run says so: only a
    person's contribution (refs/gitswarm/people/person-...) may carry one."""
    memory.contribute(contribution(memory, "e2", {"notes/n.md": "n\n"}, kind="note"))
    honest = memory.repo[pushed(memory, "e2").commit]
    message = honest.message.replace("e2", "e3") + "Gitswarm-Person: Ada Lovelace\n"
    with pytest.raises(intake.Refused, match="a Person trailer belongs on a person's contribution"):
        intake.check(memory.reader(), memory.run_id, memory.main(), forged(memory, honest.tree_id, message))


def test_a_persons_pushed_note_is_checked_and_adopted_and_a_forged_one_refused(memory: Memory):
    from gitswarm.remote import people

    episode = "person-20261206T000000-abcdef"
    note = Contribution(problem="sum", episode=episode, worker="person-ada", kind="note", title="a hint",
                        files={"notes/hint.md": "try 7\n"}, parent=memory.main(), op=episode,
                        person=("Ada Lovelace", "ada@example.org"))
    commit = memory.contribute(note).commit
    memory.repo.references.delete(f"refs/heads/swarm/{episode}")  # as if it came from the remote only
    memory.repo.references.delete(f"refs/gitswarm/ops/{episode}")
    memory.repo.references.create(f"refs/gitswarm/people/{episode}", pygit2.Oid(hex=commit))
    assert people.waiting(memory, set()) == {episode: commit}
    assert people.take(memory, episode, commit, set()) is True
    assert memory.compose([episode]).merged == [episode]
    assert memory.read_file("problems/sum/notes/hint.md") == b"try 7\n"
    other = "person-20261206T000001-abcdef"  # a person's episode whose commit does not say it is a person's
    unmarked = memory.contribute(Contribution(problem="sum", episode=other, worker="person-ada", kind="note",
                                              title="a hint", files={"notes/other.md": "x\n"}, parent=memory.main(),
                                              op=other)).commit
    with pytest.raises(intake.Refused, match="names its person in a Person trailer"):
        people.take(memory, other, unmarked, set())
