"""Where a job lives on disk, as both sides share it: the state root's layout, the lease, the
job status, the control files, the checkpoint cut, taking a savepoint.
"""
