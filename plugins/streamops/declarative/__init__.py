"""Jobs and savepoints as desired state, reconciled: a pure decision over the resources the
state root holds (:mod:`streamops.state.declarative`), the existing procedures as the actions
(docs/architecture.md, *Declarative deployments*)."""
