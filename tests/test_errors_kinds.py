"""Errors by kind (issue 24): what is transient is decided by libgit2's error in a real
repository, and the kind of an error, not its class or wording, decides the exit code."""

from __future__ import annotations

import threading
from pathlib import Path

import pygit2
import pytest
from conftest import write_set
from typer.testing import CliRunner

from gitswarm.cli.common import Exit, describe
from gitswarm.cli.main import app
from gitswarm.engine import settings
from gitswarm.engine.tools.args import ToolError
from gitswarm.errors import BadInput, EnvironmentFault, Refusal, RunFault
from gitswarm.memory import books
from gitswarm.memory.errors import Contention, NotARun, PathRejected
from gitswarm.memory.retry import is_transient, retry
from gitswarm.models.errors import ModelError
from gitswarm.problems.importers import ImportRefused
from gitswarm.remote.errors import ForeignFolder, OtherProtocol, RemoteError, Unreachable

SIG = pygit2.Signature("t", "t@example.org")


@pytest.fixture
def repo(tmp_path: Path) -> pygit2.Repository:
    repo = pygit2.init_repository(str(tmp_path / "r"), bare=True)
    tree = repo.TreeBuilder().write()
    repo.create_commit("refs/heads/main", SIG, SIG, "one\n", tree, [])
    return repo


def commit(repo: pygit2.Repository, parent: pygit2.Oid, message: str) -> pygit2.Oid:
    return repo.create_commit(None, SIG, SIG, message, repo[parent].peel(pygit2.Commit).tree.id, [parent])


def raised(action) -> BaseException:
    with pytest.raises(Exception) as caught:
        action()
    return caught.value


def lock(repo: pygit2.Repository, name: str) -> Path:
    path = Path(repo.path) / f"{name}.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("")
    return path


def test_a_locked_ref_is_transient_through_both_bindings(repo):
    main = repo.references["refs/heads/main"].target
    lock(repo, "refs/heads/x")
    tip = repo[main]
    through_cffi = raised(lambda: books.commit_changes(repo, "refs/heads/x", None, {}, "m"))
    through_c = raised(lambda: repo.references.create("refs/heads/x", main, force=True))
    assert type(through_cffi) is pygit2.GitError and type(through_c) is OSError  # no code from either
    assert is_transient(through_cffi) and is_transient(through_c)
    lock(repo, "packed-refs")
    assert is_transient(raised(repo.references.compress))
    lock(repo, "packed-refs").unlink()
    lock(repo, "refs/heads/main")
    held = raised(repo.references.compress)  # packing meets a loose ref another writer holds
    assert "failed to lock loose reference" in str(held) and is_transient(held)
    assert tip.id == repo.references["refs/heads/main"].target


def test_a_lost_compare_and_swap_is_transient(repo):
    main = repo.references["refs/heads/main"].target
    stale = repo[main].peel(pygit2.Commit)
    moved = commit(repo, main, "two\n")
    repo.references["refs/heads/main"].set_target(moved)
    ours = raised(lambda: books.commit_changes(repo, "refs/heads/main", stale, {}, "m"))
    assert isinstance(ours, Contention) and is_transient(ours)

    held = repo.references["refs/heads/main"]
    pygit2.Repository(repo.path).references["refs/heads/main"].set_target(main)  # another writer moves it
    in_libgit2 = raised(lambda: held.set_target(commit(repo, moved, "three\n")))
    assert type(in_libgit2) is pygit2.GitError and is_transient(in_libgit2)  # GIT_EMODIFIED
    onto_moved_tip = raised(lambda: repo.create_commit("refs/heads/main", SIG, SIG, "x\n", stale.tree.id, [moved]))
    assert is_transient(onto_moved_tip)
    created_first = raised(lambda: repo.references.create("refs/heads/main", moved))
    assert isinstance(created_first, pygit2.AlreadyExistsError) and is_transient(created_first)


def test_permanent_git_errors_are_not_transient(repo, tmp_path):
    main = repo.references["refs/heads/main"].target
    repo.references.create("refs/heads/a/b", main)
    beneath = raised(lambda: repo.references.create("refs/heads/a", main))
    assert "lock" in str(beneath) and not is_transient(beneath)  # the words said transient, libgit2 does not
    assert not is_transient(raised(lambda: repo.references.create("refs/heads/a..b", main)))
    assert not is_transient(raised(lambda: repo.references["refs/heads/none"]))
    objects = Path(repo.path) / "objects"
    for path in sorted(objects.rglob("*"), reverse=True):
        path.rmdir() if path.is_dir() else path.unlink()
    objects.rmdir()
    objects.write_text("")  # no folder to write objects in
    assert not is_transient(raised(lambda: repo.create_blob(b"x")))
    assert not is_transient(ValueError("the ref is locked"))


