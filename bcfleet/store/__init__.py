"""Persistence: SQLModel tables, engines for SQLite and PostgreSQL, transactions and migrations."""
