"""The operations on jobs and the cluster, each a list of resumable steps over a typed
intent: submit, upgrade, savepoint, restart, scale, the full-cluster restart, standbys.
"""
