"""Django migrations of pgmbus: the mbus schema (installed by pgmbus.schema.install)."""
