"""Faults in a run on a git remote, through the real CLI (a coordinator and `gitswarm worker`
processes, the demo's scripted model behind one fake server process): a worker SIGKILLed
mid-episode, hostile workers pushing what the coordinator must not merge, the git daemon
restarted mid-run. Each run must then finish with nothing lost or duplicated (`check_run`)."""

from __future__ import annotations

import json
import queue
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path

import pygit2
import pytest
from conftest import git
from test_remote_run import check_run, coordinator, finish, server_repo, worker

from gitswarm.demo import audit
from gitswarm.memory import books
from gitswarm.memory.repo import META_REF
from gitswarm.remote import layout, publish
from gitswarm.remote.claims import Claims
from gitswarm.remote.transport import Remote, Update

pytestmark = pytest.mark.slow
RUN_S = 120
"""A fault run's bound: a stalled run fails here instead of hanging the suite."""


@contextmanager
def processes(*started: subprocess.Popen):
    """Kill whatever is still running at the end, passed or failed."""
    running = list(started)
    try:
        yield running
    finally:
        for p in running:
            if p.poll() is None:
                p.kill()
                p.wait(timeout=10)


def all_end_cleanly(running: list[subprocess.Popen], run_s: float = RUN_S) -> None:
    """The coordinator (first), then every worker, each ended with exit 0."""
    for i, process in enumerate(running):
        code, _, err = finish(process, run_s if i == 0 else 60)
        assert code == 0, err


def lines_of(process: subprocess.Popen) -> queue.Queue:
    """The process's stdout lines, read by a thread (a full pipe would block the process)."""
    found: queue.Queue = queue.Queue()

    def read() -> None:
        for line in process.stdout:
            found.put(line)

    threading.Thread(target=read, daemon=True).start()
    return found


def wait_for(lines: queue.Queue, kind: str, timeout_s: float = 60) -> dict:
    """The data of the first JSON event of `kind` among `lines`."""
    deadline = time.monotonic() + timeout_s
    while (left := deadline - time.monotonic()) > 0:
        try:
            line = lines.get(timeout=left)
        except queue.Empty:
            break
        if line.startswith("{") and json.loads(line).get("kind") == kind:
            return json.loads(line)["data"]
    raise AssertionError(f"no {kind} event within {timeout_s:.0f} s")


def wait_until(what: str, ready: Callable[[], object], timeout_s: float = 60) -> object:
    """`ready()` once it is true, polled; fails saying `what` did not happen in time."""
    deadline = time.monotonic() + timeout_s
    while not (found := ready()):
        assert time.monotonic() < deadline, f"{what} within {timeout_s:.0f} s"
        time.sleep(0.1)
    return found


def adopted_commits(repo: Path) -> dict[str, str]:
    """The commits of workers' episodes the coordinator took in that `repo` holds (a remote,
    or a folder that fetched its main): op -> commit, from its main's history and its op refs
    (the remote keeps an op ref only while its main does not reach the commit)."""
    if not git(repo, "for-each-ref", "refs/heads/main"):
        return {}  # not published yet
    logged = git(repo, "log", "main", "--format=%H %(trailers:key=Gitswarm-Op,valueonly,separator=)")
    held = git(repo, "for-each-ref", "--format=%(objectname) %(refname:lstrip=3)", "refs/gitswarm/ops/")
    found = dict(reversed(line.split(" ", 1)) for line in (logged + "\n" + held).splitlines() if " " in line)
    return {op: commit for op, commit in found.items() if op.startswith("e") and op.endswith("-final")}


def has_stop(folder: Path) -> bool:
    """Whether a worker's folder holds the run's stop ref, as fetched from the remote."""
    found = pygit2.discover_repository(str(folder)) if folder.exists() else None
    return found is not None and publish.STOP_REF in pygit2.Repository(found).references


def events(mirror: Path, kind: str) -> list[dict]:
    path = mirror / "gitswarm-events.jsonl"
    found = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [e["data"] for e in found if e["kind"] == kind]


def ledger_record(mirror: Path, episode: str) -> dict | None:
    return books.get(pygit2.Repository(str(mirror)), "ledger", f"episodes/{episode[:4]}/{episode}.json")


def claim_history(remote: Path, episode: str) -> list[dict]:
    """The episode's claim commits on the remote, oldest first, read with plain git."""
    ref = layout.claim_ref(episode)
    commits = git(remote, "rev-list", "--reverse", ref).split()
    return [json.loads(git(remote, "show", f"{c}:claim.json")) for c in commits]


