"""What the read model reads of one problem's folder on main, kept by the folder's tree id.

A problem's item counts, its kind (`statement.md`) and its selection (`SOLUTION.md`) are a
function of its folder's tree alone, and late in a run most folders do not change from one
read to the next. Read from the trees, the 200 folders of a run of 100,000 commits cost a
tenth of a second of `gitswarm status` (hundreds of tree objects unpacked); kept by tree id,
a read unpacks only the folders that changed since the last one.

The file `<run>/gitswarm-folders` keeps them between processes: JSON, tagged with its format,
holding the folders of main's tree as the last reader saw it. A tree id names its content,
so an entry is right whatever wrote it; a file that is missing, unreadable or of another
format is ignored, and a folder read again from git.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from gitswarm.domain.selection import Selection
from gitswarm.memory.beside import write_whole
from gitswarm.readmodel.model import Counts

FILE = "gitswarm-folders"
"""The file's name in the run's git folder (git ignores files it does not know there)."""
FORMAT = "gitswarm-folders/1"


@dataclass(frozen=True)
class Folder:
    """What the read model takes from a problem's folder on main."""

    counts: Counts
    kind: str
    """The problem's kind, as its statement's front matter says (`?` when it does not)."""
    selected: Selection | None
    """What its SOLUTION.md says was selected, or None (none, or one that does not say)."""

    def as_json(self) -> list:
        s = self.selected
        return [list(self.counts.as_dict().values()), self.kind,
                None if s is None else [s.candidate, s.path, s.nominations, s.verified, s.rejected]]

    @classmethod
    def from_json(cls, value: list) -> Folder:
        counts, kind, selected = value
        if selected is None:
            return cls(Counts(*map(int, counts)), str(kind), None)
        candidate, path, nominations, verified, rejected = selected
        return cls(Counts(*map(int, counts)), str(kind), Selection(
            str(candidate), str(path), None if nominations is None else int(nominations),
            None if verified is None else bool(verified), bool(rejected)))


class Folders:
    """The folders of one read, by tree id: those the file beside the run holds, and those this
    read made; `save` writes the ones this read used (the folders of main now)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._kept = _load(path)
        self._used: dict[str, Folder] = {}
        self._made = False

    def get(self, tree_id: str, make: Callable[[], Folder]) -> Folder:
        """The folder of tree `tree_id`: kept, else `make()`."""
        found = self._kept.get(tree_id)
        if found is None:
            found, self._made = make(), True
        self._used[tree_id] = found
        return found

    def save(self) -> None:
        """Write the folders this read used, when it made any or used fewer than the file has:
        whole or not at all, and not at all in a folder this process may not write."""
        if not self._made and len(self._used) == len(self._kept):
            return
        data = json.dumps({"format": FORMAT, "folders": {t: f.as_json() for t, f in self._used.items()}},
                          separators=(",", ":")).encode()
        write_whole(self.path, data)


def _load(path: Path) -> dict[str, Folder]:
    try:
        data = json.loads(path.read_bytes())
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            return {}
        return {str(t): Folder.from_json(v) for t, v in data["folders"].items()}
    except (OSError, ValueError, TypeError, KeyError, IndexError, AttributeError):
        return {}
