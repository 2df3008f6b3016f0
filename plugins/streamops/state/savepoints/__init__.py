"""The savepoint store: consistent copies of a job's stage checkpoints, with a manifest.

The job runtime takes a savepoint inside the Spark driver once every stage is paused at a
batch boundary; the ops side (CLI, Airflow) lists, verifies, retains, deletes and restores::

    <root>/savepoints/<name>/manifest.json
    <root>/savepoints/<name>/stages/<stage>/...     the stage's checkpoint files
    <root>/savepoints/.<name>.partial-<pid>/         being written, never listed
    <root>/savepoints/.deleting-<name>/              being deleted, never listed

Files are hard links, not copies: Spark never rewrites a checkpoint file in place (it
writes a temporary file and renames it over), so a link keeps the bytes of the boundary
while the job goes on, and a savepoint costs time per file, not per byte. Only the
``sha256`` checksums read the bytes; ``checksum="size"`` records sizes only.

One module a part: :mod:`.manifest` (what a savepoint holds, reading and checking its
files), :mod:`.create` (taking one, all or nothing), :mod:`.catalogue` (listing, finding,
verifying, deleting and the retention) and :mod:`.restore` (a stage's checkpoint from one).
"""