def test_retry_waits_out_a_lock_another_writer_releases(repo):
    main = repo.references["refs/heads/main"].target
    held = lock(repo, "refs/heads/x")
    release = threading.Timer(0.05, held.unlink)
    release.start()
    try:
        retry(lambda: books.commit_changes(repo, "refs/heads/x", None, {}, "m"))
    finally:
        release.join()
    assert repo.references["refs/heads/x"].peel(pygit2.Commit).parents == [] and main


def test_retry_raises_a_permanent_error_at_once(repo):
    calls = []

    def action():
        calls.append(1)
        repo.references.create("refs/heads/a..b", repo.references["refs/heads/main"].target)

    with pytest.raises(pygit2.InvalidSpecError):
        retry(action)
    assert len(calls) == 1


def test_existing_errors_have_their_kind():
    assert issubclass(PathRejected, Refusal) and not issubclass(PathRejected, BadInput)
    assert issubclass(ToolError, Refusal) and issubclass(NotARun, BadInput)
    assert issubclass(ImportRefused, BadInput) and issubclass(OtherProtocol, BadInput)
    assert issubclass(ForeignFolder, BadInput) and not issubclass(BadInput, ValueError)
    assert issubclass(RemoteError, EnvironmentFault) and issubclass(ModelError, EnvironmentFault)
    assert issubclass(Contention, RunFault)
    rejected = PathRejected("a/../b", "it leaves the folder")
    assert rejected.path == rejected.where == "a/../b"
    assert str(rejected) == "cannot write 'a/../b': it leaves the folder"
    down = Unreachable("https://example.org/run.git", "connection refused")
    assert down.where == "https://example.org/run.git" and str(down).endswith(down.fix)


def test_the_kind_decides_the_exit_code():
    assert describe(BadInput("bad --workers"))[1] is Exit.BAD_INPUT
    assert describe(Unreachable("https://example.org/r.git", "refused"))[1] is Exit.FAILED
    assert describe(ModelError("auth", "bad key", attempts=1))[1] is Exit.FAILED
    message, code = describe(Contention("main moved"))
    assert code is Exit.FAILED and "run the same command again" in message
    assert describe(ValueError("from deep inside a run")) is None  # a bug: raised as it is
    assert describe(ExceptionGroup("writers", [BadInput("x"), ValueError("y")])) is None
    assert describe(PathRejected("notes/x", "no")) is None  # the model's to read: none reaches a command


def test_a_bad_config_file_is_bad_input_through_the_cli(tmp_path, monkeypatch):
    config = tmp_path / "gitswarm.toml"
    config.write_text("[solve]\nworkres = 3\n")
    monkeypatch.setenv(settings.CONFIG_ENV, str(config))
    result = CliRunner().invoke(app, ["solve", str(write_set(tmp_path / "set")), "--run", str(tmp_path / "run")])
    assert result.exit_code == Exit.BAD_INPUT, result.output
    assert "unknown setting(s) workres" in result.output and "did you mean workers?" in result.output
    assert not (tmp_path / "run").exists()


def test_a_connection_never_made_is_named_so_not_http_500():
    """A refused port (here, for real) or a host name that does not resolve (litellm's words for it,
    under the HTTP 500 it labels them with) is a connection failure: no server answered, so the
    message names no status and no server's log."""
    import socket

    import anyio
    import litellm

    from gitswarm.models.errors import from_litellm, given_up

    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]  # closed again: nothing listens there

    async def refused() -> BaseException:
        with pytest.raises(Exception) as caught:
            await litellm.acompletion(model="openai/x", api_base=f"http://127.0.0.1:{port}/v1", api_key="k",
                                      messages=[{"role": "user", "content": "hi"}], num_retries=0, max_retries=0)
        return caught.value

    dns = litellm.InternalServerError(
        message="OpenAIException - Cannot connect to host api.openai.com:443 ssl:default [Name or service not known]",
        llm_provider="openai", model="gpt-5.5")
    for exc in (anyio.run(refused), dns):
        error = from_litellm(exc, litellm, attempts=1)
        assert error.kind == "connection" and error.retryable
        said = str(given_up(error, 5))
        assert "could not connect 5 times in a row" in said and "check the network" in said
        assert "HTTP 500" not in said and "check its log" not in said


@pytest.mark.parametrize(("error", "code", "words"), [
    (pygit2.GitError("failed to make directory '/r/.run.creating': Read-only file system"), Exit.FAILED,
     ("not allowed", "Read-only file system")),
    (pygit2.GitError("failed to write object: No space left on device"), Exit.FAILED, ("cannot write",)),
    (pygit2.GitError("object not found - no match for id (abc)"), Exit.FAILED, ("git failed in the run's repository",
                                                                            "git -C RUN fsck")),
    (pygit2.InvalidSpecError("'a..b' is not a valid reference name"), Exit.BAD_INPUT, ("git refuses a name",)),
])
def test_every_libgit2_error_is_a_sentence(error: Exception, code: Exit, words: tuple[str, ...]):
    """pygit2's GitError is no OSError: each still reaches the user as one sentence and an exit code."""
    described = describe(error)
    assert described is not None and described[1] == code
    assert all(word in described[0] for word in words), described[0]
