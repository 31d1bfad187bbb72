"""``pgmbus_install`` and ``pgmbus_worker``."""
