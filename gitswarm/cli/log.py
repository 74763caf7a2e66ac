"""`gitswarm log RUN`: the reasoning history, one readable block per contribution."""

from __future__ import annotations

import datetime
import difflib
from collections.abc import Iterable
from pathlib import Path
from typing import Annotated

import typer

from gitswarm.cli.common import Exit, fail, user_errors

# The memory's modules load pygit2: imported in the commands, so `gitswarm --help` starts light.


def log(
    run: Annotated[Path, typer.Argument(help="The run folder, e.g. runs/imo.", show_default=False)],
    problem: Annotated[str | None, typer.Option(help="Only this problem id.")] = None,
    worker: Annotated[str | None, typer.Option(help="Only this worker, e.g. w07.")] = None,
    kind: Annotated[str | None, typer.Option(
        help="Only this kind: note, lemma, attempt, review, code, summary, nomination, merge.")] = None,
    pending: Annotated[bool, typer.Option(
        "--pending", help="Include contributions not yet merged into main.")] = False,
    limit: Annotated[int | None, typer.Option("--limit", "-n", min=1, help="Show at most N commits.")] = None,
    oneline: Annotated[bool, typer.Option("--oneline", help="One line per commit.")] = False,
    episode: Annotated[str | None, typer.Option(
        help="Show this episode (e.g. e00042): how it ended and its whole transcript, whatever its outcome "
             "(failed and abstained episodes have no commit, but keep their transcript).")] = None,
) -> None:
    """Show the reasoning history of a run, newest first.

    Plain `git -C RUN log` shows the same commits; this view adds who built on what.
    `--episode ID` shows one episode's record and transcript instead.
    """
    from gitswarm.memory import commitmeta
    from gitswarm.memory.repo import Memory

    if episode is not None:
        show_episode(run, episode)
        return
    if kind is not None and kind not in kinds():
        raise unknown(f"--kind {kind!r} is not a kind", kind, kinds(), "the kinds")
    with user_errors():
        memory = Memory(run)
        if problem is not None and problem not in memory.problems():
            raise unknown(f"{run} has no problem {problem!r}", problem, memory.problems(), "its problems")
        commits = memory.log(problem, worker, kind, include_pending=pending, limit=limit)
        if worker is not None and not commits:
            from gitswarm.memory import ledgerbook

            workers = sorted({r.worker for r in ledgerbook.episodes(memory).values() if r.worker})
            if worker not in workers:
                raise unknown(f"{run} has no worker {worker!r}", worker, workers, "its workers")
    reviewed = Reviewed(memory.snapshot())
    for c in commits:
        meta = c.meta
        review = meta if isinstance(meta, commitmeta.ReviewRecord) and meta.verdict else None
        verdict = str(review.verdict) if review is not None else None
        if oneline:
            typer.echo(f"{c.id[:10]} {c.author:<8} {c.subject}" + (f" [{verdict}]" if verdict else ""))
            continue
        when = datetime.datetime.fromtimestamp(c.time).strftime("%Y-%m-%d %H:%M:%S")
        episode = getattr(meta, "episode", "")
        typer.echo(f"commit {c.id}\n{c.author} · {when}" + (f" · episode {episode}" if episode else ""))
        typer.echo(f"\n    {c.subject}")
        if review is not None:
            typer.echo(f"    verdict: {verdict} · reviews {reviewed.path(review.reviews, c.problem)}")
        if c.body:
            typer.echo("\n" + "\n".join(f"    {line}" for line in c.body.splitlines()))
        cited = c.informed_by
        if cited:
            typer.echo(f"\n    built on: {', '.join(x[:10] for x in cited)}")
        if isinstance(meta, commitmeta.ContributionRecord) and meta.tokens:
            typer.echo(f"    model {meta.model or '?'} · tokens {meta.tokens} · USD {meta.cost_usd or '?'}")
        typer.echo("")


def kinds() -> tuple[str, ...]:
    """The kinds of commit of the memory (`Kind`) that `--kind` takes."""
    from gitswarm.domain.kinds import KIND_FOLDERS

    return (*KIND_FOLDERS, "summary", "nomination", "merge")


