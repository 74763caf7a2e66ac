"""Typed problems and problem sets, as loaded from `problems/<set>/`."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path


class Kind(StrEnum):
    """What a solution to the problem is, and so how the referee grades it."""

    PROOF = "proof"
    ANSWER = "answer"
    PROGRAM = "program"


@dataclass(frozen=True)
class Problem:
    """One problem: a visible statement plus hidden parts that never enter the memory."""

    id: str
    title: str
    kind: Kind
    statement: str
    path: Path
    source: str = ""
    answer: str | None = None
    """Hidden: the answer key (answer problems; optional short answer of proof problems)."""
    solution: str | None = None
    """Hidden: a reference solution."""
    grading: str | None = None
    """Hidden: grading guidelines for the proof referee."""
    tests_dir: Path | None = None
    """Hidden: folder of pytest files a correct program passes (program problems)."""
    starter_dir: Path | None = None
    """Visible: files a worker starts from (program problems)."""
    reference_dir: Path | None = None
    """Hidden: a reference implementation that passes the hidden tests."""

    def visible_files(self) -> dict[str, bytes]:
        """Files of this problem that agents may read, relative to `problems/<id>/`."""
        files = {"statement.md": self.statement_markdown().encode()}
        if self.starter_dir is not None:
            for p in sorted(self.starter_dir.rglob("*")):
                if p.is_file() and "__pycache__" not in p.parts:
                    rel = p.relative_to(self.starter_dir).as_posix()
                    files[f"starter/{rel}"] = p.read_bytes()
        return files

    def statement_markdown(self) -> str:
        """The statement as agents see it: title, kind, source, text. Never a hidden part."""
        header = f"# {self.title}\n\n- id: `{self.id}`\n- kind: {self.kind}\n"
        if self.source:
            header += f"- source: {self.source}\n"
        return f"{header}\n{self.statement.strip()}\n"

    def hidden_texts(self) -> list[str]:
        """Every hidden text, for leak checks: answer, solution, grading, test and reference files."""
        texts = [t for t in (self.answer, self.solution, self.grading) if t]
        for folder in (self.tests_dir, self.reference_dir):
            if folder is not None:
                texts += [p.read_text() for p in sorted(folder.rglob("*.py"))]
        return texts


@dataclass(frozen=True)
class ProblemSet:
    """A folder of problems with optional `set.toml` metadata."""

    name: str
    path: Path
    problems: list[Problem]
    description: str = ""
    defaults: dict[str, object] = field(default_factory=dict)

    def get(self, problem_id: str) -> Problem:
        for problem in self.problems:
            if problem.id == problem_id:
                return problem
        known = ", ".join(p.id for p in self.problems)
        raise KeyError(f"no problem {problem_id!r} in set {self.name!r} (known: {known})")
