"""How long the procedures wait, written once: the CLI's loops, the DAGs' tasks and sensors
and the library's own waits read these (a DAG's sensor gets the library's wait plus its poke
slack, so the two never disagree on the procedure's patience)."""

from __future__ import annotations

HEALTH_TIMEOUT = 300.0  # a started driver becomes healthy (every stage committed or idle)
REQUEST_TIMEOUT = 180.0  # a savepoint request expires unanswered after this
SAVEPOINT_TIMEOUT = REQUEST_TIMEOUT + 60.0  # the wait for the answer (the request expires first)
STOP_TIMEOUT = 60.0  # a stopped driver's process ends
STANDBY_TIMEOUT = HEALTH_TIMEOUT  # a warm standby is ready
MASTER_TIMEOUT = 180.0  # the master leaves recovery, or lists the workers expected
VERIFY_BATCHES_TIMEOUT = 300.0  # every job commits a batch after a scale
CANCEL_TIMEOUT = 60.0  # the drivers a cancel killed are gone
MASTER_PATIENCE = 90.0  # a procedure's master call waits this long for a master restarting

SENSOR_SLACK = 30.0  # a DAG sensor polls a little longer than the library would wait
STOP_SENSOR_TIMEOUT = STOP_TIMEOUT + SENSOR_SLACK
