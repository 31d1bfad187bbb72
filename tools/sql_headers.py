"""The Calls and Tables fields of the SQL function headers, read from the bodies.

    python tools/sql_headers.py [--write]

Every file under ``src/pgmbus/sql/functions/`` starts with a header whose ``Calls`` field lists
the mbus functions its text calls (``mbus.<name>(`` outside comments) and whose ``Tables`` field
lists the mbus tables and views it names; both are ``none`` when empty. Without arguments it
prints each header that says something else and exits 1 when there is any (the layout test does
the same check); ``--write`` rewrites those two fields from the bodies. A list that is computed
cannot rot as a list of callers did: a caller that is added or removed elsewhere changed no
header.

The check also holds the header to what a caller needs: a ``Purpose`` of at most 8 lines, and
an optional ``Design`` field after ``Tables`` (``docs/DESIGN.md#<anchor>``) that points to the
section of DESIGN.md giving the reasons, whose anchor must exist there.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SQL = ROOT / "src" / "pgmbus" / "sql"
FUNCTIONS = SQL / "functions"
FIELDS = ("Calls", "Tables")
PURPOSE_LINES = 8
DESIGN = ROOT / "docs" / "DESIGN.md"
WIDTH = 100
_INDENT = "--           "  # where a field's value starts: "-- Tables:   "

_DEFINES = re.compile(
    r"^CREATE\s+(?:OR\s+REPLACE\s+)?(?:FUNCTION|PROCEDURE|VIEW)\s+mbus\.(\w+)", re.I | re.M
)
_TABLES = re.compile(r"CREATE\s+(?:UNLOGGED\s+)?TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?mbus\.(\w+)", re.I)
_DROPPED = re.compile(r"DROP\s+TABLE\s+(?:IF\s+EXISTS\s+)?mbus\.(\w+)", re.I)
_COMMENT = re.compile(r"--[^\n]*|/\*.*?\*/", re.S)
_CALL = re.compile(r"\bmbus\.(\w+)\s*\(")
_NAME = re.compile(r"\bmbus\.(\w+)\b")
_FIELD = re.compile(r"^-- (\w+):")
_HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$", re.M)
_FENCE = re.compile(r"^```.*?^```", re.M | re.S)
_DESIGN_LINK = re.compile(r"^docs/DESIGN\.md#([\w-]+)$")


@dataclass(frozen=True)
class Header:
    """One file's header split into its lines, with the lines of each field."""

    path: Path
    lines: list[str]
    body: str

    def span(self, name: str) -> list[str] | None:
        """A field's lines (its own and the indented ones continuing it), None when missing."""
        start = next(
            (i for i, line in enumerate(self.lines) if line.startswith(f"-- {name}:")), None
        )
        if start is None:
            return None
        end = start + 1
        while end < len(self.lines) and self.lines[end].startswith(_INDENT):
            end += 1
        return self.lines[start:end]

    def field(self, name: str) -> list[str] | None:
        """The names a field lists (without the mbus. prefix), None when it is missing."""
        lines = self.span(name)
        if lines is None:
            return None
        text = [lines[0].split(":", 1)[1]] + [line[2:] for line in lines[1:]]
        words = " ".join(text).replace(",", " ").split()
        if words == ["none"]:
            return []
        return [w.removeprefix("mbus.") for w in words]


def github_anchors(markdown: str) -> set[str]:
    """The anchors GitHub gives the headings of a Markdown text: lower case, punctuation
    dropped, spaces to hyphens, a repeated anchor numbered -1, -2, ..."""
    anchors: set[str] = set()
    for title in _HEADING.findall(_FENCE.sub("", markdown)):
        title = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", title)  # a link counts by its text
        base = re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")
        anchor, n = base, 0
        while anchor in anchors:
            n += 1
            anchor = f"{base}-{n}"
        anchors.add(anchor)
    return anchors


