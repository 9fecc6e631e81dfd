"""The memory service: ingest, recall + PALACE, supersede, review, REM, audit, purge."""
