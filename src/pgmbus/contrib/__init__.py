"""Integrations with other frameworks: Celery (Kombu transport), Django, FastAPI."""
