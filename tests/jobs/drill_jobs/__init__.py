"""Deliberately broken or incompatible job versions, for the test suite's drills of what the
tools do when an upgrade goes wrong: a version that crashes on start (rollback), a version
whose stateful stage changes its accumulator (refused by the plan), a version that renames a
stateful stage (dropped + new: refused without ``--allow-state-drop``).

Test code, not part of the product: ``tests/conftest.py`` puts ``tests/jobs`` on ``PYTHONPATH``
before the session's cluster starts, so its drivers import them as ``drill_jobs.<name>``.
"""