def check_claims(remote: Path, mirror: Path) -> None:
    """Every claim of the run closed exactly once, and taken into the run's ledger under the
    holder that closed it."""
    for ref in git(remote, "for-each-ref", "--format=%(refname)", layout.CLAIMS).split():
        episode = ref.rsplit("/", 1)[1]
        history = claim_history(remote, episode)
        assert [c["done"] for c in history].count(True) == 1 and history[-1]["done"], history
        record = ledger_record(mirror, episode)
        assert record is not None and record["worker"].startswith(f"{history[-1]['worker']}-w"), record


def test_a_worker_killed_mid_episode_over_git_daemon(tmp_path: Path, model_server: str, git_daemon):
    """The victim's claims expire (ttl 4 s) and other workers take its episodes over; nothing
    it held is lost, and nothing is merged twice."""
    remote = server_repo(git_daemon.base / "run.git")
    url = git_daemon.url("run.git")
    mirror = tmp_path / "mirror"
    with processes(coordinator(url, mirror, model_server, "--prune-batch", "0")) as running:  # claims kept
        victim = worker(url, tmp_path / "v", "victim", model_server, watch=True)
        running.append(victim)
        started = wait_for(lines_of(victim), "episode_started")
        victim.send_signal(signal.SIGKILL)
        victim.wait(timeout=10)
        held = [e for e, c in Claims(Remote(url, tmp_path / "look"), "look", ttl_s=4).all().items()
                if c.worker == "victim" and not c.done]
        assert started["episode"] in held
        running += [worker(url, tmp_path / name, name, model_server) for name in ("a", "b")]
        code, _, err = finish(running[0], RUN_S)
        assert code == 0, err
        for w in running[2:]:
            assert finish(w, 60)[0] == 0
    check_run(mirror, remote)
    assert git(remote, "for-each-ref", layout.worker_ref("victim", "refs/heads/")) == ""  # pushed nothing
    for episode in held:
        history = claim_history(remote, episode)
        assert history[0]["worker"] == "victim" and history[0]["generation"] == 1
        last = history[-1]
        assert last["done"] and last["worker"] in ("a", "b") and last["generation"] >= 2, history
        record = ledger_record(mirror, episode)
        assert record is not None and record["worker"].startswith(f"{last['worker']}-w"), record
    # the coordinator saw each of the victim's holdings taken over (its reported spending kept in the count)
    assert set(held) <= {e["episode"] for e in events(mirror, "taken_over") if e["worker"] == "victim"}
    check_claims(remote, mirror)  # the two live workers raced for these: one holder each


FORGERIES = {
    "outside": "it writes README.md, outside its problem folder",
    "worker": "its Worker trailer 'a-w01' is not one of mallory's",
    "run": "its Run trailer 'another-run' should be",
    "episode": "its Episode trailer 'e00001' should be",
    "problem": "its Problem trailer 'demo-",
    "op": "its Op trailer 'e00001-final' is not this episode's",
    "replay": "-final' is not this episode's",
    "cites": "which is not a commit of main",
    "candidate": "is not an attempt or program of",
    "kind": "only a nomination writes under nominations/",
}
"""Each way `_hostile` forges a pushed episode, and what the coordinator's refusal says."""


def _hostile(url: str, folder: Path, name: str, problem: str, forge: str) -> tuple[str, str]:
    """A worker that claims an episode by hand and closes it with a commit an honest worker
    would not push (`forge`, one of `FORGERIES`: a file outside its folder; a trailer naming
    another worker's slot, another run, another claim's episode or op, another problem; a
    replay of an adopted commit; a cite of a commit not on main (its own claim commit); a
    nomination of a commit that is no candidate; a note writing a nomination); returns the
    episode and the commit pushed."""
    remote = Remote(url, folder)
    remote.fetch([f"+{layout.MAIN}:{layout.MAIN}", f"+{META_REF}:{META_REF}"])
    run_id = json.loads(git(folder, "show", f"{META_REF}:run.json"))["run_id"]
    claims = Claims(remote, name, ttl_s=30)
    claim = claims.claim_next([problem], 1000)[0]
    repo = pygit2.Repository(str(remote.mirror))
    main = repo[remote.local(layout.MAIN)].peel(pygit2.Commit)
    root = git(folder, "rev-list", "--max-parents=0", layout.MAIN).split()[0]
    path, kind, text = "notes/hello.md", "note", "owned\n"
    trailers = {"Run": run_id, "Episode": claim.episode, "Op": f"{claim.episode}-final", "Worker": f"{name}-w01",
                "Problem": problem}
    match forge:
        case "worker":
            trailers["Worker"] = "a-w01"
        case "run" | "episode" | "problem" | "op":
            key, value = {"run": ("Run", "another-run"), "episode": ("Episode", "e00001"),
                          "problem": ("Problem", "demo-shout" if problem != "demo-shout" else "demo-odd-sum"),
                          "op": ("Op", "e00001-final")}[forge]
            trailers[key] = value
        case "cites":
            trailers["Informed-By"] = claim.id  # in the coordinator's mirror, but not on main
        case "candidate":
            path, kind, text = f"nominations/{claim.episode}.md", "nomination", f"---\ncandidate: {root}\n---\n"
            trailers["Candidate"] = root  # on main, but the run's first commit: no attempt
        case "kind":
            path, text = f"nominations/{claim.episode}.md", f"---\ncandidate: {root}\n---\n"
    full = "README.md" if forge == "outside" else f"problems/{problem}/{path}"
    index = pygit2.Index()
    index.read_tree(main.tree)
    index.add(pygit2.IndexEntry(full, repo.create_blob(text.encode()), pygit2.enums.FileMode.BLOB))
    lines = "".join(f"Gitswarm-{k}: {v}\n" for k, v in {**trailers, "Kind": kind, "Files": path}.items())
    sig = pygit2.Signature(name, f"{name}@example.invalid")
    commit = str(repo.create_commit(None, sig, sig, f"{kind}({problem}): hello\n\n{lines}", index.write_tree(repo),
                                    [main.id]))
    if forge == "replay":  # an honest worker's adopted commit, pushed as this episode's
        commit = next(iter(adopted_commits(folder).values()))
    branch = layout.worker_ref(name, f"refs/heads/swarm/{claim.episode}")
    claims.finish([claim], [Update(branch, commit, None)])
    return claim.episode, commit


