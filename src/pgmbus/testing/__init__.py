"""Test support shipped with the package: a throw-away PostgreSQL server and databases.

Used by pgmbus's own suite (``tests/conftest.py``) and usable by applications that test code
built on pgmbus against a real server.
"""
