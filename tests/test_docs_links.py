"""Relative links in README.md and docs/*.md resolve, and the README stays a short front door.

A link is ``[text](target)`` or ``![alt](target)``. Targets with a scheme (``http:``,
``https:``, ``mailto:``) are not checked. The file part of a target must exist relative to
the file holding the link; an ``#anchor`` must be the slug of a heading of the target file
(of the same file for ``(#anchor)``). Links inside fenced code blocks are skipped.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
README_MAX_BYTES = 15_000

_FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
# [text](target) and ![alt](target); text may hold one level of brackets, the target
# may be followed by a "title".
_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^()\s<>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
_INLINE_CODE = re.compile(r"(`+)(.+?)\1")


def markdown_files():
    """README.md and every page under docs/."""
    return [README, *sorted((ROOT / "docs").glob("*.md"))]


def prose_lines(text):
    """Lines outside fenced code blocks, with their 1-based numbers.

    Parameters
    ----------
    text : str
        Markdown source.

    Yields
    ------
    (int, str)
        Line number and line, for every line not inside a ``` or ~~~ fence.
    """
    fence = None
    for number, line in enumerate(text.splitlines(), start=1):
        match = _FENCE.match(line)
        if match:
            marker = match.group(1)
            if fence is None:
                fence = marker
            elif marker[0] == fence[0] and len(marker) >= len(fence):
                fence = None
            continue
        if fence is None:
            yield number, line


def slug(heading):
    """GitHub's anchor for a heading text (without the duplicate suffix).

    Parameters
    ----------
    heading : str
        The heading's text as written, markdown included.

    Returns
    -------
    str
        Lowercase, markup and punctuation dropped (letters, digits, spaces, hyphens and
        underscores kept), spaces turned into hyphens.
    """
    text = _INLINE_CODE.sub(lambda m: m.group(2), heading)      # `code` -> code
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)      # [text](url) -> text
    text = text.lower()
    text = "".join(ch for ch in text if ch.isalnum() or ch in " -_")
    return text.replace(" ", "-")


def anchors(path):
    """Every anchor GitHub makes for the headings of one markdown file.

    Parameters
    ----------
    path : Path
        A markdown file.

    Returns
    -------
    set of str
        The slugs of its headings, the second of equal slugs suffixed ``-1``, the third
        ``-2``, and so on.
    """
    seen = {}
    result = set()
    for _, line in prose_lines(path.read_text(encoding="utf-8")):
        match = _HEADING.match(line)
        if not match:
            continue
        base = slug(match.group(2))
        count = seen.get(base, 0)
        seen[base] = count + 1
        result.add(base if count == 0 else f"{base}-{count}")
    return result


def relative_links(path):
    """The relative link targets of one markdown file, outside code blocks.

    Parameters
    ----------
    path : Path
        A markdown file.

    Returns
    -------
    list of (int, str)
        Line number and target of every link without a URL scheme.
    """
    links = []
    for number, line in prose_lines(path.read_text(encoding="utf-8")):
        line = _INLINE_CODE.sub("", line)
        for match in _LINK.finditer(line):
            target = match.group(1)
            if target and not _SCHEME.match(target):
                links.append((number, target))
    return links


def broken_links(path):
    """Messages for the links of one file whose file or anchor does not resolve."""
    problems = []
    for number, target in relative_links(path):
        file_part, _, anchor = target.partition("#")
        where = f"{path.relative_to(ROOT)}:{number}: ({target})"
        resolved = (path.parent / file_part).resolve() if file_part else path
        if not resolved.exists():
            problems.append(f"{where} {file_part} does not exist")
            continue
        if anchor:
            if resolved.suffix != ".md" or resolved.is_dir():
                problems.append(f"{where} anchor into a file that is not markdown")
            elif anchor not in anchors(resolved):
                problems.append(f"{where} no heading with anchor #{anchor} in "
                                f"{resolved.relative_to(ROOT)}")
    return problems


def test_slug_follows_github():
    assert slug("Large data: model selection in random-feature space (`method=\"rff\"`)") == \
        "large-data-model-selection-in-random-feature-space-methodrff"
    assert slug("LS-SVM (no bias), Gaussian kernel — 0-1 test error") == \
        "ls-svm-no-bias-gaussian-kernel--0-1-test-error"
    assert slug("Results: the paper's Table 1 protocol") == "results-the-papers-table-1-protocol"


def test_duplicate_headings_get_suffixes(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("# A\n\n## Notes\n\n```\n## Notes\n```\n\n## Notes\n\n## Notes\n",
                    encoding="utf-8")
    assert anchors(page) == {"a", "notes", "notes-1", "notes-2"}


def test_links_in_code_blocks_and_urls_are_skipped(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("[web](https://example.org) [mail](mailto:a@b.c)\n"
                    "```\n[x](missing.md)\n```\n`[y](missing.md)`\n[self](#top)\n\n# Top\n",
                    encoding="utf-8")
    assert relative_links(page) == [(6, "#top")]


@pytest.mark.parametrize("path", markdown_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(path):
    problems = broken_links(path)
    assert not problems, "broken links:\n" + "\n".join(problems)


def test_docs_pages_link_back_to_readme():
    for path in sorted((ROOT / "docs").glob("*.md")):
        targets = [target for _, target in relative_links(path)]
        if path.name == "rff_ratsch_history.md":  # an appendix of random-features.md
            continue
        assert "../README.md" in targets, f"{path.name} has no link back to README.md"


def test_readme_is_a_short_front_door():
    data = README.read_bytes()
    assert len(data) <= README_MAX_BYTES, f"README.md is {len(data)} bytes"
    text = data.decode("utf-8")
    assert "make demo" in text
    assert "make test" in text
