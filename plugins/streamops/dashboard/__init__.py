"""The read-only dashboard: a live map of the vehicles, the jobs, savepoints and health
history, and ``/metrics`` for Prometheus (``streamops dashboard``, started by ``up``).

- :mod:`.data`    — the reads (fleet store, state root), shared by the page and the metrics;
- :mod:`.metrics` — the Prometheus collector;
- :mod:`.app`     — the FastAPI app and its static page (``static/``).
"""