def unknown(what: str, value: str, valid: Iterable[str], named: str) -> typer.Exit:
    """The exit for a value that names nothing: `what`, then the valid values, nearest first."""
    return fail(f"{what}; {named}, nearest first: {', '.join(nearest_first(value, valid)) or '(none)'}",
                Exit.BAD_INPUT)


def nearest_first(value: str, valid: Iterable[str]) -> list[str]:
    """Every valid value, the most similar to `value` first (difflib's ratio)."""
    valid = list(dict.fromkeys(valid))
    return difflib.get_close_matches(value, valid, n=len(valid), cutoff=0.0) if valid else []


class Reviewed:
    """The path of the candidate a review reviews, from the files the reviewed commit wrote
    (`commitmeta.changes`), each commit read once."""

    def __init__(self, snapshot) -> None:
        self.snapshot = snapshot
        self.known: dict[str, str] = {}

    def path(self, commit: str, problem: str) -> str:
        """`attempts/<name>` or `code/<slug>`, then the commit; the bare commit when its files do not say."""
        from gitswarm.domain.kinds import CANDIDATE_FOLDERS, candidate_path

        if not commit:
            return "?"
        if commit not in self.known:
            try:
                files = self.snapshot.changes(self.snapshot.commit(commit), problem).written
            except (KeyError, ValueError):
                files = ()
            found = [candidate_path(f) for f in files if f.startswith(CANDIDATE_FOLDERS)]
            self.known[commit] = f"{found[0]} ({commit[:10]})" if found else commit[:10]
        return self.known[commit]


def show_episode(run: Path, episode: str) -> None:
    """One episode as the ledger has it, then its transcript: the note on its commit, or the
    transcripts book's file for an episode without one (a remote worker's, under its refs)."""
    from gitswarm.cli.common import Exit, fail
    from gitswarm.engine.ledger import Ledger
    from gitswarm.memory.repo import Memory

    with user_errors():
        memory = Memory(run)
        record = Ledger.load(memory).episodes.get(episode)
    if record is None:
        raise fail(f"{run} has no episode {episode!r}: `gitswarm log {run} --oneline` lists the commits, each "
                   "with its episode, and `gitswarm status` the run's totals", Exit.BAD_INPUT)
    failure = f" ({record.failure})" if record.failure else ""
    typer.echo(f"episode {record.episode} · {record.worker} on {record.problem} · {record.status}{failure}")
    if record.note:
        typer.echo(f"    {record.note}")
    typer.echo(f"    tokens in={record.tokens_in} out={record.tokens_out} · {record.calls} calls "
               f"({record.failed_calls} failed)" + (f" · commit {record.commit}" if record.commit else ""))
    if record.calls_in:
        cached = f", {record.cache_read / record.tokens_in:.0%} from the cache" if record.tokens_in else ""
        typer.echo(f"    input tokens per call: {' '.join(str(n) for n in record.calls_in)}{cached}")
    if record.compactions or record.stubbed:
        typer.echo(f"    context: {record.compactions} compaction(s), {record.stubbed} batch(es) of old tool outputs "
                   "stubbed (the transcript's `### context` sections say where and by what)")
    text, where = _transcript(memory, record)
    if text is None:
        typer.echo(f"\n(no transcript kept: {where})")
        return
    typer.echo(f"\n--- transcript ({where}) ---\n{text}")


def _transcript(memory, record) -> tuple[str | None, str]:
    """The episode's transcript and where it was read, or None and why there is none."""
    from gitswarm.remote import layout

    if record.commit:
        return memory.transcript(record.commit), f"git notes --ref=transcripts show {record.commit[:10]}"
    if not record.transcript and record.calls:
        return None, (f"the episode made {record.calls} model call(s) and was cut off before its transcript was "
                      "written: a crash, or a stop at once (a third Ctrl-C, SIGKILL)")
    if not record.transcript:
        return None, "the episode ended before its first model call, or was run by a gitswarm without this record"
    spec, text = record.transcript, memory.book_text(record.transcript)
    if text is None and record.process:  # a remote worker's episode, read on the coordinator
        ref, _, path = spec.partition(":")
        spec = f"{layout.worker_ref(record.process, ref)}:{path}"
        text = memory.book_text(spec)
    return text, f"git show {spec}" if text is not None else f"{spec} is not in this folder"
