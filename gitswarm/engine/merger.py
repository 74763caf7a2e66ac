"""The merger: composes finished branches into main as they arrive, asks the merger model
to compose a file both sides changed, and keeps each problem's SUMMARY.md current: the merger
model's summary every `summary_every` merges on a problem, and after the other merges a digest
assembled from the items (`engine.digest`) where no written summary stands."""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import anyio

from gitswarm.core.event_types import ConflictResolved, Merged, MergerFailed, Settled, Summarised
from gitswarm.domain import selection
from gitswarm.domain.episode import EpisodeRecord
from gitswarm.domain.kinds import Kind
from gitswarm.domain.rule import Rule
from gitswarm.engine import digest
from gitswarm.engine.ledger import Ledger
from gitswarm.engine.plan import summaries_read
from gitswarm.engine.shared import Caller, Model, Shared, replied
from gitswarm.memory import commitmeta, people
from gitswarm.memory.compose import Composed, Conflict, Resolution
from gitswarm.resources import render

FINAL_PASSES = 3
"""Passes after the last one for conflicts whose fix went stale; each needs main to move
under it again, which only the merger itself does at the end."""
FENCE = re.compile(r"^```[\w-]*\n(.*)\n```\s*$", re.DOTALL)


@dataclass
class Merger:
    """Runs beside the episodes; `kick()` after a branch is written, `run()` until stopped."""

    shared: Shared
    ledger: Ledger
    model: Model
    """The merger's model (may differ from the workers')."""
    merges_since_summary: Counter = field(default_factory=Counter)
    _wake: anyio.Event = field(default_factory=anyio.Event)
    _record: EpisodeRecord | None = None
    _waiting: set[str] = field(default_factory=set)
    """Episodes whose branches wait to be composed."""
    _everything: bool = True
    """Compose every pending branch (at start, and at the end), not only the known ones."""

    def kick(self, episode: str | None = None) -> None:
        """A branch is ready (or, without an episode, look for every pending branch)."""
        if episode is None:
            self._everything = True
        else:
            self._waiting.add(episode)
        self._wake.set()

    async def run(self, stop: anyio.Event) -> None:
        """Compose whenever kicked; after `stop`, a last pass over everything pending, and
        a few more while a resolved conflict's fix went stale (main moved under it, e.g. by
        a summary written in the same pass), so no branch is left unmerged at the end."""
        while not stop.is_set():
            with anyio.move_on_after(1.0) as idle:
                await self._wake.wait()
            if idle.cancelled_caught:  # nothing kicked it: a person's note may wait (`gitswarm note`)
                self._waiting.update(await self.shared.store.run(people.pending, self.shared.memory))
            self._wake = anyio.Event()
            await self.compose_all()
        self._everything = True
        await self.compose_all()
        for _ in range(FINAL_PASSES):
            if not self._waiting:
                return
            await self.compose_all()

    async def compose_all(self) -> None:
        if not self._everything and not self._waiting:
            return
        shared = self.shared
        requested = None if self._everything else sorted(self._waiting)
        self._everything = False
        self._waiting -= set(requested or self._waiting)
        result, at = await self._compose(requested)
        conflicts = list(result.conflicts)
        while conflicts:
            if shared.index.seen_tip != at:  # main moved: some conflicts may hold an old `ours`
                conflicts, at = await self._refresh(conflicts)
                continue
            episode = conflicts[0].episode  # all of its conflicts at once: each fix alone would
            mine = [c for c in conflicts if c.episode == episode]  # leave the others conflicting
            conflicts = [c for c in conflicts if c.episode != episode]
            again, _ = await self._compose([episode], await self._fixes(mine))
            if again.merged:
                for conflict in mine:
                    shared.events.emit(ConflictResolved(episode=episode, path=conflict.path))
            else:
                self._waiting.add(episode)  # main moved under the fixes: try again

    async def _compose(self, episodes: list[str] | None,
                       fixes: Sequence[Resolution] = ()) -> tuple[Composed, str | None]:
        """Compose `episodes` (None: every pending branch) with `fixes`; the result, and the
        tip its conflicts were found against (main after its merge, else as it was)."""
        shared = self.shared
        before = shared.index.seen_tip
        result = await shared.store.compose(episodes, fixes)
        await self._after(result)
        return result, result.commit or before

    async def _refresh(self, conflicts: list[Conflict]) -> tuple[list[Conflict], str | None]:
        """The conflicts as of main's tip, and that tip: those whose `ours` main still holds
        as they are, the others composed again (they merge, or conflict anew), since a fix of
        an `ours` main no longer holds would be refused, its model call thrown away. (When
        that compose moves main, the caller checks again.)"""
        shared = self.shared
        at = shared.index.seen_tip
        assert at is not None, "the index has taken in main since the run loaded"
        now = await shared.store.blob_ids([c.path for c in conflicts], at)
        stale = sorted({c.episode for c in conflicts if now[c.path] != c.ours_blob})
        kept = [c for c in conflicts if c.episode not in stale]
        if stale:
            again, _ = await self._compose(stale)
            kept += again.conflicts
        return kept, at

    async def _after(self, result: Composed) -> None:
        if result.commit is None:
            return
        shared = self.shared
        tip = result.commit
        await shared.store.update_index(shared.index, tip)
        view = shared.view
        before = set(view.settled)
        view.settle(*selection.standing_of(shared.index, view.problems, Rule.of(view.config)))
        for problem in sorted(view.settled - before):  # no more episodes go there; selected at the end
            shared.events.emit(Settled(problem=problem))
        shared.events.emit(Merged(commit=tip, episodes=result.merged, parents=len(result.merged) + 1))
        await self._summaries(result, summaries_read(view.config))

    async def _summaries(self, result: Composed, read: bool) -> None:
        """SUMMARY.md of each problem the merge touched: the merger model's every
        `summary_every` merges on an open problem (a settled one's is read by no one who could
        change it) where episodes `read` them, else a digest: an isolated arm's episodes read
        none, so it calls no model for them, but its SUMMARY.md still says where the problem
        stands for the person reading the run."""
        shared = self.shared
        touched = set()
        for episode in result.merged:
            record = self.ledger.episodes.get(episode)
            if record is not None:
                self.merges_since_summary[record.problem] += 1
                touched.add(record.problem)
        for problem, count in list(self.merges_since_summary.items()):
            if read and count >= shared.view.config.summary_every and problem not in shared.view.settled:
                self.merges_since_summary[problem] = 0
                if await self._summarise(problem):
                    touched.discard(problem)
        for problem in sorted(touched):
            await self._digest(problem)

    async def _fixes(self, conflicts: list[Conflict]) -> list[Resolution]:
        """One branch's conflicts, each resolved by the merger model, the calls side by side."""
        texts: dict[str, str] = {}

        async def resolve(conflict: Conflict) -> None:
            texts[conflict.path] = await self._resolve(conflict)

        async with anyio.create_task_group() as group:
            for conflict in conflicts:
                group.start_soon(resolve, conflict)
        return [Resolution(c.episode, c.path, c.ours_blob, texts[c.path]) for c in conflicts]

    async def _resolve(self, conflict: Conflict) -> str:
        prompt = render("merger_conflict.md.j2", path=conflict.path, base=conflict.base or "",
                        ours=conflict.ours or "", theirs=conflict.theirs or "")
        text = await self._ask(prompt)
        if text is None:  # no usable answer: keep both sides rather than lose either
            text = f"{conflict.ours or ''}\n\n{conflict.theirs or ''}\n"
        return text

    async def _summarise(self, problem: str) -> bool:
        """The merger model's summary of `problem` on main; False when it gave none."""
        shared = self.shared
        items = await shared.store.run(self._summary_inputs, problem)
        text = await self._ask(render("merger_summary.md.j2", problem=problem, **items))
        if not text or not text.lstrip().startswith("#"):
            return False
        text = await shared.store.run(digest.with_standing, shared.memory, shared.index, problem,
                                      Rule.of(shared.view.config), problem in shared.view.settled, text)
        await self._write_summary(problem, text, "summary", "the merger's summary of the problem")
        return True

    async def _digest(self, problem: str) -> None:
        """The problem's summary assembled from its items (`engine.digest`), where SUMMARY.md
        holds no written summary: no model call."""
        shared, view = self.shared, self.shared.view
        text = await shared.store.run(digest.assemble, shared.memory, shared.index, problem,
                                      Rule.of(view.config), problem in view.settled)
        if text is not None:
            await self._write_summary(problem, text, "digest", "assembled from its items, without a model call")

    async def _write_summary(self, problem: str, text: str, what: str, subject: str) -> None:
        shared = self.shared
        op = f"{what}-{problem}-{(shared.index.seen_tip or '')[:16]}"
        written = await shared.store.commit_to_main(
            {f"problems/{problem}/SUMMARY.md": text.encode()}, f"summary({problem}): {subject}",
            commitmeta.ContributionRecord(op=op, problem=problem, kind=Kind.SUMMARY, worker="merger"))
        await shared.store.update_index(shared.index, written.commit)
        shared.events.emit(Summarised(problem=problem, commit=written.commit, assembled=what == "digest"))

    def _summary_inputs(self, problem: str) -> dict:
        memory, index = self.shared.memory, self.shared.index
        base = f"problems/{problem}"
        summary = (memory.read_file(f"{base}/SUMMARY.md") or b"").decode("utf-8", "replace")
        newest = list(index.problems[problem].items)[-12:]
        items = [{"path": p, "text": (memory.read_file(f"{base}/{p}") or b"").decode("utf-8", "replace")[:3000]}
                 for p in newest]
        return {"summary": summary[:6000], "items": items}

    async def _ask(self, prompt: str) -> str | None:
        """One merger model call, charged to the ledger's merger record; None if it failed."""
        from gitswarm.models.errors import ModelError

        merger, began = Caller("merger", self.shared.view.config.merger), time.monotonic()
        if (reached := self.shared.check_caps()) is not None:  # the run stops: no more calls
            self.shared.events.emit(MergerFailed(error=reached.detail))
            return None
        try:
            reply = await self.model.complete([{"role": "user", "content": prompt}])
        except ModelError as exc:
            self._charge(exc.usage)  # a failed call's tokens are paid for too
            replied(self.shared, exc.usage, began, merger, error=exc.kind)
            self.shared.events.emit(MergerFailed(error=str(exc)))
            return None
        self._charge(reply.usage)
        replied(self.shared, reply.usage, began, merger, finish=reply.finish_reason)
        text = (reply.content or "").strip()
        match = FENCE.match(text)
        return (match.group(1) if match else text) + "\n" if text else None

    def _charge(self, usage) -> None:
        """Charge a merger call to the ledger's merger record, written with the next episode's
        save rather than a commit per call."""
        record = self._record or self.ledger.episodes.get("merger") or EpisodeRecord("merger", "merger", "", "merger")
        self._record = record
        record.model = self.shared.view.config.merger
        self.ledger.charge(record, usage)
        self.ledger.changed(record)
