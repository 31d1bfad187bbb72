"""The reports of a chaos run, gathered for the summary table printed at the end."""

from __future__ import annotations

from pathlib import Path

from pgmbus.testing.chaos import Report

REPORTS: list[Report] = []
NOTES: list[str] = []
SUMMARY = Path(".chaos") / "summary.md"
