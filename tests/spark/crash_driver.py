"""A driver process for the crash test: stream a group into a table; optionally die mid-batch.

Usage: python crash_driver.py DSN CHECKPOINT [CRASH_AFTER_BATCH]. With a batch id, the process
kills itself (SIGKILL, no cleanup) right after that batch's results are committed in the
database and before Spark records the batch as done, the worst moment for duplicates.
"""

from __future__ import annotations

import os
import signal
import sys
from typing import Any

from pgmbus.spark.session import local_session
from pgmbus.spark.sink import TableSink


def main() -> None:
    dsn, checkpoint = sys.argv[1], sys.argv[2]
    crash_after = int(sys.argv[3]) if len(sys.argv) > 3 else None
    spark = local_session("pgmbus-crash-test", fast_start=True)
    spark.sparkContext.setLogLevel("ERROR")
    sink = TableSink(dsn, "seen")

    def process(df: Any, batch_id: int) -> None:
        sink(df, batch_id)
        if batch_id == crash_after:
            os.kill(os.getpid(), signal.SIGKILL)

    events = (
        spark.readStream.format("pgmbus")
        .option("dsn", dsn)
        .option("group", "spark_crash")
        .option("startingPosition", "beginning")
        .option("maxEventsPerTrigger", "40")
        .load()
        .select("id", "topic", "payload")
    )
    query = (
        events.writeStream.foreachBatch(process)
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    spark.stop()


if __name__ == "__main__":
    main()
