"""The stores the jobs write and the operator reads: the fleet store's tables
(:mod:`.store`) and the transactions journal (:mod:`.journal_store`), which a simulator
writes and a job's source reads.
"""
