"""README is the front door and the docs pages ship with the package: every page is linked,
every link resolves, and the pages are package data."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LINK = re.compile(r"\]\(([^)#\s]+\.md)(?:#[^)]*)?\)")


def test_readme_is_the_front_door():
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= 300, f"README.md has {len(lines)} lines; move detail to docs/"


def test_every_docs_page_is_linked_from_readme():
    readme = (ROOT / "README.md").read_text()
    pages = sorted(p.name for p in (ROOT / "docs").glob("*.md"))
    unlinked = [name for name in pages if f"(docs/{name})" not in readme]
    assert pages and not unlinked, f"README.md links no page for {unlinked}"


def test_every_markdown_link_resolves():
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for target in LINK.findall(page.read_text()):
            if target.startswith("http"):
                continue
            assert (page.parent / target).is_file(), f"{page.name} links {target}, which is missing"


def test_the_docs_ship_with_the_package():
    data = (ROOT / "pyproject.toml").read_text()
    listed = data[data.index('"selfplay" = [') :]
    assert '"docs/*.md"' in listed[: listed.index("]")]
