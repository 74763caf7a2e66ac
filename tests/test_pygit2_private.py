"""pygit2 is the memory's own: no module outside `gitswarm/memory/` imports it, and none calls
a pygit2 write. Read from each module's syntax tree (imports inside functions count), not by
a pattern over its text.

`STILL_IMPORTING` lists the modules that still read through pygit2, each with what it still
needs; it may only shrink. A module that stops importing pygit2 must leave the list (the test
fails on a stale entry too), and a module not on it may not start.
"""

from __future__ import annotations

import ast
from pathlib import Path

import gitswarm

PACKAGE = Path(gitswarm.__file__).parent
MEMORY = PACKAGE / "memory"

STILL_IMPORTING: dict[str, str] = {
    # module (relative to gitswarm/): what it still reads through pygit2 itself. Empty since the
    # index's walk of main moved to memory/indexing.py: no module outside memory/ imports pygit2.
}

WRITES = frozenset({"create_commit", "create_blob", "create_blob_fromdisk", "create_blob_fromworkdir",
                    "create_note", "create_reference", "create_reference_direct", "create_tag",
                    "TreeBuilder", "init_repository", "set_target", "compress"})
"""pygit2 calls that write objects or refs (each only in memory/)."""


def outside_memory() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if MEMORY not in p.parents)


def imports_pygit2(tree: ast.AST) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "pygit2" for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "pygit2":
            return True
    return False


def writes(tree: ast.AST) -> list[str]:
    """The pygit2 write calls in `tree` (by method name, and `references.create`/`.delete`)."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        name, owner = node.func.attr, node.func.value
        on_refs = isinstance(owner, ast.Attribute) and owner.attr == "references" and name in ("create", "delete")
        if name in WRITES or on_refs:
            found.append(f"{name} (line {node.lineno})")
    return found


def test_only_the_listed_modules_import_pygit2_outside_the_memory():
    importing = {p.relative_to(PACKAGE).as_posix() for p in outside_memory()
                 if imports_pygit2(ast.parse(p.read_text(encoding="utf-8")))}
    assert sorted(importing - STILL_IMPORTING.keys()) == [], "read through memory (a Snapshot, GitDir) instead"
    assert sorted(STILL_IMPORTING.keys() - importing) == [], "no longer imports pygit2: take it off the list"


def test_no_module_outside_the_memory_writes_git():
    found = {p.relative_to(PACKAGE).as_posix(): w for p in outside_memory()
             if (w := writes(ast.parse(p.read_text(encoding="utf-8"))))}
    assert found == {}, "write through Memory or memory.gitdir.GitDir"


def test_the_write_check_sees_a_write():
    assert writes(ast.parse("repo.references.create('refs/x', oid, force=True)\nrepo.create_commit(None)"))
    assert not writes(ast.parse("repo.references.get('refs/x')\nclaims.create(x)"))
