"""One rule for every destructive command: ask when messages would be lost, ``--yes`` to skip.

A command that would lose nothing goes on without a question. Otherwise it asks on the terminal
(the default answer is no); without a terminal to ask on it changes nothing and says to pass
``--yes``. The count is read just before the question: messages posted between the count and
the command are lost too, so the question guards against mistakes, not against races.
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer

YesOption = Annotated[
    bool,
    typer.Option("--yes", "-y", help="Do not ask, even when messages would be lost (scripts)."),
]


def confirm_loss(action: str, lost: int, what: str, *, yes: bool) -> None:
    """Return when ``action`` may go on; else exit, having changed nothing.

    ``lost`` counts the ``what`` (``"pending messages"``, ``"dead messages"``) it would delete.
    A refusal exits 1; no terminal to ask on is a usage error (exit 2) naming ``--yes``.
    """
    if lost <= 0 or yes:
        return
    if not sys.stdin.isatty():
        raise typer.BadParameter(
            f"{action} would delete {lost} {what}; no terminal to ask on: pass --yes to do it "
            "without asking (nothing changed)",
            param_hint="--yes",
        )
    if not typer.confirm(f"{action} deletes {lost} {what}. Go on?", default=False):
        typer.echo("nothing changed", err=True)
        raise typer.Exit(1)
