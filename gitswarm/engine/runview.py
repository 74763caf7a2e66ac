"""The run's live state as every step's state block shows it (`RunView`): what was spent,
what is settled, verified or set aside, and who is in flight on what. The run's owners write it
(the scheduler, the coordinator, the merger), each fact through one method; episodes only
announce; the prompts (`engine.context`, `engine.reviewing`) read it. The live state alone: the
run's settings are its owners' (`Shared.settings`), and what an episode knows of them is on its
plan (`EpisodePlan.terms`)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class RunView:
    """The run's state as every step's header shows it. Each fact has one writer method, which
    the run's owner (scheduler, coordinator, merger) calls; episodes only announce."""

    problems: list[str] = field(default_factory=list)
    """The problems this run works on."""
    charged: int = 0
    tokens: int = 0
    cost: float = 0.0
    cost_known: bool = True
    settled: set[str] = field(default_factory=set)
    verified: set[str] = field(default_factory=set)
    """Problems not settled that have a verified candidate (nominations choose among several)."""
    episodes: int = 0
    """Episodes of any outcome so far, in flight included (the episode cap counts them)."""
    set_aside: set[str] = field(default_factory=set)
    """Problems no episode is started on any more: their last episodes all abstained or failed."""
    announcements: dict[str, str] = field(default_factory=dict)
    """Worker -> "problem: intent" of the episodes in flight."""
    running: dict[str, tuple[str, str, int]] = field(default_factory=dict)
    """Worker -> (episode, problem, step) of every episode in flight in this process, announced
    or not (step 0: not yet at its first model call)."""

    def counted(self, charged: int, episodes: int) -> None:
        """The episodes so far: those charged to the budget, and those of any outcome."""
        self.charged, self.episodes = charged, episodes

    def spent(self, tokens: int, cost: float, cost_known: bool) -> None:
        """What the run spent so far (every process's, in a run on a remote)."""
        self.tokens, self.cost, self.cost_known = tokens, cost, cost_known

    def settle(self, settled: set[str], verified: set[str] | None = None) -> None:
        """The problems settled now, and those with a verified candidate not settled yet, by the
        selection rule over the index (`selection.standing_of`)."""
        self.settled = settled
        self.verified = (verified or set()) - settled

    def put_aside(self, problems: set[str]) -> None:
        """The problems set aside now (the no-progress rule)."""
        self.set_aside = problems

    def announce(self, worker: str, intent: str | None) -> None:
        """What `worker`'s episode works on ("problem: intent"); None when the episode ended."""
        if intent is None:
            self.announcements.pop(worker, None)
        else:
            self.announcements[worker] = intent

    def working(self, worker: str, episode: str, problem: str, step: int) -> None:
        """`worker`'s episode is in flight on `problem`, at `step` (0: not yet at its first call)."""
        self.running[worker] = (episode, problem, step)

    def finished(self, worker: str) -> None:
        """`worker`'s episode ended: it is no longer in flight, and its announcement is gone."""
        self.running.pop(worker, None)
        self.announcements.pop(worker, None)

    def busy_on(self, problem: str, worker: str) -> str:
        """What the other episodes in flight on `problem` announced, as one text (a candidate
        named in it is being worked on)."""
        return " ".join(a for w, a in self.announcements.items() if w != worker and a.startswith(f"{problem}: "))

    def others_on(self, problem: str, worker: str) -> list[dict]:
        """The other episodes in flight on `problem`: worker, episode, step, announcement."""
        return [{"worker": w, "episode": e, "step": step,
                 "intent": self.announcements.get(w, "").removeprefix(f"{problem}: ")}
                for w, (e, p, step) in sorted(self.running.items()) if p == problem and w != worker]
