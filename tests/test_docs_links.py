"""Every relative link in README.md and docs/*.md leads somewhere: the file exists, and a
`#heading` after a Markdown file's name (or alone, for the page itself) is one of that file's
headings, spelt as GitHub makes its anchors. Pages are moved and split; a link that silently
leads nowhere is what that leaves behind."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import REPO

PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]

FENCE = re.compile(r"^(```|~~~).*?^\1", re.M | re.S)
CODE = re.compile(r"(`+).+?\1", re.S)
# [text](target) and ![alt](target); the target ends at a space (a title) or the parenthesis
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.M)


def _prose(text: str) -> str:
    """The text without code blocks and code spans, where brackets are not links."""
    return CODE.sub("", FENCE.sub("", text))


def links(text: str) -> list[str]:
    return LINK.findall(_prose(text))


def anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).replace("`", "")
    return re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every heading's anchor; a repeated heading gets -1, -2, ... as on GitHub."""
    seen: dict[str, int] = {}
    for heading in HEADING.findall(FENCE.sub("", path.read_text(encoding="utf-8"))):
        slug = anchor(heading)
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        if count:
            seen[f"{slug}-{count}"] = 1
    return set(seen)


def broken(page: Path) -> list[str]:
    """The relative links of `page` that lead to no file, or to no heading of it."""
    problems = []
    for target in links(page.read_text(encoding="utf-8")):
        if re.match(r"[a-z][a-z0-9+.-]*:", target, re.I):  # http:, https:, mailto:, file:
            continue
        name, _, fragment = target.partition("#")
        path = (page.parent / name).resolve() if name else page
        if not path.exists():
            problems.append(f"{target}: no such file")
        elif fragment and path.suffix == ".md" and fragment not in anchors(path):
            problems.append(f"{target}: no heading #{fragment} in {path.name}")
    return problems


@pytest.mark.parametrize("page", PAGES, ids=[p.relative_to(REPO).as_posix() for p in PAGES])
def test_every_relative_link_resolves(page):
    assert broken(page) == []


def test_the_checker_finds_what_is_broken(tmp_path):
    """A missing file and a missing heading are caught; a URL, a code span, a code block, an
    existing file and an existing heading (with code and punctuation in it) are not."""
    (tmp_path / "other.md").write_text("# Title\n\n## On one machine: `--jobs` (issue 17)\n")
    page = tmp_path / "page.md"
    page.write_text(
        "# Page\n\n[ok](other.md) [ok](other.md#on-one-machine---jobs-issue-17) [ok](#page)\n"
        "[web](https://example.org/none) `[code](none.md)`\n\n```\n[block](none.md)\n```\n"
        "[gone](missing.md) [gone](other.md#nowhere) ![img](pic.png)\n"
    )
    assert broken(page) == [
        "missing.md: no such file",
        "other.md#nowhere: no heading #nowhere in other.md",
        "pic.png: no such file",
    ]


def test_the_readme_is_a_front_page():
    """The README stays a page a newcomer can scan; the detail lives in docs/."""
    assert len((REPO / "README.md").read_text(encoding="utf-8").splitlines()) < 300
