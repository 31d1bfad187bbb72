"""A minimal Django project on PostgreSQL for the pgmbus Django tests."""
