"""A person's work in the memory (`gitswarm note`, `gitswarm review`): who they are, and the
branch their contribution waits on.

A person's contribution is a `Contribution` like a worker's, checked and written by
`Memory.contribute` on `swarm/<episode>`, its record marked with the person's name
(`commitmeta.ContributionRecord.person`), its git author the person. Its episode id begins with
`person-`, which no scheduler gives, so a running merger (`engine.merger.Merger`) finds it among
the pending branches and composes it like any other, under main's compare-and-swap; with no
run going, the command composes it itself.
"""

from __future__ import annotations

import re
import secrets
import time

import pygit2

from gitswarm.errors import BadInput
from gitswarm.memory.repo import Memory

PREFIX = "person-"
"""The episode ids (and worker names) of people's contributions."""
AUTHOR = re.compile(r"^\s*(?P<name>[^<>]+?)\s*<(?P<email>[^<>\s]+)>\s*$")


def is_person(episode: str) -> bool:
    return episode.startswith(PREFIX)


def pending(memory: Memory) -> list[str]:
    """The people's branches waiting to be composed into main (git thread)."""
    return sorted(e for e in memory.pending() if is_person(e))


def identity(author: str | None, memory: Memory) -> tuple[str, str]:
    """(name, e-mail) of the person: `author` as `Name <email>`, else git's `user.name` and
    `user.email` as the run's repository sees them (its config, then the user's)."""
    if author is not None:
        found = AUTHOR.match(author)
        if found is None:
            raise BadInput(f"--author {author!r} is not `Name <email>`",
                           fix='e.g. --author "Ada Lovelace <ada@example.org>"')
        return found["name"], found["email"]
    config = pygit2.Repository(str(memory.path)).config
    name, email = _get(config, "user.name"), _get(config, "user.email")
    if not name or not email:
        raise BadInput("who is writing? git has no user.name and user.email here",
                       fix='give --author "Name <email>", or set them: git config --global user.name "Your Name"')
    return name, email


def _get(config: pygit2.Config, key: str) -> str:
    try:
        return str(config[key])
    except KeyError:
        return ""


def worker_of(name: str) -> str:
    """The worker name a person's commits carry: `person-` and their name as a plain id."""
    slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")[:40] or "someone"
    return PREFIX + slug


def new_episode() -> str:
    """A fresh episode id for one contribution of a person (time, then randomness)."""
    return f"{PREFIX}{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}-{secrets.token_hex(3)}"