def design_problems(header: Header, anchors: set[str]) -> list[str]:
    """A Purpose longer than a caller needs, or a Design field that points nowhere."""
    rel = f"{header.path.parent.name}/{header.path.name}"
    found: list[str] = []
    purpose = len(header.span("Purpose") or [])
    if purpose > PURPOSE_LINES:
        found.append(
            f"{rel}: Purpose has {purpose} lines (at most {PURPOSE_LINES}: the reasons go to "
            "docs/DESIGN.md, pointed to by a Design field)"
        )
    design = [line for line in header.lines if line.startswith("-- Design:")]
    for line in design:
        link = _DESIGN_LINK.match(line.split(":", 1)[1].strip())
        if link is None:
            found.append(f"{rel}: Design must be docs/DESIGN.md#<anchor>, not {line!r}")
        elif link.group(1) not in anchors:
            found.append(f"{rel}: Design anchor #{link.group(1)} is no heading of docs/DESIGN.md")
    return found


def function_files() -> list[Path]:
    return sorted(FUNCTIONS.glob("*/*.sql"))


def read(path: Path) -> Header:
    text = path.read_text("utf-8")
    head, _, rest = text.partition("\nCREATE")
    return Header(path, head.splitlines(), "CREATE" + rest)


def known() -> tuple[set[str], set[str]]:
    """The mbus functions (and procedures) and the mbus relations (tables and views)."""
    functions: set[str] = set()
    views: set[str] = set()
    for path in function_files():
        for match in _DEFINES.finditer(path.read_text("utf-8")):
            kind = match.group(0).split()[-2].upper()
            (views if kind == "VIEW" else functions).add(match.group(1))
    migrations = "\n".join(p.read_text("utf-8") for p in sorted((SQL / "migrations").glob("*.sql")))
    tables = set(_TABLES.findall(migrations)) - set(_DROPPED.findall(migrations))
    return functions, tables | views


def used(body: str, functions: set[str], relations: set[str]) -> dict[str, list[str]]:
    """What a body calls and touches: qualified names outside comments, the definitions'
    own names left out."""
    code = _DEFINES.sub("", _COMMENT.sub("", body))
    return {
        "Calls": sorted({n for n in _CALL.findall(code) if n in functions}),
        "Tables": sorted({n for n in _NAME.findall(code) if n in relations}),
    }


def render(name: str, names: list[str]) -> list[str]:
    """A field's lines: names joined by commas, wrapped under the value column."""
    words = [f"mbus.{n}" for n in names] or ["none"]
    lines: list[str] = []
    line = f"-- {name}:".ljust(len(_INDENT) - 1)
    for i, word in enumerate(words):
        item = " " + word + ("," if i < len(words) - 1 else "")
        if len(line) + len(item) > WIDTH and line.strip() not in ("--", f"-- {name}:"):
            lines.append(line)
            line = _INDENT[:-1]
        line += item
    lines.append(line)
    return lines


def problems() -> list[str]:
    functions, relations = known()
    anchors = github_anchors(DESIGN.read_text("utf-8"))
    found: list[str] = []
    for path in function_files():
        header = read(path)
        found += design_problems(header, anchors)
        want = used(header.body, functions, relations)
        for name in FIELDS:
            have = header.field(name)
            rel = path.relative_to(FUNCTIONS)
            if have is None:
                found.append(f"{rel}: no {name} field")
            elif have != want[name]:
                extra = sorted(set(have) - set(want[name]))
                missing = sorted(set(want[name]) - set(have))
                found.append(
                    f"{rel}: {name} lists {extra or 'nothing extra'}, misses {missing or 'none'}"
                    + ("" if extra or missing else " (order or duplicates)")
                )
    return found


def write() -> int:
    """Rewrite Calls and Tables (in place of Callers, which they replace) from the bodies."""
    functions, relations = known()
    changed = 0
    for path in function_files():
        header = read(path)
        want = used(header.body, functions, relations)
        new: list[str] = []
        fields = render("Calls", want["Calls"]) + render("Tables", want["Tables"])
        skipping = False
        for line in header.lines:
            field = _FIELD.match(line)
            if field:
                skipping = field.group(1) in (*FIELDS, "Callers")
                if skipping and fields[0] not in new:
                    new += fields  # where the first of them was
            elif skipping and not line.startswith(_INDENT):
                skipping = False
            if not skipping:
                new.append(line)
        if fields[0] not in new:
            new += fields
        if new != header.lines:
            path.write_text("\n".join(new) + "\n" + header.body, "utf-8")
            changed += 1
    return changed


def main(argv: list[str]) -> int:
    if argv == ["--write"]:
        print(f"{write()} headers rewritten")
        return 0
    if argv:
        print(__doc__, file=sys.stderr)
        return 2
    found = problems()
    for problem in found:
        print(problem)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
