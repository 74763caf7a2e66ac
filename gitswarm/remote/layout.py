"""The refs of a run's remote, and who may push each.

- `refs/heads/main`, `refs/gitswarm/{meta,ledger,grades,ops/*}`, `refs/notes/transcripts`:
  the coordinator's only, moved by leased pushes (compare-and-swap on its last value); of its
  op refs only those whose commit main does not reach yet (`oprefs.py`);
- `refs/gitswarm/claims/<episode>`: any worker's, made by an atomic create, then taken over,
  renewed and closed by leased pushes (`claims.py`); deleted by the coordinator once the
  episode is in its published ledger and its results on main or refused (`prune.py`);
- `refs/gitswarm/high-water/<episode>`: the highest episode number ever claimed, moved by
  every push that creates a claim (the old name deleted by lease, the new one created), so
  numbers are never handed out twice even after their claims are pruned;
- `refs/gitswarm/workers/<name>/<ref>`: worker `<name>`'s only, by leased pushes.
- `refs/gitswarm/people/<episode>`: a person's contribution (`gitswarm note`, `gitswarm review`:
  episode `person-...`), made by an atomic create; the coordinator checks it as it checks a
  worker's (`intake.check`) and adopts it, never moves it.

A worker runs its episodes in a local run repository laid out as today's, and its local ref
`refs/<ref>` goes to the remote as `refs/gitswarm/workers/<name>/<ref>`: its branches
(`heads/swarm/<episode>`), op refs (`gitswarm/ops/<op>`), ledger book (`gitswarm/ledger`),
transcript notes (`notes/transcripts`), the transcripts of its episodes without a commit
(`gitswarm/transcripts`) and their lossless conversations (`gitswarm/conversations`, which
stay there: `engine.conversation` reads them). No two workers push the same ref, so the only ref
they contend on is a claim. Leases on a worker's own refs still matter: two processes
started with the same name fail at their first push instead of overwriting each other.
"""

from __future__ import annotations

from gitswarm.memory.model import check_name

CLAIMS = "refs/gitswarm/claims/"
HIGH_WATER = "refs/gitswarm/high-water/"
WORKERS = "refs/gitswarm/workers/"
PEOPLE = "refs/gitswarm/people/"
MAIN = "refs/heads/main"
RUN_LEDGER = "refs/gitswarm/run-ledger"
"""A worker's local name for the coordinator's ledger (its own book is refs/gitswarm/ledger);
only a worker's folder has it."""


def claim_ref(episode: str) -> str:
    return f"{CLAIMS}{check_name('episode', episode)}"


def episode_of(ref: str) -> str | None:
    """The episode a claim ref claims, or None for another ref."""
    return ref.removeprefix(CLAIMS) if ref.startswith(CLAIMS) else None


def worker_prefix(worker: str) -> str:
    return f"{WORKERS}{check_name('worker', worker)}/"


def worker_ref(worker: str, local: str) -> str:
    """Where a worker's local ref `refs/<ref>` lives on the remote."""
    if not local.startswith("refs/"):
        raise ValueError(f"{local}: a full ref name (refs/...) is needed")
    return worker_prefix(worker) + local.removeprefix("refs/")


def local_ref(ref: str) -> tuple[str, str] | None:
    """(worker, local ref) for a ref under `refs/gitswarm/workers/`, else None."""
    if not ref.startswith(WORKERS):
        return None
    worker, _, rest = ref.removeprefix(WORKERS).partition("/")
    return (worker, f"refs/{rest}") if worker and rest else None


def claims_refspec() -> str:
    """Fetch every claim into the mirror under the same names (claims move by takeover)."""
    return f"+{CLAIMS}*:{CLAIMS}*"


def high_water_refspec() -> str:
    return f"+{HIGH_WATER}*:{HIGH_WATER}*"


def workers_refspec(worker: str | None = None) -> str:
    """Fetch one worker's refs, or every worker's, into the mirror under the same names."""
    prefix = WORKERS if worker is None else worker_prefix(worker)
    return f"+{prefix}*:{prefix}*"


def person_ref(episode: str) -> str:
    """Where a person's contribution of episode `episode` waits on the remote."""
    return f"{PEOPLE}{check_name('episode', episode)}"


def people_refspec() -> str:
    """Fetch every person's contribution into the mirror under the same names."""
    return f"+{PEOPLE}*:{PEOPLE}*"
