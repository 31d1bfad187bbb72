"""Shipped pipeline jobs (``pgmbus pipeline ...``, or ``spark-submit`` on a module's file)."""
