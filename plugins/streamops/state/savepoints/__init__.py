"""The savepoint store: consistent copies of a job's stage checkpoints, with a manifest.

The job runtime takes a savepoint inside the Spark driver once every stage is paused at a
batch boundary; the ops side (CLI, Airflow) lists, verifies, retains, deletes and restores::

    <root>/savepoints/<name>/manifest.json
    <root>/savepoints/<name>/stages/<stage>/...     the stage's checkpoint files
    <root>/savepoints/.<name>.partial-<pid>/         being written, never listed
    <root>/savepoints/.deleting-<name>/              being deleted, never listed

Files are copies, never hard links of the checkpoint's: a link shares the inode, so a
savepoint file truncated or edited in place would damage the running job's checkpoint too.
Each file is read once while copied, its sha256 taken from the bytes copied (``checksum=
"size"`` records sizes only), and made read-only (0444). A savepoint directory may be on
another file system. A restore copies every stage out and checks it against the manifest
before it swaps any checkpoint (:mod:`.restore`).

One module a part: what the driver needs lives in the contract
(:mod:`streamops_contract.state.savepoints`: the manifest, a tree copied and hashed, taking
one all or nothing); here, the operator's: :mod:`.catalogue` (listing, finding, verifying,
deleting and the retention) and :mod:`.restore` (stages' checkpoints from one).
"""
