"""Idempotent sinks of the jobs."""
