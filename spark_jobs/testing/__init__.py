"""Deliberately broken or incompatible job versions, for rehearsing the procedures.

They exist so an operator (and the test-suite) can drill what the tools do when an upgrade
goes wrong: a version that crashes on start (rollback), a version whose stateful stage
changes its accumulator (refused by the plan), a version that renames a stateful stage
(dropped + new: refused without ``--allow-state-drop``).
"""
