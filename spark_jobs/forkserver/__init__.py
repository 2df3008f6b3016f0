"""The driver's Python fork server: Spark's Python workers of a driver start as forks of a
process that has already imported PySpark, NumPy, PyArrow and the job's sources.

- :mod:`~spark_jobs.forkserver.server`: the server the driver starts first thing, and the
  forked child that runs a worker's module;
- :mod:`~spark_jobs.forkserver.client`: ``streamops-python``, the Python the driver gives
  Spark, which asks the server for a fork or becomes the real Python.

Infrastructure of the driver, not a job: it lives apart from the jobs. Nothing is imported
here, so the client, which runs once per Python worker, loads only itself.
"""
