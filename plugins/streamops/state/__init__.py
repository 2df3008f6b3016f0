"""The operator's records of the state root: one live operation per job (the operation
lease), the cluster's size, the savepoint catalogue and restore, the declarative resources with
their status. The paths, the driver's lease, the status and the control files are the
contract's (:mod:`streamops_contract.state`).
"""
