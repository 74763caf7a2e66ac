"""Readers read a run through a `Snapshot` that `Memory` hands out, never through its repository.

Views, reports, exports and the candidates the referee grades used to reach the raw pygit2
repository (`memory.repo`), which also writes. Now they get a read-only snapshot, pinned at
main's tip when taken: every read of one snapshot sees the same main while the engine merges.
"""

from __future__ import annotations

import re
from pathlib import Path

import pygit2
import pytest

import gitswarm
from gitswarm.domain.contribution import Contribution
from gitswarm.memory.repo import Memory
from gitswarm.memory.snapshot import Snapshot

PACKAGE = Path(gitswarm.__file__).parent
READERS = ("readmodel", "report", "tui", "export", "cli/show.py", "cli/log.py", "cli/status.py", "cli/grade.py",
           "cli/export.py", "cli/dashboard.py", "cli/demo.py", "cli/experiment.py", "referee/candidates.py",
           "experiment/figures.py")
REACH = re.compile(r"\.repo\b")
WRITES = ("contribute", "adopt", "compose", "pack_refs", "commit_to_main", "put_records", "put_files",
          "add_transcript", "add_transcripts", "put_transcript")


def reaches(text: str) -> list[str]:
    """The lines of `text` that reach a repository by `.repo` (importing `memory.repo` is no reach)."""
    return [line.strip() for line in text.splitlines()
            if REACH.search(line.split("#")[0].replace("gitswarm.memory.repo", ""))]


def reader_modules() -> list[Path]:
    found = []
    for name in READERS:
        path = PACKAGE / name
        found += sorted(path.rglob("*.py")) if path.is_dir() else [path]
    return found


def lemma(memory: Memory, episode: str) -> Contribution:
    return Contribution(problem="sum", episode=episode, worker="w01", kind="lemma", title=f"lemma of {episode}",
                        files={f"lemmas/{episode}.md": "seven is prime"}, parent=memory.main(),
                        op=f"{episode}-final", summary="Because.")


def test_the_scan_finds_a_reach_and_passes_an_import():
    assert reaches("    tree = memory.repo[tip].peel(pygit2.Tree)") != []
    assert reaches("found = self.memory.repo.references.get(ref)") != []
    assert reaches("from gitswarm.memory.repo import Memory") == []
    assert reaches("snapshot = memory.snapshot()  # not memory.repo") == []


def test_no_reader_reaches_the_repository():
    modules = reader_modules()
    assert len(modules) > 30 and all(p.exists() for p in modules)
    found = [f"{p.relative_to(PACKAGE)}: {line}" for p in modules for line in reaches(p.read_text(encoding="utf-8"))]
    assert found == []


def test_a_snapshot_reads_main_as_it_was_when_taken(memory: Memory):
    memory.contribute(lemma(memory, "e1"))
    before = memory.snapshot()
    old_main, path = memory.main(), "problems/sum/lemmas/e1.md"
    memory.compose()
    assert memory.main() != old_main and memory.pending() == {}
    assert before.main == old_main and before.ref("refs/heads/main") == old_main
    assert list(before.pending) == ["e1"] and before.ref("refs/heads/swarm/e1") == before.pending["e1"]
    assert before.file(path) is None and before.items("sum", "lemma") == []
    assert str(before.commit("refs/heads/main").id) == old_main and before.tree().id == before.commit(old_main).tree.id
    assert [c.subject for c in before.log(problem="sum")] == []
    now = memory.snapshot()
    assert now.main == memory.main() and now.file(path) == b"seven is prime"
    assert [c.subject for c in now.log(problem="sum")] == ["lemma(sum): lemma of e1"]
    assert now.in_history(old_main) and not before.in_history(now.main)


def test_a_ref_is_read_once_and_kept(memory: Memory):
    snapshot = memory.snapshot()
    assert snapshot.ref("refs/heads/swarm/e2") is None
    written = memory.contribute(lemma(memory, "e2"))
    assert snapshot.ref("refs/heads/swarm/e2") is None and "e2" not in snapshot.pending
    assert memory.snapshot().ref("refs/heads/swarm/e2") == written.commit


def test_a_snapshot_has_no_write_and_no_public_repository(memory: Memory):
    snapshot = memory.snapshot()
    public = {name: getattr(snapshot, name) for name in dir(snapshot) if not name.startswith("_")}
    assert [name for name in WRITES if name in public] == []
    assert [name for name, value in public.items() if isinstance(value, pygit2.Repository)] == []
    assert isinstance(snapshot, Snapshot) and not hasattr(snapshot, "repo")
    with pytest.raises(AttributeError, match="read-only"):
        snapshot.main = "0" * 40
    with pytest.raises(TypeError):
        snapshot.pending["e9"] = "0" * 40
