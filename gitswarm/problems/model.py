"""Typed problems and problem sets, as loaded from `problems/<set>/`."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import TypedDict


class Kind(StrEnum):
    """What a solution to the problem is, and so how the referee grades it."""

    PROOF = "proof"
    ANSWER = "answer"
    PROGRAM = "program"
    REPRODUCE = "reproduce"
    """Rebuild a program from its documentation; graded by behavioural tests (ProgramBench)."""


class Parts(TypedDict, total=False):
    """A `Problem`'s folders and reproduce fields, as the loader resolves them from its front matter."""

    tests_dir: Path | None
    starter_dir: Path | None
    reference_dir: Path | None
    executable: str | None
    docs_dir: Path | None
    build: str | None
    clean_hashes: tuple[str, ...]
    image: str | None
    grade_image: str | None
    origin: Path | None


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
    executable: str | None = None
    """Visible (reproduce): the program's name, as its documentation calls it."""
    docs_dir: Path | None = None
    """Visible (reproduce): the program's documentation, copied into the memory."""
    build: str | None = None
    """Hidden (reproduce): shell command that builds the reference executable in its folder."""
    clean_hashes: tuple[str, ...] = ()
    """Hidden (reproduce): sha256 of files a candidate may not contain (ProgramBench's
    `eval_clean_hashes`); the reference executable's own hash is always added when grading."""
    image: str | None = None
    """Visible (reproduce): the container image every program of the problem's episodes runs in
    (the worker's shell, `run_python`, the reference's build); None: the host's sandbox root."""
    grade_image: str | None = None
    """Hidden (reproduce): the image `compile.sh` and the hidden tests run in when grading
    (ProgramBench's `:task` image); None: `image`, or the host's sandbox root without one."""
    origin: Path | None = None
    """Hidden (reproduce): the file the reference executable was imported from; a candidate's
    sandbox never shows it (`sandbox.copies`)."""

    @property
    def grading_image(self) -> str | None:
        """The image grading runs in: `grade_image`, else `image`, else None (the host's root)."""
        return self.grade_image or self.image

    @property
    def reference_in_image(self) -> bool:
        """The reference is the image's own `./executable` (no reference folder): it is run in the
        image, never copied out of it."""
        return self.image is not None and self.reference_dir is None

    def visible_files(self) -> dict[str, bytes]:
        """Files of this problem that agents may read, relative to `problems/<id>/`."""
        files = {"statement.md": self.statement_markdown().encode()}
        for name, folder in (("starter", self.starter_dir), ("docs", self.docs_dir)):
            if folder is None:
                continue
            for p in _files_of(folder):
                files[f"{name}/{p.relative_to(folder).as_posix()}"] = p.read_bytes()
        return files

    def statement_markdown(self) -> str:
        """The statement as agents see it: title, kind, source, text. Never a hidden part."""
        header = f"# {self.title}\n\n- id: `{self.id}`\n- kind: {self.kind}\n"
        if self.source:
            header += f"- source: {self.source}\n"
        if self.executable:
            header += f"- executable: `{self.executable}`\n"
        return f"{header}\n{self.statement.strip()}\n"

    def hidden_texts(self) -> list[str]:
        """Every hidden text, for leak checks: answer, solution, grading, build command, and the
        test and reference files (for reproduce problems every text file there: sources,
        `tests.json`, build scripts; binaries such as a reference executable are left out)."""
        texts = [t for t in (self.answer, self.solution, self.grading, self.build) if t]
        for folder in (self.tests_dir, self.reference_dir):
            if folder is None:
                continue
            if self.kind is not Kind.REPRODUCE:
                texts += [p.read_text() for p in sorted(folder.rglob("*.py"))]
                continue
            for p in _files_of(folder):
                try:
                    texts.append(p.read_bytes().decode("utf-8"))
                except UnicodeDecodeError:
                    continue
        return texts


def _files_of(folder: Path | None) -> list[Path]:
    """The files below `folder`, sorted, without Python caches."""
    if folder is None:
        return []
    return [p for p in sorted(folder.rglob("*")) if p.is_file() and "__pycache__" not in p.parts]


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
