"""Management commands of pgmbus."""
