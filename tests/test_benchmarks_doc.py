"""docs/benchmarks.md is the reference of the benchmarks: one section per scenario of bench/, each
saying how to run it and giving dated figures, and no journal (it stays under 600 lines)."""

from __future__ import annotations

import re
from pathlib import Path

from bench.harness import scenario_names

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "benchmarks.md"


def _sections() -> dict[str, str]:
    text = DOC.read_text("utf-8")
    _, *parts = re.split(r"^### `([^`]+)`\n", text, flags=re.MULTILINE)
    names, bodies = parts[0::2], parts[1::2]
    return {n: b.split("\n## ", 1)[0] for n, b in zip(names, bodies, strict=True)}


def _measure_modules() -> list[str]:
    return sorted(f"bench.{p.stem}" for p in (ROOT / "bench").glob("*_measure.py"))


def test_every_scenario_has_its_section_and_every_section_its_scenario() -> None:
    expected = set(scenario_names()) | set(_measure_modules())
    assert set(_sections()) == expected


def test_every_section_says_how_to_run_it_and_when_its_figures_were_taken() -> None:
    for name, body in _sections().items():
        command = name if name.startswith("bench.") else f"bench {name}"
        assert f"python -m {command}" in body, f"{name}: no command to run it"
        if name != "bench.exchange_measure":  # its figures live in exchange.md
            assert re.search(r"\b20\d\d-\d\d-\d\d\b", body), f"{name}: no dated figures"


def test_the_page_is_a_reference_not_a_journal() -> None:
    assert len(DOC.read_text("utf-8").splitlines()) < 600


def _slug(heading: str) -> str:
    """The anchor GitHub gives a heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_links_into_the_page_land_on_a_heading() -> None:
    text = DOC.read_text("utf-8")
    anchors = {_slug(h) for h in re.findall(r"^#+ (.+)$", text, flags=re.MULTILINE)}
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    for page in pages:
        for anchor in re.findall(r"benchmarks\.md#([\w\-]+)", page.read_text("utf-8")):
            assert anchor in anchors, f"{page.name}: no heading for #{anchor}"
