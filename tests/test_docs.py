"""Every link and citation in the repository points inside it, at a file and heading that exist.

- Markdown links in tracked *.md files (`[text](target)`, `![alt](target)`, `[ref]: target`,
  `<target>`, `href="target"`): http(s) and mailto URLs pass unchecked; any other target
  must be a tracked file or folder inside the repository, and a `#anchor` must be the
  GitHub slug of a heading of the target (or of the same file).
- Citations `docs/<name>.md` in tracked *.py, *.md, *.html and *.toml files, optionally with
  `#anchor` or a quoted section (`, "Section"` or ` ("Section")`): the file must exist, and
  the anchor or section must name one of its headings.
- No tracked file mentions the design brief or the folder it lives in, outside the repository
  (the project's own documents are docs/formulas.md and docs/api.md).

The repository's test lists every offending file:line at once.
"""

from __future__ import annotations

import posixpath
import re
import subprocess
from collections.abc import Iterator, Mapping
from pathlib import Path
from urllib.parse import unquote

import pytest

ROOT = Path(__file__).resolve().parent.parent

# spelt in pieces, so that this file does not mention them itself
FORBIDDEN = ("MODELLING" + ".md", "shared" + "/design", ".." + "/shared")
CITING = (".py", ".md", ".html", ".toml")
ALLOWED_SCHEMES = ("http://", "https://", "mailto:")

_FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
_CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")
_ATX = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_SETEXT = re.compile(r"^\s{0,3}(=+|-+)\s*$")
_INLINE = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*(<[^>]*>|[^)\s]+)(?:\s+[\"'(][^)]*)?\)")
_REFERENCE = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)")
_AUTOLINK = re.compile(r"<([A-Za-z][A-Za-z0-9+.-]*:[^<>\s]+|[\w.#][^<>\s]*(?:/|\.md|#)[^<>\s]*)>")
_HTML_ATTRIBUTE = re.compile(r"\b(?:href|src)=\"([^\"]*)\"")
_CITATION = re.compile(
    r"(?<![\w/.-])(docs/[\w.-]+?\.md)(?:#([\w-]+)|,\s*\"([^\"]+)\"|\s+\(\"([^\"]+)\"\))?"
)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: inline markup dropped, lower case, punctuation removed
    (letters, digits, underscores, hyphens and spaces stay), each space a hyphen."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link keeps its text
    text = re.sub(r"<[^>]+>", "", text)  # inline HTML
    text = re.sub(r"[^\w\- ]", "", text.strip().lower())
    return text.replace(" ", "-")


def _prose(text: str) -> Iterator[tuple[int, str]]:
    """(line number, line) outside fenced code blocks, with inline code spans blanked."""
    fence = ""
    for number, line in enumerate(text.splitlines(), start=1):
        opening = _FENCE.match(line)
        if fence:
            if opening and opening.group(1)[0] == fence[0] and len(opening.group(1)) >= len(fence):
                fence = ""
            continue
        if opening:
            fence = opening.group(1)
            continue
        yield number, _CODE_SPAN.sub(lambda m: " " * len(m.group(0)), line)


def anchors(markdown: str) -> set[str]:
    """The anchors of a Markdown file's headings (ATX and setext), with GitHub's -1, -2 for
    repeated ones, and any explicit `<a id=...>` or `<a name=...>`."""
    found: set[str] = set()
    seen: dict[str, int] = {}
    previous = ""
    for _, line in _prose(markdown):
        atx = _ATX.match(line)
        setext = _SETEXT.match(line)
        heading = None
        if atx:
            heading = atx.group(2)
        elif setext and previous.strip() and not previous.lstrip().startswith(("|", "-", "*")):
            heading = previous
        if heading is not None:
            base = slug(heading)
            count = seen.get(base, 0)
            seen[base] = count + 1
            found.add(base if count == 0 else f"{base}-{count}")
        found.update(re.findall(r"<a\s[^>]*\b(?:id|name)=\"([^\"]+)\"", line))
        previous = line
    return found


_LINKS = (_INLINE, _REFERENCE, _AUTOLINK, _HTML_ATTRIBUTE)


def _blank(pattern: re.Pattern[str], line: str) -> str:
    return pattern.sub(lambda m: " " * len(m.group(0)), line)


