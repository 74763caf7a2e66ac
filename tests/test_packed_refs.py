"""A `git gc` beside a run loses no ref update.

libgit2 deletes a packed ref by writing packed-refs back from a copy it read before it took
packed-refs.lock; a `git pack-refs` that committed in between (it had moved the ledger's new
value from its loose file into packed-refs and removed the loose file) was undone, and the
ledger went back one write. The merger now deletes its branches while it holds git's
packed-refs.lock, so none of them can be packed meanwhile, or through git itself when one
already is (`memory.gitrefs`). Real repositories and the real git; the chaos test runs the
same thing against `git gc --auto` and `pack-refs` in loops."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest
from conftest import fsck_clean, git

from gitswarm.domain.contribution import Contribution
from gitswarm.memory import gitrefs
from gitswarm.memory.errors import Contention
from gitswarm.memory.repo import Memory

LEDGER = "refs/gitswarm/ledger"


def contribute(memory: Memory, episode: str) -> None:
    memory.contribute(Contribution(problem="sum", episode=episode, worker="w01", kind="note", title=episode,
                                   files={f"notes/{episode}.md": f"{episode}\n"}, parent=memory.main(),
                                   op=f"{episode}-c"))


def packed_names(run: Path) -> set[str]:
    text = (run / "packed-refs").read_text() if (run / "packed-refs").exists() else ""
    return {line.split()[1] for line in text.splitlines() if line and line[0] not in "#^"}


def test_a_merge_deletes_branches_git_gc_packed_and_keeps_the_ledgers_last_write(memory: Memory):
    run = memory.path
    contribute(memory, "e1")
    contribute(memory, "e2")
    memory.put_records("ledger", {"episodes/e1.json": {"status": "contribute"}}, "ledger: e1")
    git(run, "pack-refs", "--all")  # a user's `git gc`: the branches and the ledger packed, their loose files gone
    assert {"refs/heads/swarm/e1", "refs/heads/swarm/e2", LEDGER} <= packed_names(run)
    memory.put_records("ledger", {"episodes/e2.json": {"status": "contribute"}}, "ledger: e2")  # loose again
    last = git(run, "rev-parse", LEDGER).strip()
    composed = memory.compose()
    assert composed.merged == ["e1", "e2"]
    assert memory.pending() == {} and not {"refs/heads/swarm/e1", "refs/heads/swarm/e2"} & packed_names(run)
    assert git(run, "rev-parse", LEDGER).strip() == last
    assert git(run, "rev-parse", "main").strip() == composed.commit
    contribute(memory, "e3")  # loose again: the merger's own path (libgit2, under the lock)
    assert memory.compose().merged == ["e3"] and memory.pending() == {}
    assert not (run / "packed-refs.lock").exists() and fsck_clean(run)


def test_a_packer_committing_inside_the_merge_is_not_undone(memory: Memory):
    """The race, made deterministic. libgit2 knows packed-refs changed by its mtime, size and
    inode; a packer's commit it cannot see (rewritten in place, the same stamp) stands for
    one that lands between libgit2's read of packed-refs and its lock. libgit2 deleting the
    packed branch wrote the ledger's old value back; git, reading under the lock, does not."""
    run = memory.path
    contribute(memory, "e0")
    contribute(memory, "e1")
    memory.put_records("ledger", {"episodes/e1.json": {"status": "running"}}, "ledger: e1 running")
    git(run, "pack-refs", "--all")
    assert memory.compose(["e0"]).merged == ["e0"]  # a packed branch deleted: packed-refs read (the ledger's v1)
    v1 = git(run, "rev-parse", LEDGER).strip()
    memory.put_records("ledger", {"episodes/e1.json": {"status": "contribute"}}, "ledger: e1 contribute")
    v2 = git(run, "rev-parse", LEDGER).strip()
    packed, stamp = run / "packed-refs", (run / "packed-refs").stat()
    with packed.open("r+") as file:  # the packer: v2 into packed-refs, then its loose file pruned
        text = file.read()
        file.seek(0)
        file.write(text.replace(f"{v1} {LEDGER}", f"{v2} {LEDGER}"))
    os.utime(packed, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
    (run / LEDGER).unlink()
    assert git(run, "rev-parse", LEDGER).strip() == v2
    assert memory.compose().merged == ["e1"]
    assert git(run, "rev-parse", LEDGER).strip() == v2, "the ledger's last write was undone"
    assert memory.records("ledger")["episodes/e1.json"] == {"status": "contribute"}


def test_no_packer_commits_while_the_merger_holds_packed_refs_lock(memory: Memory):
    run = memory.path
    contribute(memory, "e1")
    with gitrefs.packed_locked(memory.repo):
        packer = subprocess.run(["git", "-C", str(run), "-c", "core.packedRefsTimeout=0", "pack-refs", "--all"],
                                capture_output=True, text=True, check=False)
        assert packer.returncode != 0 and "packed-refs.lock" in packer.stderr, packer
        assert "refs/heads/swarm/e1" not in packed_names(run)
        with pytest.raises(Contention, match="held by another writer"):
            with gitrefs.packed_locked(memory.repo):
                pass
    git(run, "pack-refs", "--all")  # released: git packs again
    assert "refs/heads/swarm/e1" in packed_names(run)


def test_a_packed_refs_lock_left_by_a_dead_writer_is_taken_over(memory: Memory):
    lock = memory.path / "packed-refs.lock"
    lock.touch()
    old = time.time() - gitrefs.STALE_S - 5
    os.utime(lock, (old, old))
    with pytest.raises(Contention, match="died"):  # removed; the caller's retry takes it next
        with gitrefs.packed_locked(memory.repo):
            pass
    contribute(memory, "e1")
    assert memory.compose().merged == ["e1"] and not lock.exists()


def test_git_refusing_a_transaction_for_another_reason_is_a_fault_not_a_retry(memory: Memory):
    with pytest.raises(gitrefs.RefChangeFailed, match="update-ref"):
        gitrefs.transact(memory.repo, [gitrefs.RefChange("refs/heads/bad..name", None)], "test")
    with pytest.raises(Contention, match="cannot lock ref"):
        gitrefs.transact(memory.repo, [gitrefs.RefChange("refs/heads/main", None, "1" * 40)], "test")


def loose_ops(run: Path) -> list[str]:
    folder = run / "refs" / "gitswarm" / "ops"
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


def test_a_merge_packs_the_refs_once_enough_commits_were_written(memory: Memory, monkeypatch: pytest.MonkeyPatch):
    """Op refs are packed as the run goes, right after a merge, so that the run's last packing
    has few loose refs to read (each one's object, out of the page cache at 19,000 episodes:
    longer than git is allowed). The branches still waiting are packed with them and are
    merged and deleted as any other."""
    import gitswarm.memory.repo as repo_module

    monkeypatch.setattr(repo_module, "PACK_EVERY", 3)
    for e in ("e1", "e2"):
        contribute(memory, e)
    assert memory.compose(["e1"]).merged == ["e1"]
    assert loose_ops(memory.path) == ["e1-c", "e2-c"]  # 2 written: not yet
    contribute(memory, "e3")
    contribute(memory, "e4")
    assert memory.compose(["e3"]).merged == ["e3"]  # 4 written: packed after this merge
    assert loose_ops(memory.path) == []
    assert {f"refs/gitswarm/ops/{e}-c" for e in ("e1", "e2", "e3", "e4")} | {
        "refs/heads/swarm/e2", "refs/heads/swarm/e4"} <= packed_names(memory.path)
    contribute(memory, "e5")  # loose again; the count began anew
    assert loose_ops(memory.path) == ["e5-c"]
    assert memory.compose().merged == ["e2", "e4", "e5"] and memory.pending() == {}
    assert memory.op_commit("e2-c") is not None and fsck_clean(memory.path)


def test_a_packing_git_cannot_finish_in_time_is_put_off_and_leaves_no_lock(memory: Memory,
                                                                           monkeypatch: pytest.MonkeyPatch):
    """Stopped at its timeout by SIGTERM, git removes the lock files it holds (a SIGKILL would
    leave packed-refs.lock, and every ref change would wait out STALE_S), every ref keeps its
    value, and the packing is put off, not the run's failure; the next one packs."""
    run, main = memory.path, memory.main()
    lines = "".join(f"create refs/gitswarm/ops/x{i} {main}\n" for i in range(1500))
    subprocess.run(["git", "--git-dir", str(run), "update-ref", "--stdin"], input=lines, text=True, check=True)
    before = git(run, "for-each-ref", "--format=%(refname) %(objectname)")
    monkeypatch.setattr(gitrefs, "TIMEOUT_S", 0.02)
    assert memory.pack_refs() is False
    assert not (run / "packed-refs.lock").exists()
    assert git(run, "for-each-ref", "--format=%(refname) %(objectname)") == before
    monkeypatch.setattr(gitrefs, "TIMEOUT_S", 120)
    assert memory.pack_refs() is True
    assert loose_ops(run) == [] and git(run, "for-each-ref", "--format=%(refname) %(objectname)") == before
    with pytest.raises(gitrefs.GitTimedOut, match="did not finish"):  # a transaction so stopped is a fault
        monkeypatch.setattr(gitrefs, "TIMEOUT_S", 0.0)
        gitrefs.transact(memory.repo, [gitrefs.RefChange("refs/heads/new", main)], "test")
    assert fsck_clean(run)
