"""The memory on real repositories: layout, contributions, idempotency, compose, readers."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import fsck_clean, git

from gitswarm.domain.contribution import Contribution
from gitswarm.memory.compose import Resolution
from gitswarm.memory.errors import ContributionRefused, NotARun, PathRejected
from gitswarm.memory.repo import Memory
from gitswarm.problems.loader import load_set
from gitswarm.usage import Usage


def contribution(memory: Memory, episode: str, files: dict, **kw) -> Contribution:
    defaults = dict(problem="sum", episode=episode, worker="w01", kind="note",
                    title=f"work of {episode}", files=files, parent=memory.main(),
                    op=f"{episode}-contribute")
    return Contribution(**(defaults | kw))


def all_objects_text(repo: Path) -> str:
    """Every object in the repository (all refs, notes, unreachable too), as text."""
    listing = git(repo, "cat-file", "--batch-all-objects", "--batch-check=%(objectname)")
    return "".join(git(repo, "cat-file", "-p", oid) for oid in listing.split())


def test_create_writes_statements_readme_and_no_hidden_part(memory: Memory, problem_dir: Path):
    tree = git(memory.path, "ls-tree", "-r", "--name-only", "main").split()
    assert "README.md" in tree
    for pid in ("sum", "odd", "rev"):
        assert f"problems/{pid}/statement.md" in tree
        assert f"problems/{pid}/SUMMARY.md" in tree
    assert "problems/rev/starter/solution.py" in tree
    assert b"What is $3 + 4$?" in memory.read_file("problems/sum/statement.md")
    everything = all_objects_text(memory.path)
    assert "HIDDEN-" not in everything
    for problem in load_set(problem_dir).problems:
        for hidden in problem.hidden_texts():
            assert hidden not in everything


def test_contribution_is_one_commit_with_trailers_author_and_parent(memory: Memory):
    start = memory.main()
    cited = memory.contribute(contribution(memory, "e1", {"notes/a.md": "first"})).commit
    written = memory.contribute(contribution(
        memory, "e2", {"lemmas/key.md": "a lemma", "notes/b.md": "more"}, kind="lemma",
        worker="w07", informed_by=(cited,), model="openai/gpt-x", summary="Why it matters.",
        usage=Usage.of_call(1200, 300, 0.0125), self_assessment="partial"))
    info = memory.commit(written.commit)
    assert info.parents == (start,)
    assert info.author == "w07"
    assert info.subject == "lemma(sum): work of e2"
    assert info.body == "Why it matters."
    assert info.informed_by == [cited]
    assert info.trailers["Op"] == "e2-contribute"
    assert info.trailers["Run"] == "test-run"
    assert info.trailers["Tokens"] == "in=1200 out=300"
    assert info.trailers["Cost-USD"] == "0.0125"
    assert memory.pending() == {"e1": cited, "e2": written.commit}
    # plain git answers the same questions
    author = git(memory.path, "log", "-1", "--format=%an <%ae>", "swarm/e2").strip()
    assert author == "w07 <w07@gitswarm.local>"
    assert git(memory.path, "log", "-1", "--format=%(trailers:key=Gitswarm-Problem,valueonly)",
               "swarm/e2").strip() == "sum"


def test_same_operation_twice_returns_the_first_commit(memory: Memory):
    first = memory.contribute(contribution(memory, "e1", {"notes/a.md": "x"}))
    again = memory.contribute(contribution(memory, "e1", {"notes/a.md": "different"}))
    assert again.existed and again.commit == first.commit
    assert memory.op_commit("e1-contribute") == first.commit
    assert git(memory.path, "rev-list", "--count", "swarm/e1").strip() == "2"  # start + one


@pytest.mark.parametrize("path", [
    "../x.md", "/etc/passwd", ".git/config", "notes/.git/hooks/pre-commit", "notes/a\x00b",
    "notes/../../x", "statement.md", "SOLUTION.md", "starter/solution.py", "notes/", "",
    "notes\\a.md", "notes/./a.md", "../../other/notes/a.md", "notes/.gitattributes",
])
def test_paths_outside_the_folder_are_rejected(memory: Memory, path: str):
    with pytest.raises(PathRejected):
        memory.contribute(contribution(memory, "e1", {path: "x"}))
    assert memory.pending() == {}


def test_oversize_invalid_and_unknown_problem_rejected(memory: Memory):
    with pytest.raises(PathRejected, match="limit"):
        memory.contribute(contribution(memory, "e1", {"notes/big.md": b"x" * 300_000}))
    with pytest.raises(PathRejected, match="UTF-8"):
        memory.contribute(contribution(memory, "e1", {"notes/bad.md": b"\xff\xfe"}))
    with pytest.raises(PathRejected, match="limit"):
        memory.contribute(contribution(memory, "e1", {f"notes/{i}.md": "x" for i in range(100)}))
    with pytest.raises(PathRejected, match="no such problem"):
        memory.contribute(contribution(memory, "e1", {"notes/a.md": "x"}, problem="nope"))
    with pytest.raises(ContributionRefused, match="episode"):
        memory.contribute(contribution(memory, "../e1", {"notes/a.md": "x"}))
    with pytest.raises(ContributionRefused, match="informed_by"):
        memory.contribute(contribution(memory, "e1", {"notes/a.md": "x"}, informed_by=("f00d",)))
    with pytest.raises(PathRejected, match="UTF-8"):  # a lone surrogate a model's JSON carried
        memory.contribute(contribution(memory, "e1", {"notes/a.md": "x\ud800"}))
    with pytest.raises(ContributionRefused, match="title is not UTF-8"):
        memory.contribute(contribution(memory, "e1", {"notes/a.md": "x"}, title="x\ud800"))
    assert memory.pending() == {}


def test_disjoint_additions_merge_without_conflict_keeping_every_parent(memory: Memory):
    start = memory.main()
    tips = [memory.contribute(contribution(memory, f"e{i}", {f"notes/n{i}.md": str(i)})).commit
            for i in range(3)]
    result = memory.compose()
    assert result.conflicts == [] and result.merged == ["e0", "e1", "e2"]
    merge = memory.commit(result.commit)
    assert merge.parents == (start, *tips)
    assert memory.pending() == {}
    assert [i.path for i in memory.items("sum", "note")] == [
        f"problems/sum/notes/n{i}.md" for i in range(3)]
    assert fsck_clean(memory.path)


def composer(memory: Memory, restarted: bool) -> Memory:
    """The Memory that composes: the same one (merge bases known from the main line it saw),
    or a new one, as after a restart (merge bases found by walking the history)."""
    return Memory(memory.path) if restarted else memory


@pytest.mark.parametrize("restarted", [False, True])
def test_same_file_different_hunks_merge_cleanly(memory: Memory, restarted: bool):
    base_text = "".join(f"line {i}\n" for i in range(20))
    memory.contribute(contribution(memory, "e0", {"notes/shared.md": base_text}))
    memory.compose()
    top = base_text.replace("line 1\n", "line one\n")
    bottom = base_text.replace("line 18\n", "line eighteen\n")
    memory.contribute(contribution(memory, "e1", {"notes/shared.md": top}))
    memory.contribute(contribution(memory, "e2", {"notes/shared.md": bottom}))
    result = composer(memory, restarted).compose()
    assert result.conflicts == [] and result.merged == ["e1", "e2"]
    merged = memory.read_file("problems/sum/notes/shared.md").decode()
    assert "line one\n" in merged and "line eighteen\n" in merged


def test_conflict_is_data_and_a_resolution_composes_it(memory: Memory):
    memory.contribute(contribution(memory, "e1", {"SUMMARY.md": "# Summary\n\nA.\n"}))
    memory.contribute(contribution(memory, "e2", {"SUMMARY.md": "# Summary\n\nB.\n"}))
    result = memory.compose()
    assert result.merged == ["e1"]
    [conflict] = result.conflicts
    assert (conflict.episode, conflict.path) == ("e2", "problems/sum/SUMMARY.md")
    assert conflict.base.endswith("No work on this problem yet.\n")
    assert (conflict.ours, conflict.theirs) == ("# Summary\n\nA.\n", "# Summary\n\nB.\n")
    assert memory.pending().keys() == {"e2"}
    stale = Resolution("e2", conflict.path, "0" * 40, "stale")
    assert memory.compose(resolutions=[stale]).conflicts  # a resolution of another 'ours' is ignored
    fix = Resolution("e2", conflict.path, conflict.ours_blob, "# Summary\n\nA and B.\n")
    result = memory.compose(resolutions=[fix])
    assert result.merged == ["e2"] and not result.conflicts
    assert memory.read_file("problems/sum/SUMMARY.md") == b"# Summary\n\nA and B.\n"


@pytest.mark.parametrize("restarted", [False, True])
def test_branch_already_in_main_is_dropped_without_a_new_merge(memory: Memory, restarted: bool):
    tip = memory.contribute(contribution(memory, "e1", {"notes/a.md": "x"})).commit
    memory.compose()
    memory.contribute(contribution(memory, "e2", {"notes/b.md": "y"}))
    memory.compose()
    # a crash between moving main and deleting the branch leaves such a branch behind
    git(memory.path, "update-ref", "refs/heads/swarm/e1", tip)
    main_before = memory.main()
    result = composer(memory, restarted).compose()
    assert result.commit is None and memory.main() == main_before
    assert memory.pending() == {}


def test_transcripts_are_git_notes(memory: Memory):
    commit = memory.contribute(contribution(memory, "e1", {"notes/a.md": "x"})).commit
    memory.add_transcript(commit, "user: hi\nassistant: hello")
    memory.add_transcript(commit, "user: hi\nassistant: hello")
    assert memory.transcript(commit) == "user: hi\nassistant: hello"
    shown = git(memory.path, "log", "-1", "--notes=transcripts", "--format=%N", commit)
    assert "assistant: hello" in shown
    # git's two-level fanout, so a note does not rewrite one tree of every note so far
    assert git(memory.path, "ls-tree", "-r", "--name-only", "refs/notes/transcripts").split() == [
        f"{commit[:2]}/{commit[2:]}"]
    assert git(memory.path, "rev-list", "--count", "refs/notes/transcripts").strip() == "1"


def test_several_transcripts_are_noted_in_one_commit(memory: Memory):
    first = memory.contribute(contribution(memory, "e1", {"notes/a.md": "x"})).commit
    second = memory.contribute(contribution(memory, "e2", {"notes/b.md": "y"})).commit
    memory.add_transcript(first, "one")
    memory.add_transcripts({first: "one", second: "two\x00"})  # the first unchanged: only the second is new
    memory.add_transcripts({first: "one", second: "two\x00"})
    assert memory.transcript(first) == "one" and memory.transcript(second) == "two\\0"
    assert git(memory.path, "rev-list", "--count", "refs/notes/transcripts").strip() == "2"
    assert git(memory.path, "notes", "--ref=transcripts", "show", second).strip() == "two\\0"


def test_a_flat_note_of_an_older_run_is_replaced_not_doubled(memory: Memory):
    import pygit2

    commit = memory.contribute(contribution(memory, "e1", {"notes/a.md": "x"})).commit
    sig = pygit2.Signature("old", "old@example.com")
    memory.repo.create_note("old transcript", sig, sig, commit, "refs/notes/transcripts", True)  # flat
    memory.add_transcript(commit, "new transcript")
    assert memory.transcript(commit) == "new transcript"
    assert git(memory.path, "notes", "--ref=transcripts", "show", commit).strip() == "new transcript"
    assert git(memory.path, "ls-tree", "-r", "--name-only", "refs/notes/transcripts").split() == [
        f"{commit[:2]}/{commit[2:]}"]


def test_log_filters_by_problem_worker_and_kind(memory: Memory):
    memory.contribute(contribution(memory, "e1", {"notes/a.md": "x"}, worker="w01"))
    memory.contribute(contribution(memory, "e2", {"lemmas/l.md": "x"}, worker="w02", kind="lemma"))
    memory.contribute(contribution(memory, "e3", {"notes/o.md": "x"}, problem="odd", worker="w02"))
    assert memory.log(problem="sum") == []  # nothing merged yet
    assert len(memory.log(problem="sum", include_pending=True)) == 2
    memory.compose()
    assert [c.trailers["Episode"] for c in memory.log(problem="sum")] == ["e2", "e1"] or \
        {c.trailers["Episode"] for c in memory.log(problem="sum")} == {"e1", "e2"}
    assert {c.trailers["Episode"] for c in memory.log(worker="w02")} == {"e2", "e3"}
    assert [c.trailers["Episode"] for c in memory.log(kind="lemma")] == ["e2"]
    assert len(memory.log(kind="merge")) == 1


def test_open_rejects_folders_that_are_not_runs(tmp_path: Path, memory: Memory):
    with pytest.raises(NotARun, match="no git repository"):
        Memory(tmp_path / "nothing")
    git(tmp_path, "init", "-q", "plain")
    with pytest.raises(NotARun, match="not a gitswarm run"):
        Memory(tmp_path / "plain")
    with pytest.raises(NotARun, match="not empty"):
        Memory.create(memory.path, load_set(tmp_path / "set"))
    assert Memory(memory.path).run_id == "test-run"


def test_a_creation_cut_short_leaves_nothing_in_the_way(tmp_path: Path, memory: Memory):
    """A run is made beside its folder and renamed into place: what a SIGKILL in the middle
    leaves (here, as it would: a half-made repository in `.<name>.creating`) is cleared by the
    next creation, and the run's folder, absent or empty, is never half-made."""
    problems = load_set(tmp_path / "set")
    cut = tmp_path / ".fresh.creating"
    git(tmp_path, "init", "-q", "--bare", cut.name)
    (tmp_path / "empty").mkdir()
    for path in (tmp_path / "fresh", tmp_path / "empty", tmp_path / "deep" / "er" / "run"):
        made = Memory.create(path, problems)
        assert made.problems() and fsck_clean(path)
    assert not cut.exists() and not list(tmp_path.rglob(".*.creating"))