def links(markdown: str) -> Iterator[tuple[int, str]]:
    """(line number, target) of every link in a Markdown text, outside code, in order."""
    for number, line in _prose(markdown):
        found = []
        rest = line
        for pattern in _LINKS:  # each kind in what the ones before it left
            found += [(m.start(), m.group(1)) for m in pattern.finditer(rest)]
            rest = _blank(pattern, rest)
        for _, target in sorted(found):
            yield number, target.removeprefix("<").removesuffix(">")


def citations(text: str, *, markdown: bool = False) -> Iterator[tuple[int, str, str | None]]:
    """(line number, docs/<name>.md, anchor or quoted section or None) of every citation;
    in Markdown, outside links (which are checked as links)."""
    for number, line in enumerate(text.splitlines(), start=1):
        rest = line
        if markdown:
            for pattern in _LINKS:
                rest = _blank(pattern, rest)
        for match in _CITATION.finditer(rest):
            path, anchor, section, parenthesised = match.groups()
            yield number, path, anchor or section or parenthesised


class Repository:
    """Tracked files by repository-relative path, with their text."""

    def __init__(self, files: Mapping[str, str]) -> None:
        self.files = files
        self.folders = {
            posixpath.dirname(path[: i + 1]) for path in files for i in range(len(path))
        } - {""}
        self._anchors: dict[str, set[str]] = {}

    def anchors_of(self, path: str) -> set[str]:
        if path not in self._anchors:
            self._anchors[path] = anchors(self.files[path])
        return self._anchors[path]

    def link_problem(self, source: str, target: str) -> str | None:
        """Why `target`, linked from `source`, is broken (None when it is fine)."""
        if target.startswith(ALLOWED_SCHEMES):
            return None
        if re.match(r"^[A-Za-z][A-Za-z0-9+.-]*:", target):
            return f"link {target!r} leaves the repository"
        if target.startswith("/"):
            return f"absolute link {target!r}: use a path relative to {source}"
        path, _, anchor = unquote(target).partition("#")
        if not path:
            path = source
        else:
            path = posixpath.normpath(posixpath.join(posixpath.dirname(source), path))
            if path == ".." or path.startswith("../"):
                return f"link {target!r} points outside the repository"
            if path not in self.files and path not in self.folders:
                return f"link {target!r}: no tracked file {path}"
        if anchor and not path.endswith(".md"):
            return f"link {target!r}: an anchor in a file that is not Markdown"
        if anchor and anchor not in self.anchors_of(path):
            return f"link {target!r}: {path} has no heading with anchor #{anchor}"
        return None

    def citation_problem(self, path: str, section: str | None) -> str | None:
        """Why a citation of `path` (and `section`: an anchor or a heading's text) is broken."""
        if path not in self.files:
            return f"cites {path}, which is not a tracked file"
        if section is None:
            return None
        if section not in self.anchors_of(path) and slug(section) not in self.anchors_of(path):
            return f"cites {path} {section!r}, which is not one of its headings"
        return None

    def problems(self) -> list[str]:
        """Every broken link, citation and forbidden mention, as 'file:line: why'."""
        found = []
        for source, text in sorted(self.files.items()):
            if source.endswith(".md"):
                for number, target in links(text):
                    if (why := self.link_problem(source, target)) is not None:
                        found.append(f"{source}:{number}: {why}")
            if source.endswith(CITING):
                for number, path, section in citations(text, markdown=source.endswith(".md")):
                    if (why := self.citation_problem(path, section)) is not None:
                        found.append(f"{source}:{number}: {why}")
            for number, line in enumerate(text.splitlines(), start=1):
                found.extend(
                    f"{source}:{number}: mentions {name!r}, outside the repository; cite "
                    "docs/formulas.md or docs/api.md instead"
                    for name in FORBIDDEN
                    if name in line
                )
        return found


def tracked_files(root: Path) -> dict[str, str]:
    """Every file git tracks under `root`, as text (undecodable bytes replaced)."""
    listed = subprocess.run(
        ["git", "-C", str(root), "ls-files", "-z"], capture_output=True, check=True
    ).stdout.decode()
    files = {}
    for path in filter(None, listed.split("\0")):
        file = root / path
        if file.is_file():  # a tracked file deleted in the working tree is not read
            files[path] = file.read_bytes().decode("utf-8", errors="replace")
    return files


