"""The README is a front door and docs/ a site: the README stays short, every page is in the
site's nav and every relative link lands on a file; the settings reference the site is built
with documents every field of the settings models. (`mkdocs build --strict`, in .ci/run,
builds the site itself; these need no mkdocs.)"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import yaml

from gitswarm.engine.config import GradeConfig, SolveConfig

ROOT = Path(__file__).resolve().parents[1]
SPEC = importlib.util.spec_from_file_location("docs_site", ROOT / "scripts" / "docs_site.py")
docs_site = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(docs_site)
LINK = re.compile(r"\]\(([^)\s#]+)(#[^)\s]*)?\)")


def _nav_pages(entries) -> list[str]:
    pages = []
    for entry in entries:
        for value in entry.values():
            pages += _nav_pages(value) if isinstance(value, list) else [value]
    return pages


def test_the_readme_is_a_front_door():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.encode()) < 15_000
    headings = re.findall(r"^## (.+)$", readme, flags=re.M)
    assert headings[:2] == ["Quick start", "A real run"] and "Exit codes" in headings and "Documentation" in headings


def test_every_page_is_in_the_nav_and_every_nav_entry_is_a_page():
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    nav = _nav_pages(config["nav"])
    in_docs = sorted(p.name for p in (ROOT / "docs").glob("*.md"))
    assert sorted(nav) == sorted([*in_docs, *docs_site.OUTSIDE.values()])
    assert config["hooks"] == ["scripts/docs_site.py"]


def test_every_relative_link_lands_on_a_file():
    """What a repository browser follows; the site's own build checks the rewritten links."""
    sources = [ROOT / "README.md", ROOT / "ARCHITECTURE.md", ROOT / "problems" / "README.md",
               *(ROOT / "docs").glob("*.md")]
    broken = [f"{source.relative_to(ROOT)}: {target}" for source in sources
              for target, _ in LINK.findall(source.read_text(encoding="utf-8"))
              if "://" not in target and not (source.parent / target).exists()]
    assert broken == []


def test_links_point_at_the_site_pages():
    said = docs_site.site_links("[a](docs/providers.md) [b](ARCHITECTURE.md#1-layers) [c](problems/README.md) "
                                "[d](https://example.org/x.md)", "README.md", "index.md")
    assert said == ("[a](providers.md) [b](architecture.md#1-layers) [c](problem-format.md) "
                    "[d](https://example.org/x.md)")
    assert docs_site.site_links("[e](../README.md#exit-codes) [f](benchmarks.md)", "docs/verification.md",
                                "verification.md") == "[e](index.md#exit-codes) [f](benchmarks.md)"


def test_the_settings_reference_documents_every_field():
    reference = docs_site.settings_reference()
    solve, grade = reference.split("### `[grade]`")
    for model, table in ((SolveConfig, solve), (GradeConfig, grade)):
        rows = {line.split(" | ")[0].strip("| `"): line for line in table.splitlines() if line.startswith("| `")}
        documented = docs_site.field_docs(model)
        for field in set(model.model_fields) - set(docs_site.COMMAND_LINE_ONLY):
            assert documented.get(field), f"{model.__name__}.{field} has no docstring"
            assert field in rows and documented[field].replace("|", "\\|") in rows[field]
    assert "| `time_limit_s` | `--time-limit` | unset |" in reference
    assert "| `workers` | `--workers` | `4` |" in reference
    assert docs_site.MARKER in (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
