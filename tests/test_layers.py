"""The layers by their imports, read from the source's syntax trees (every import, a lazy one
inside a function or one under TYPE_CHECKING included): the views import no engine module;
core/ and domain/ import neither the engine nor the memory; domain/ imports nothing of
gitswarm but the base layer, and no git."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import gitswarm

PACKAGE = Path(gitswarm.__file__).parent
VIEWS = ("readmodel", "report", "tui", "export")
BASE = ("gitswarm.core", "gitswarm.domain", "gitswarm.usage", "gitswarm.errors")


def module_of(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every import in `path`: `from x import y` gives x and x.y (y may be
    a module), a relative import is resolved against the module's package."""
    package = module_of(path) if path.name == "__init__.py" else module_of(path).rpartition(".")[0]
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}" if base else anchor
            found.append((node.lineno, base))
            found += [(node.lineno, f"{base}.{alias.name}") for alias in node.names]
    return found


def offending(packages: tuple[str, ...], bad) -> list[str]:
    """`file:line module` for each import in `packages` (folders of gitswarm/) that `bad` names."""
    return [f"{path.relative_to(PACKAGE.parent)}:{line} {name}"
            for package in packages for path in sorted((PACKAGE / package).rglob("*.py"))
            for line, name in imports(path) if bad(name)]


def within(name: str, *prefixes: str) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def test_the_walk_sees_lazy_and_type_checking_imports():
    found = {name for _, name in imports(PACKAGE / "tui" / "reader.py")}
    assert "gitswarm.readmodel.read" in found  # inside a method
    assert "gitswarm.domain.index.MemoryIndex" in found  # under TYPE_CHECKING


@pytest.mark.parametrize("view", VIEWS)
def test_views_import_no_engine(view: str):
    assert offending((view,), lambda name: within(name, "gitswarm.engine")) == []


@pytest.mark.parametrize("package", ["core", "domain"])
def test_core_and_domain_import_neither_engine_nor_memory(package: str):
    assert offending((package,), lambda name: within(name, "gitswarm.engine", "gitswarm.memory")) == []


def test_domain_imports_only_the_base_layer_and_no_git():
    def bad(name: str) -> bool:
        return (within(name, "gitswarm") and not within(name, *BASE)) or within(name, "pygit2", "git")
    assert offending(("domain",), bad) == []
