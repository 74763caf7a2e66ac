"""The run's high-water mark: the highest episode number ever claimed, kept apart from the claims.

Claim numbering used to read the highest claim ref, so a claim could never be deleted: its
number would be handed out again, and a number claimed twice breaks what op ids promise
(`claim-<episode>-<generation>` names one holding's results; a late push of an expired
claim must be recognised, not merged twice). The mark lets the coordinator prune claims.

It is a ref *name*, `refs/gitswarm/high-water/<episode>`, so one ls-remote tells it without
fetching an object. Every push that creates claims moves it in the same atomic push: the
names seen are deleted, each leased on the value seen, and the new highest is created
(pointing to that claim's commit). Two claimers that read the same mark cannot both land,
so every number is created once, by the push that raised the mark past it, and a number at
or below the mark is never created again (`Claims.claim` refuses it: `ClaimPruned`).

Two names can exist at once only when two mark-less claimers started a run's first marks
(each create is of a different name); the higher one counts, and the next claim deletes both.
A remote without a mark (a run begun before it existed) starts from its highest claim ref.
Moving the mark deletes a ref, so a server that declines every delete (a hook; git's own
`receive.denyDeletes` covers only refs/heads/) cannot hand out numbers beyond the first push.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gitswarm.remote import layout
from gitswarm.remote.transport import Remote, Update


@dataclass(frozen=True)
class Mark:
    number: int
    """The highest episode number claimed so far (0: none)."""
    refs: dict[str, str] = field(default_factory=dict)
    """The mark's names on the remote, as last seen, → their values (the leases of a move)."""

    def raised(self, number: int, commit: str) -> list[Update]:
        """The updates that move the mark to `number` (above it), at the claim commit `commit`."""
        if number <= self.number:
            raise ValueError(f"the high-water mark is {self.number}: {number} is not above it")
        return [*(Update(ref, None, old) for ref, old in self.refs.items()),
                Update(ref_of(number), commit, None)]


def ref_of(number: int) -> str:
    return f"{layout.HIGH_WATER}e{number:05d}"


def number_of(ref: str) -> int:
    """The number a claim ref or a mark ref names (`.../e00042` → 42); 0 for another name."""
    name = ref.rsplit("/", 1)[-1]
    return int(name[1:]) if name[:1] == "e" and name[1:].isdigit() else 0


def of_refs(refs: dict[str, str]) -> Mark | None:
    """The mark among refs an ls-remote or a mirror listed, or None when it holds none."""
    marks = {ref: oid for ref, oid in refs.items() if ref.startswith(layout.HIGH_WATER)}
    return Mark(max(map(number_of, marks)), marks) if marks else None


def read(remote: Remote) -> Mark:
    """The remote's mark now (one ls-remote); without one, its highest claim (a second)."""
    found = of_refs(remote.refs(f"{layout.HIGH_WATER}*"))
    if found is not None:
        return found
    return Mark(max(map(number_of, remote.refs(f"{layout.CLAIMS}*")), default=0))


def local(remote: Remote) -> int:
    """The mark as the mirror last fetched it (`Claims.all` fetches it with the claims); 0: none."""
    found = of_refs(dict.fromkeys(remote.gitdir().refs(layout.HIGH_WATER), ""))
    return found.number if found is not None else 0
