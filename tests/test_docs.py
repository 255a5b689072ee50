"""The README and the reference in docs/ hold together: every relative link and image points
to a file that exists, every ``#anchor`` to a heading of its target (GitHub's slugs), and
the README reaches every reference page. External links are not fetched."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

REPO = Path(__file__).resolve().parent.parent
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")
_CODE_SPAN = re.compile(r"(`+)(?!`).+?(?<!`)\1(?!`)", re.DOTALL)
# [text](target "title") and ![alt](target); [label]: target; src="..." / href="..."
_INLINE = re.compile(r"\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
_DEFINITION = re.compile(r"^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)", re.MULTILINE)
_HTML = re.compile(r"\b(?:src|href)=\"([^\"]*)\"")
_LINE_ANCHOR = re.compile(r"L\d+(?:-L\d+)?")


def _prose(text: str) -> str:
    """The text outside fenced code blocks (fence lines blanked, so line numbers hold)."""
    out, fence = [], ""
    for line in text.split("\n"):
        m = _FENCE.match(line)
        if fence:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                fence = ""
            out.append("")
        elif m:
            fence = m.group(1)
            out.append("")
        else:
            out.append(line)
    return "\n".join(out)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: its text (links by their text, code without
    backticks), lowercased, punctuation but '-' and '_' dropped, spaces to '-'."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    return re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")


def anchors(text: str) -> set[str]:
    """Every heading's anchor in a markdown text; repeats get -1, -2, ... as on GitHub."""
    seen: dict[str, int] = {}
    found = set()
    for line in _prose(text).split("\n"):
        m = _HEADING.match(line)
        if not m:
            continue
        base = slug(m.group(2))
        n = seen.get(base, 0)
        seen[base] = n + 1
        found.add(base if n == 0 else f"{base}-{n}")
    return found


def links(text: str) -> list[str]:
    """Every link and image target in a markdown text, outside code."""
    prose = _CODE_SPAN.sub("", _prose(text))
    return [
        target for pattern in (_INLINE, _DEFINITION, _HTML) for target in pattern.findall(prose)
    ]


def broken_links(page: Path, text: str) -> list[str]:
    """The relative links of ``page`` (whose text is ``text``) that lead nowhere."""
    broken = []
    for target in links(text):
        if re.match(r"[a-zA-Z][a-zA-Z0-9+.-]*:", target) or target.startswith("//"):
            continue  # http(s), mailto: not fetched
        path_part, _, anchor = target.partition("#")
        path = (page.parent / unquote(path_part)).resolve() if path_part else page
        if path_part and not path.exists():
            broken.append(f"{page.name}: {target}: no such file")
            continue
        if not anchor:
            continue
        if path.suffix == ".md":
            heads = anchors(text if path == page else path.read_text(encoding="utf-8"))
            if unquote(anchor) not in heads:
                broken.append(f"{page.name}: {target}: no heading #{anchor} in {path.name}")
        elif not _LINE_ANCHOR.fullmatch(anchor):
            broken.append(f"{page.name}: {target}: #{anchor} in a file without headings")
    return broken


def test_every_relative_link_and_anchor_leads_somewhere():
    assert len(PAGES) > 2
    broken = [b for page in PAGES for b in broken_links(page, page.read_text(encoding="utf-8"))]
    assert broken == []


def test_the_readme_reaches_every_reference_page_and_shows_every_screenshot():
    readme = REPO / "README.md"
    targets = {(REPO / t.partition("#")[0]).resolve() for t in links(readme.read_text("utf-8"))}
    for path in (*PAGES[1:], *(REPO / "docs" / "screenshots").glob("*.svg")):
        assert path in targets, path.relative_to(REPO)


def test_slugs_follow_github():
    """GitHub's anchors for headings of this project (the first two were linked before)."""
    assert slug("From serving logs to a K: `spectui calibrate`") == (
        "from-serving-logs-to-a-k-spectui-calibrate"
    )
    assert slug("Sweeps on a cluster: Dask") == "sweeps-on-a-cluster-dask"
    assert slug("The sampler") == "the-sampler"
    assert slug("`spectui run`") == "spectui-run"
    assert slug(
        "Draft shapes: chains and token trees (`shape.name`, `engine/shapes/trees.py`)"
    ) == ("draft-shapes-chains-and-token-trees-shapename-engineshapestreespy")
    assert anchors("# A\n```sh\n# not a heading\n```\n## A\n#23 is no heading\n") == {"a", "a-1"}


def test_the_check_sees_a_broken_link(tmp_path: Path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "other.md").write_text("# Other page\n\n## Its part\n", "utf-8")
    page = tmp_path / "README.md"
    text = (
        "# Title\n\n[ok](docs/other.md#its-part) [ok](#title) [web](https://example.com/x)\n"
        "`[code](nowhere.md)`\n```\n[fenced](nowhere.md)\n```\n"
        "[gone](docs/missing.md) ![gone](docs/missing.svg) [bad](docs/other.md#no-part)\n"
        "[bad](#no-title)\n\n[ref]: docs/missing-too.md\n"
    )
    assert broken_links(page, text) == [
        "README.md: docs/missing.md: no such file",
        "README.md: docs/missing.svg: no such file",
        "README.md: docs/other.md#no-part: no heading #no-part in other.md",
        "README.md: #no-title: no heading #no-title in README.md",
        "README.md: docs/missing-too.md: no such file",
    ]


# A count of the validation table typed into a hand-written page goes stale with the next
# entry: docs/validation.md (generated by `spectui validate --markdown`) gives the counts.
GENERATED = {REPO / "docs" / "validation.md"}
_TABLE_COUNT = re.compile(
    r"(?<![\w^.,/])\d+\s+(?:more\s+pending|published\s+measurements|entries\s+from"
    r"|(?:validation|validated|pending)\s+entries|measurements\s+predicted)\b",
    re.IGNORECASE,
)


def typed_table_counts(page: Path, text: str) -> list[str]:
    """Each count of the validation table typed in ``text`` (a phrase like "62 published
    measurements" or "75 entries from", across line breaks), as ``page:line: phrase``."""
    return [
        f"{page.name}:{text.count(chr(10), 0, m.start()) + 1}: '{' '.join(m.group().split())}'"
        " types a count of engine/validate/data/measurements.toml: say it without the number "
        "(docs/validation.md, generated, gives the counts)"
        for m in _TABLE_COUNT.finditer(text)
    ]


def test_no_hand_written_page_types_a_count_of_the_validation_table():
    """Adding a measurement touches measurements.toml and the files generated from it
    (docs/validation.md, tests/fixtures/validation/errors.csv), never a hand-written page."""
    typed = [
        found
        for page in PAGES
        if page not in GENERATED
        for found in typed_table_counts(page, page.read_text(encoding="utf-8"))
    ]
    assert typed == []


def test_the_check_sees_a_typed_count(tmp_path: Path):
    text = (
        "# Title\n\nHow good the predictions are: 62 published\nmeasurements, 13 more pending.\n"
        "The table (`measurements.toml`: 75 entries from vLLM) and blocks of 2^21 entries.\n"
    )
    found = typed_table_counts(Path("README.md"), text)
    assert [line.split(":")[1] for line in found] == ["3", "4", "5"]  # not 2^21 entries
    assert found[0] == (
        "README.md:3: '62 published measurements' types a count of "
        "engine/validate/data/measurements.toml: say it without the number "
        "(docs/validation.md, generated, gives the counts)"
    )
    assert typed_table_counts(Path("README.md"), "the table's published measurements\n") == []
