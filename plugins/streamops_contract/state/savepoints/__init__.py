"""A savepoint as the driver takes it: its manifest (:mod:`.manifest`), a tree copied and
hashed (:mod:`.copying`), taking one all or nothing (:mod:`.create`). Listing, verifying,
retention and restore are the operator's (:mod:`streamops.state.savepoints`).
"""
