"""``pgmbus pipeline archive|stats``: the shipped Spark jobs, on local Spark by default."""

from __future__ import annotations

import datetime as dt
import re
from typing import Annotated, Any

import typer

from pgmbus.cli.common import DsnOption, console, database, reports_errors
from pgmbus.errors import ConfigurationError

app = typer.Typer(
    help="Spark pipeline jobs over the bus (local Spark by default; spark-submit runs the "
    "same jobs on a cluster: python -m pgmbus.spark.jobs.<job>).",
    no_args_is_help=True,
)

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd])\s*$")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}

MasterOption = Annotated[
    str, typer.Option("--master", help="Spark master URL (ignored under spark-submit).")
]


def parse_duration(text: str) -> dt.timedelta:
    """``90s``, ``15m``, ``24h``, ``7d`` as a timedelta."""
    match = _DURATION.match(text)
    if not match:
        raise ConfigurationError(f"invalid duration {text!r} (use e.g. 90s, 15m, 24h, 7d)")
    return dt.timedelta(**{_UNITS[match.group(2)]: float(match.group(1))})


def _session(master: str) -> Any:
    from pgmbus.spark import local_session

    spark = local_session("pgmbus-pipeline", master=master, fast_start=True)
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _show(progress: dict[str, Any]) -> None:
    rate = progress.get("processedRowsPerSecond") or 0.0
    console.print(
        f"  batch {progress['batchId']}: {progress['numInputRows']} events ({rate:,.0f}/s)",
        highlight=False,
    )


@app.command("archive")
@reports_errors
def archive_cmd(
    path: Annotated[str, typer.Option("--path", help="Archive root (local path or URI).")],
    older_than: Annotated[
        str, typer.Option("--older-than", help="Horizon: archive events older than this.")
    ] = "24h",
    group: Annotated[str, typer.Option("--group", help="Group marking what is archived.")] = (
        "spark_archive"
    ),
    topics: Annotated[str | None, typer.Option("--topics", help="Comma-separated.")] = None,
    batch: Annotated[int, typer.Option("--batch", help="Events per micro-batch.")] = 100_000,
    master: MasterOption = "local[2]",
    dsn: DsnOption = None,
) -> None:
    """Copy events older than the horizon to Parquet (by topic and date), exactly once."""
    before = dt.datetime.now(dt.UTC) - parse_duration(older_than)
    url = database(dsn)
    from pgmbus.spark import archive

    console.print(f"archiving events published before {before:%Y-%m-%d %H:%M:%S} UTC to {path}")
    spark = _session(master)
    report = archive(
        spark,
        url,
        path,
        before=before,
        group=group,
        topics=topics,
        max_events_per_batch=batch,
        on_batch=_show,
    )
    console.print(
        f"archived {report.rows} events in {report.batches} batch(es), {report.seconds:.1f} s"
    )


@app.command("stats")
@reports_errors
def stats_cmd(
    table: Annotated[str, typer.Option("--table", help="The captured table of edits.")] = (
        "public.commits"
    ),
    user_column: Annotated[str, typer.Option("--user-column")] = "created_by",
    object_column: Annotated[str, typer.Option("--object-column")] = "object_id",
    window: Annotated[str, typer.Option("--window", help="Activity window, e.g. 1h.")] = "1h",
    group: Annotated[str, typer.Option("--group")] = "spark_stats",
    checkpoint: Annotated[
        str, typer.Option("--checkpoint", help="Spark checkpoint folder of the job.")
    ] = ".pgmbus/spark/stats",
    follow: Annotated[
        bool, typer.Option("--follow", help="Keep running (default: process what is there).")
    ] = False,
    master: MasterOption = "local[2]",
    dsn: DsnOption = None,
) -> None:
    """Keep per-user edit counts and per-object activity tables up to date, exactly once."""
    url = database(dsn)
    from pgmbus.spark import StatsJob

    job = StatsJob(
        url,
        table=table,
        user_column=user_column,
        object_column=object_column,
        window=parse_duration(window),
        group=group,
        checkpoint=checkpoint,
    )
    spark = _session(master)
    report = job.run(spark, follow=follow, on_batch=_show)
    console.print(f"processed {report.rows} change events in {report.batches} batch(es)")


def register(root: typer.Typer) -> None:
    """Add ``pgmbus pipeline`` to the root command."""
    root.add_typer(app, name="pipeline")
