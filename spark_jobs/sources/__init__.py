"""Replayable streaming sources of the jobs (Python Data Source API)."""
