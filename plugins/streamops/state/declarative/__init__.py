"""The declarative resources as records of the state root: the typed resources (job
deployments, savepoint requests), their status records, and the store of both under
``<root>/declarative/``. The reconcile that makes them so is :mod:`streamops.declarative`."""
