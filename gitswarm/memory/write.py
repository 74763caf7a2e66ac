"""Write one contribution: blobs, tree and commit, then its branch and op refs atomically."""

from __future__ import annotations

import time
from typing import Any

import pygit2

from gitswarm.domain.contribution import Contribution
from gitswarm.domain.kinds import Kind
from gitswarm.memory import commitmeta, trees
from gitswarm.memory.errors import Contention, ContributionRefused, PathRejected
from gitswarm.memory.model import Written, name_problem, safe_name
from gitswarm.memory.paths import WriteLimits, check_files, check_path

COMMITTER = ("gitswarm", "gitswarm@gitswarm.local")


def op_ref(op: str) -> str:
    return f"refs/gitswarm/ops/{op}"


def branch_ref(episode: str) -> str:
    return f"refs/heads/swarm/{episode}"


def committer() -> pygit2.Signature:
    return pygit2.Signature(*COMMITTER, int(time.time()), 0)


def find_op(repo: pygit2.Repository, op: str) -> str | None:
    """The commit that holds operation `op`, if the repository has it."""
    ref = repo.references.get(op_ref(op))
    return str(ref.target) if ref is not None else None


def message(run_id: str, c: Contribution) -> str:
    """The commit message of contribution `c` (`commitmeta.encode` of its record)."""
    usage = c.usage
    cost = "unknown" if usage.cost_usd is None else f"{usage.cost_usd:.4f}"
    common: dict[str, Any] = dict(run=run_id, episode=c.episode, op=c.op, worker=c.worker, problem=c.problem,
                  informed_by=tuple(c.informed_by), model=c.model, tokens=usage.trailer(), cost_usd=cost,
                  self_assessment=c.self_assessment, files=tuple(sorted(c.files)), deleted=tuple(sorted(c.deleted)),
                  person=c.person[0] if c.person else "")
    record: commitmeta.ContributionRecord
    if c.kind == Kind.NOMINATION:
        record = commitmeta.NominationRecord(kind=Kind.NOMINATION, candidate=c.candidate, **common)
    elif c.kind == Kind.REVIEW:
        record = commitmeta.ReviewRecord(kind=Kind.REVIEW, reviews=c.reviews, verdict=c.verdict, **common)
    else:
        record = commitmeta.ContributionRecord(kind=c.kind, **common)
    return commitmeta.encode(record, f"{c.kind}({c.problem}): {c.title}", c.summary)


def validate(repo: pygit2.Repository, c: Contribution, limits: WriteLimits) -> dict[str, bytes]:
    """Check ids, the start commit, the problem, every path and the text; return the files to
    write. A contribution that fails a check is `ContributionRefused` (`PathRejected` for a
    path or a file), never written."""
    for what, value in (("episode", c.episode), ("worker", c.worker), ("op", c.op),
                        ("problem", c.problem), ("kind", c.kind)):
        if not safe_name(value):
            raise ContributionRefused(name_problem(what, value))
    _check_text(c)
    files = check_files(c.file_bytes(), limits) if c.files or not c.deleted else {}
    if len(c.deleted) > limits.max_files:
        raise PathRejected("", f"{len(c.deleted)} files deleted in one contribution; the limit is {limits.max_files}")
    for path in c.deleted:
        if check_path(path, limits) in files:
            raise PathRejected(path, "a contribution cannot both write and delete a file")
    start = _commit(repo, c.parent, "parent")
    if trees.lookup(start.tree, f"problems/{c.problem}/statement.md") is None:
        raise PathRejected(f"problems/{c.problem}", "no such problem in this run")
    for cited in c.informed_by:
        _commit(repo, cited, "informed_by")
    return files


def _check_text(c: Contribution) -> None:
    """The commit message's text and the files given as text must be UTF-8 (a model's JSON may
    carry a lone surrogate, which git cannot store)."""
    for what, text in (("title", c.title), ("summary", c.summary), ("self-assessment", c.self_assessment)):
        if not _utf8(text):
            raise ContributionRefused(f"the {what} is not UTF-8 text (it holds a lone surrogate)")
    for path, data in c.files.items():
        if isinstance(data, str) and not _utf8(data):
            raise PathRejected(path, "the content is not UTF-8 text")


def _utf8(text: str) -> bool:
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


def _commit(repo: pygit2.Repository, rev: str, what: str) -> pygit2.Commit:
    try:
        obj = repo.revparse_single(rev)
        return obj.peel(pygit2.Commit)
    except (KeyError, ValueError, pygit2.GitError, pygit2.InvalidSpecError):
        raise ContributionRefused(f"{what} {rev!r} is not a commit of this run") from None


def to_main(repo: pygit2.Repository, files: dict[str, bytes], message: str, op: str) -> Written:
    """Commit `files` (full paths) on top of main and record `op`, by compare-and-swap."""
    main = repo.references["refs/heads/main"]
    tip = repo[main.target]
    tree = trees.update(repo, tip.tree, trees.blobs(repo, files))
    commit = repo.create_commit(None, committer(), committer(), message, tree, [tip.id])
    with repo.transaction() as txn:
        txn.lock_ref("refs/heads/main")
        txn.lock_ref(op_ref(op))
        if repo.references["refs/heads/main"].target != tip.id:
            raise Contention("main moved")
        txn.set_target("refs/heads/main", commit, message=f"gitswarm: {op}")
        txn.set_target(op_ref(op), commit, message=f"gitswarm: {op}")
    return Written(str(commit))


def write(repo: pygit2.Repository, run_id: str, c: Contribution, files: dict[str, bytes]) -> Written:
    """Commit the contribution on `swarm/<episode>` and record its op, all or nothing."""
    branch = branch_ref(c.episode)
    existing = repo.references.get(branch)
    parent = existing.target if existing is not None else _commit(repo, c.parent, "parent").id
    name, email = c.person or (c.worker, f"{c.worker}@gitswarm.local")
    author = pygit2.Signature(name, email, int(time.time()), 0)
    prefix = f"problems/{c.problem}/"
    changes = {**trees.blobs(repo, files, prefix), **{prefix + path: None for path in c.deleted}}
    tree = trees.update(repo, repo[parent].tree, changes)
    commit = repo.create_commit(None, author, committer(), message(run_id, c), tree, [parent])
    with repo.transaction() as txn:
        txn.lock_ref(branch)
        txn.lock_ref(op_ref(c.op))
        done = find_op(repo, c.op)
        if done is not None:
            return Written(done, existed=True)  # leaving the block unchanged commits nothing
        now = repo.references.get(branch)
        if (now.target if now is not None else None) != (existing.target if existing else None):
            raise Contention(f"{branch} moved while writing")
        txn.set_target(branch, commit, message=f"gitswarm: {c.op}")
        txn.set_target(op_ref(c.op), commit, message=f"gitswarm: {c.op}")
    return Written(str(commit))


def adopt(repo: pygit2.Repository, episode: str, op: str, commit: str) -> bool:
    """Set `swarm/<episode>` and the op ref to a commit a remote worker pushed (checked by the
    coordinator's intake), all or nothing; False when the op is already in the run."""
    oid = pygit2.Oid(hex=commit)
    branch = branch_ref(episode)
    with repo.transaction() as txn:
        txn.lock_ref(branch)
        txn.lock_ref(op_ref(op))
        if find_op(repo, op) is not None:
            return False
        txn.set_target(branch, oid, message=f"gitswarm: adopt {op}")
        txn.set_target(op_ref(op), oid, message=f"gitswarm: adopt {op}")
    return True