def _landing(url: str, folder: Path, name: str, problem: str) -> str:
    """A worker whose claim is seen closed before its results are: it closes the claim in one
    push and pushes its commit and ledger record in a second, 2 s later (a remote that moves the
    refs of one atomic push one by one shows a fetch in between the same); returns the episode."""
    remote = Remote(url, folder)
    remote.fetch([f"+{layout.MAIN}:{layout.MAIN}", f"+{META_REF}:{META_REF}"])
    run_id = json.loads(git(folder, "show", f"{META_REF}:run.json"))["run_id"]
    claims = Claims(remote, name, ttl_s=30)
    claim = claims.claim_next([problem], 1000)[0]
    repo = pygit2.Repository(str(remote.mirror))
    main = repo[remote.local(layout.MAIN)].peel(pygit2.Commit)
    index = pygit2.Index()
    index.read_tree(main.tree)
    index.add(pygit2.IndexEntry(f"problems/{problem}/notes/late.md", repo.create_blob(b"late\n"),
                                pygit2.enums.FileMode.BLOB))
    message = (f"note({problem}): late\n\nGitswarm-Run: {run_id}\nGitswarm-Episode: {claim.episode}\n"
               f"Gitswarm-Op: {claim.episode}-final\nGitswarm-Worker: {name}-w01\nGitswarm-Problem: {problem}\n"
               f"Gitswarm-Kind: note\nGitswarm-Files: notes/late.md\n")
    sig = pygit2.Signature(name, f"{name}@example.invalid")
    commit = str(repo.create_commit(None, sig, sig, message, index.write_tree(repo), [main.id]))
    book = layout.worker_ref(name, "refs/gitswarm/ledger").removeprefix("refs/gitswarm/")
    record = {"episode": claim.episode, "worker": f"{name}-w01", "problem": problem, "status": "contribute",
              "commit": commit}
    ledger = books.put(repo, book, {f"episodes/{claim.episode[:4]}/{claim.episode}.json": record}, "ledger")
    claims.finish([claim])
    time.sleep(2)
    remote.push([Update(layout.worker_ref(name, f"refs/heads/swarm/{claim.episode}"), commit, None),
                 Update(books.ref_name(book), ledger, None)])
    return claim.episode


def test_results_seen_after_their_closed_claim_are_taken_in(tmp_path: Path, model_server: str):
    """A closed claim whose results are not in sight yet is taken in once they are, not refused."""
    remote = server_repo(tmp_path / "run.git")
    url = remote.as_uri()
    mirror = tmp_path / "mirror"
    with processes(coordinator(url, mirror, model_server)) as running:
        running += [worker(url, tmp_path / name, name, model_server) for name in ("a", "b", "c")]
        deadline = time.monotonic() + 60
        while "refs/heads/main" not in git(remote, "for-each-ref") and time.monotonic() < deadline:
            time.sleep(0.2)
        late = _landing(url, tmp_path / "lena", "lena", "demo-odd-sum")
        code, _, err = finish(running[0], RUN_S)
        assert code == 0, err
        for w in running[1:]:
            assert finish(w, 60)[0] == 0
    check_run(mirror, remote)
    assert ledger_record(mirror, late)["status"] == "contribute"
    assert git(mirror, "log", "main", "--format=%H", "--grep", f"Gitswarm-Episode: {late}$").strip()


