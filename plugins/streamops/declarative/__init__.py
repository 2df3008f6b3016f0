"""Jobs and savepoints as desired state, reconciled: resources as files, a pure decision,
the existing procedures as the actions (docs/architecture.md, *Declarative deployments*)."""
