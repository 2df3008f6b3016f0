"""Airflow hooks, operators, sensors and task groups over the streamops ops library.

Thin wrappers: every task calls one procedure of ``streamops`` (the same code the CLI uses).
Importing this package does no work and opens no connection, so DAG parsing stays cheap.
"""