def test_hostile_pushes_are_refused_and_the_run_goes_on(tmp_path: Path, model_server: str):
    """Each of `FORGERIES`, pushed by a hostile worker as one of its episodes: none is merged,
    the coordinator's event log says why, its ledger has the episode failed, and the honest
    workers finish the run."""
    remote = server_repo(tmp_path / "run.git")
    url = remote.as_uri()
    mirror = tmp_path / "mirror"
    with processes(coordinator(url, mirror, model_server)) as running:
        running += [worker(url, tmp_path / name, name, model_server) for name in ("a", "b")]
        wait_until("an episode adopted", lambda: adopted_commits(remote))
        problems = sorted(json.loads(git(remote, "show", f"{META_REF}:settings.json"))["problems"])
        forged = {forge: _hostile(url, tmp_path / "mallory", "mallory", problems[i % len(problems)], forge)
                  for i, forge in enumerate(FORGERIES)}
        code, _, err = finish(running[0], RUN_S)
        assert code == 0, err
        for w in running[1:]:
            assert finish(w, 60)[0] == 0
    check_run(mirror, remote)
    refused = {e["episode"]: e["reason"] for e in events(mirror, "refused")}
    for forge, (episode, commit) in forged.items():
        assert FORGERIES[forge] in refused.get(episode, ""), (forge, refused.get(episode))
        if forge != "replay":  # a replayed commit is on main already, as its own episode's
            assert not audit.is_ancestor(mirror, commit), forge
        assert git(mirror, "for-each-ref", f"refs/gitswarm/ops/{episode}-*") == ""
        record = ledger_record(mirror, episode)
        assert record["status"] == "failed" and "refused by the coordinator" in record["note"], record
    assert git(remote, "show", "main:README.md") != "owned\n"


def test_the_git_daemon_restarted_mid_run(tmp_path: Path, model_server: str, git_daemon):
    """The remote unreachable for a while, mid-run: the coordinator and the workers retry and
    the run finishes as if nothing happened."""
    remote = server_repo(git_daemon.base / "run.git")
    url = git_daemon.url("run.git")
    mirror = tmp_path / "mirror"
    with processes(coordinator(url, mirror, model_server)) as running:
        running += [worker(url, tmp_path / name, name, model_server) for name in ("a", "b")]
        deadline = time.monotonic() + 60
        while len(adopted_commits(remote)) < 3:
            assert time.monotonic() < deadline, "no episode adopted within 60 s"
            time.sleep(0.2)
        git_daemon.stop()
        time.sleep(3)
        git_daemon.start()
        all_end_cleanly(running)
    check_run(mirror, remote)


def test_a_run_whose_workers_all_died_stops_after_its_patience_and_resumes(tmp_path: Path, model_server: str):
    """The only worker SIGKILLed: once its claims expire (4 s) nobody holds or closes one, and
    the coordinator stops after its patience (3 s) as `no_workers`, exit 1, saying how to go on,
    and publishes the stop. The same command with two new workers then finishes the run."""
    remote = server_repo(tmp_path / "run.git")
    url = f"file://{remote}"
    mirror = tmp_path / "mirror"
    with processes(coordinator(url, mirror, model_server, "--patience", "3")) as running:
        victim = worker(url, tmp_path / "v", "victim", model_server, watch=True)
        running.append(victim)
        wait_for(lines_of(victim), "episode_started")
        victim.send_signal(signal.SIGKILL)
        victim.wait(timeout=10)
        code, _, err = finish(running[0], 60)
    assert code == 1, err
    assert "no worker held or closed a claim for 3 s" in err and f"gitswarm worker {url}" in err, err
    assert json.loads(git(remote, "show", "refs/gitswarm/stop:stop.json"))["reason"] == "no_workers"
    assert events(mirror, "run_stopped")[-1]["reason"] == "no_workers"
    folders = [tmp_path / name for name in ("a", "b")]
    with processes(*(worker(url, folder, folder.name, model_server) for folder in folders)) as running:
        # workers started before the coordinator find the old stop: they wait for the run to resume
        wait_until("the workers found the stop", lambda: all(map(has_stop, folders)))
        running.insert(0, coordinator(url, mirror, model_server, "--patience", "30"))
        ended = [finish(p, RUN_S if i == 0 else 60) for i, p in enumerate(running)]
    assert [code for code, _, _ in ended] == [0, 0, 0], ended  # (one worker of two slots alone may set all aside)
    said = [err for _, _, err in ended[1:]]
    assert all("is stopped (no worker held" in err and "the run was resumed; joining it" in err for err in said), said
    check_run(mirror, remote)
    check_claims(remote, mirror)
