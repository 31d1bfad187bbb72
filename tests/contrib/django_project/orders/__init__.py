"""An app that places orders and posts them to pgmbus in the same transaction."""