def test_pending_branches_are_found_loose_packed_and_deleted(memory: Memory):
    import pygit2

    for i in range(6):
        memory.contribute(contribution(memory, f"e{i}", {f"notes/n{i}.md": str(i)}))
    memory.pack_refs()  # e0..e5 packed, next to every op ref
    memory.contribute(contribution(memory, "e6", {"notes/n6.md": "6"}))  # loose
    memory.compose(["e1", "e6"])  # deletes a packed branch and a loose one
    expected = {e: str(pygit2.Repository(str(memory.path)).references[f"refs/heads/swarm/{e}"].target)
                for e in ("e0", "e2", "e3", "e4", "e5")}
    assert memory.pending() == expected
    listed = git(memory.path, "for-each-ref", "--format=%(refname:lstrip=3)", "refs/heads/swarm/").split()
    assert sorted(listed) == sorted(expected)


def test_a_contribution_may_delete_files_of_its_problem(memory: Memory):
    first = memory.contribute(contribution(memory, "e1", {"code/x/a.py": "a\n", "code/x/b.py": "b\n"}))
    memory.compose(["e1"])
    gone = memory.contribute(contribution(memory, "e2", {}, deleted=("code/x/b.py",), informed_by=(first.commit,)))
    memory.compose(["e2"])
    assert memory.read_file("problems/sum/code/x/b.py") is None
    assert memory.read_file("problems/sum/code/x/a.py") == b"a\n"
    assert memory.commit(gone.commit).trailers["Deleted"] == "code/x/b.py"
    with pytest.raises(PathRejected, match="both write and delete"):
        memory.contribute(contribution(memory, "e3", {"code/x/a.py": "c\n"}, deleted=("code/x/a.py",)))
    with pytest.raises(PathRejected, match=r"write only SUMMARY\.md"):
        memory.contribute(contribution(memory, "e3", {}, deleted=("statement.md",)))
    assert fsck_clean(memory.path)


def test_in_history_is_the_tip_or_an_ancestor_and_never_raises(memory: Memory):
    from gitswarm.memory.read import in_history

    start = memory.main()
    side = memory.contribute(contribution(memory, "e1", {"notes/a.md": "# a\n"})).commit
    repo = memory.repo
    assert in_history(repo, side, start) and in_history(repo, side, side)
    assert not in_history(repo, start, side)  # a descendant is not in the history of its ancestor
    assert not in_history(repo, start, "0" * 40) and not in_history(repo, start, "not-a-commit")
    assert not in_history(repo, None, start) and not in_history(repo, start, None)
