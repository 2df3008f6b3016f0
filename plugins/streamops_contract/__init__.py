"""The contract between the job side and the operator side.

The job runtime (``spark_jobs``, inside the Spark drivers) and the operator (``streamops``:
CLI, Airflow, agents, health, dashboard) never import each other: they meet here, in what
both must spell the same way (docs/architecture.md, "Floors"):

- :mod:`.state.layout` — the state root's layout and its record read/write helpers;
- :mod:`.spec` — the job spec model (what a driver is submitted with);
- :mod:`.names`, :mod:`.hosts` — safe names, this host's address;
- :mod:`.exceptions` — the base of the one exception hierarchy (``streamops.exceptions``
  extends it);
- the records both sides read and write: a job's status (:mod:`.state.job_status`), its
  lease (:mod:`.state.lease`), its control requests (:mod:`.state.control`), its
  submissions and driver starts (:mod:`.records`), savepoints (:mod:`.state.savepoints`),
  the checkpoint cut (:mod:`.state.checkpoint_cut`) and the master's recovery files
  (:mod:`.recovery`).

It imports nothing of either side (``scripts/import_cycles.py`` checks it). Shipped with them:
a package of the same installation, on the Python path of every driver.
"""
