"""The Spark workload of the chaos suite: a streaming query from a group into a table sink.

The query reads the stream through ``pgmbus.spark`` (group ``chaos_spark``) and writes each
micro-batch into ``chaos_results`` with :class:`~pgmbus.spark.sink.TableSink` (results and
the batch's claim in one transaction: exactly once). A fault fails a micro-batch and stops
the query: like a supervisor would, the workload restarts it from its checkpoint, with backoff.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
from pathlib import Path
from typing import Any

from pgmbus.reconnect import Backoff
from pgmbus.spark.sink import TableSink
from tests.chaos.workloads import Workload, _pause

log = logging.getLogger("pgmbus.chaos")

SPARK_GROUP = "chaos_spark"


class SparkQuery(Workload):
    """Run the streaming query in ``spark`` until stopped; restart it after each failure."""

    def __init__(self, workload: str, dsn: str, topic: str, spark: Any) -> None:
        super().__init__(f"{workload}-query")
        self.workload, self.dsn, self.topic, self.spark = workload, dsn, topic, spark
        self.checkpoint = Path(tempfile.mkdtemp(prefix="pgmbus-chaos-spark-")) / "ckpt"
        self.restarts = 0
        self.errors: list[str] = []
        self._query: Any = None

    def _start(self) -> Any:
        from pyspark.sql import functions as F

        events = (
            self.spark.readStream.format("pgmbus")
            .option("dsn", self.dsn)
            .option("group", SPARK_GROUP)
            .option("topics", self.topic)
            .option("maxEventsPerTrigger", "200")
            .load()
        )
        rows = events.select(
            F.lit(self.workload).alias("workload"),
            F.get_json_object("payload", "$.v").alias("value"),
            F.col("id").cast("string").alias("message"),
        )
        return (
            rows.writeStream.foreachBatch(TableSink(self.dsn, "chaos_results"))
            .option("checkpointLocation", str(self.checkpoint))
            .trigger(processingTime="300 milliseconds")
            .start()
        )

    def body(self) -> None:
        backoff = Backoff(base=0.5, cap=3.0)
        while not self.stop_event.is_set():
            try:
                self._query = self._start()
                while not self.stop_event.is_set():
                    if self._query.awaitTermination(0.5):
                        break  # stopped without an error (only at our stop)
                    if self._query.lastProgress is not None:
                        backoff.reset()
            except Exception as exc:  # a failed micro-batch ends the query: restart it
                self.restarts += 1
                self.errors.append(f"{type(exc).__name__}: {str(exc)[:200]}")
                log.warning("spark query failed, restarting from its checkpoint: %.300s", exc)
                _pause(self.stop_event, backoff)
            finally:
                if self._query is not None and self._query.isActive:
                    self._query.stop()

    def stop(self, timeout: float = 60.0) -> None:
        super().stop(timeout)
        shutil.rmtree(self.checkpoint.parent, ignore_errors=True)