def test_links_and_citations_stay_inside_the_repository() -> None:
    found = Repository(tracked_files(ROOT)).problems()
    assert not found, f"{len(found)} broken links or citations:\n" + "\n".join(found)


# --- the checker's own worked examples ----------------------------------------------------


@pytest.mark.parametrize(
    ("heading", "anchor"),
    [
        ("The roofline", "the-roofline"),
        ("Training (`training.py`, `scaling.py`)", "training-trainingpy-scalingpy"),
        ("Verdict: does the runtime make sense?", "verdict-does-the-runtime-make-sense"),
        ("GET /chips, /chips/{chip}", "get-chips-chipschip"),
        ("1 \u2013 1.5 **bold** and [a link](x.md)", "1--15-bold-and-a-link"),
        ("max_batch <em>now</em>", "max_batch-now"),
        ("Straße über", "straße-über"),
    ],
)
def test_slug_is_githubs(heading: str, anchor: str) -> None:
    assert slug(heading) == anchor


def test_anchors_number_repeats_and_skip_code() -> None:
    text = '# A\n## A\n```\n# not a heading\n```\nB\n===\n### A #\n<a id="here"></a>\n'
    assert anchors(text) == {"a", "a-1", "a-2", "b", "here"}


def test_links_are_found_outside_code() -> None:
    text = (
        'See [a](b.md#c "title"), ![img](x.svg) and <https://e.org/p>, not `[x](y.md)`.\n'
        "```\n[z](fenced.md)\n```\n"
        "[ref]: <../out.md>\n"
        '<a href="docs/api.md#names">names</a> and <docs/formulas.md#units>; Bearer <token>\n'
    )
    assert list(links(text)) == [
        (1, "b.md#c"),
        (1, "x.svg"),
        (1, "https://e.org/p"),
        (5, "../out.md"),
        (6, "docs/api.md#names"),
        (6, "docs/formulas.md#units"),
    ]


def test_citations_take_an_anchor_or_a_quoted_section() -> None:
    text = (
        '"""(docs/formulas.md, "Optimal batch")"""\n'
        "# docs/formulas.md#training; see docs/api.md\n"
        'derived in docs/formulas.md ("Training"); not mydocs/x.md\n'
    )
    assert list(citations(text)) == [
        (1, "docs/formulas.md", "Optimal batch"),
        (2, "docs/formulas.md", "training"),
        (2, "docs/api.md", None),
        (3, "docs/formulas.md", "Training"),
    ]


def test_a_made_up_repository_reports_every_offence_with_its_line() -> None:
    d = "docs"  # spelt apart, so that this file does not cite the made-up files itself
    repository = Repository(
        {
            "README.md": (
                f"# Top\n[ok]({d}/a.md#the-roofline) [web](https://example.org)\n"
                f"[gone]({d}/missing.md) [anchor]({d}/a.md#nowhere) [up](../elsewhere.md)\n"
                f"[self](#top) [bad self](#bottom) [folder]({d}/) [file](file:///etc/passwd)\n"
            ),
            f"{d}/a.md": "## The roofline\n",
            "app/x.py": (
                f'"""{d}/a.md, "The roofline"; {d}/a.md#missing; {d}/b.md"""\n'
                f"# {FORBIDDEN[0]}, 'Kernels'\n"
            ),
        }
    )
    assert repository.problems() == [
        f"README.md:3: link '{d}/missing.md': no tracked file {d}/missing.md",
        f"README.md:3: link '{d}/a.md#nowhere': {d}/a.md has no heading with anchor #nowhere",
        "README.md:3: link '../elsewhere.md' points outside the repository",
        "README.md:4: link '#bottom': README.md has no heading with anchor #bottom",
        "README.md:4: link 'file:///etc/passwd' leaves the repository",
        f"app/x.py:1: cites {d}/a.md 'missing', which is not one of its headings",
        f"app/x.py:1: cites {d}/b.md, which is not a tracked file",
        f"app/x.py:2: mentions {FORBIDDEN[0]!r}, outside the repository; cite "
        "docs/formulas.md or docs/api.md instead",
    ]
