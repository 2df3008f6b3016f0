"""Where a job lives on disk: the state root's layout, the lease, locks, intents,
savepoints, checkpoints, the control files, the releases of the classpath jars.
"""
