"""What an episode contributes: the files it writes in its problem's folder, as one commit
(`memory.Memory.contribute` writes it; its commit carries a `commitmeta.ContributionRecord`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from gitswarm.usage import Usage


@dataclass(frozen=True)
class Contribution:
    """One episode's atomic result: files in its problem folder, as one commit."""

    problem: str
    episode: str
    worker: str
    kind: str
    """note, lemma, attempt, review, code or summary: the commit subject's prefix."""
    title: str
    files: dict[str, bytes | str]
    """Paths relative to `problems/<problem>/`, e.g. `lemmas/sunny-lines.md`."""
    parent: str
    """The commit the worker started from (normally main's tip then)."""
    op: str
    """Stable operation id: writing the same op twice returns the first commit."""
    summary: str = ""
    informed_by: tuple[str, ...] = ()
    model: str = ""
    usage: Usage = field(default_factory=Usage)
    self_assessment: str = ""
    candidate: str = ""
    """A nomination's candidate commit (`commitmeta.NominationRecord.candidate`)."""
    reviews: str = ""
    """A review's reviewed commit (`commitmeta.ReviewRecord.reviews`)."""
    verdict: str = ""
    """A review's verdict (`commitmeta.ReviewRecord.verdict`)."""
    deleted: tuple[str, ...] = ()
    """Paths relative to `problems/<problem>/` the contribution removes (a file a code
    worker's shell command deleted)."""
    person: tuple[str, str] | None = None
    """(name, e-mail) of the person who wrote it (`gitswarm note`, `gitswarm review`): its git
    author, marked as a person's in its record; None for a worker's."""

    def file_bytes(self) -> dict[str, bytes]:
        return {p: d.encode() if isinstance(d, str) else d for p, d in self.files.items()}
