"""The world the operations port reaches: the port itself, the real port, and the actions it
runs against the master, the node agents and the state root (submit, start from a savepoint,
restore a version's checkpoints, warm standbys, the cluster's nodes).
"""
