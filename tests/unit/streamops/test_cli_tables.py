"""Every table the CLI prints, rendered at 60 and at 200 columns: each value stays whole
(wrapped at spaces, never cut with an ellipsis)."""

from __future__ import annotations

import io
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from rich.console import Console

from streamops.cli.agent_cmds import releases_table
from streamops.cli.airflow_cmds import status_table as airflow_table
from streamops.cli.health_cmds import history_table, report_table
from streamops.cli.job_cmds import jobs_table
from streamops.cli.savepoint_cmds import savepoints_table
from streamops.cli.sim_cmds import status_table as sims_table
from streamops.cli.stack_cmds import vehicles_table
from streamops.cli.tables import Listing, print_fields
from streamops.health.report import CheckResult, HealthReport, Level
from streamops.job_view import JobView
from streamops.sim.background import SimStatus
from streamops.stack.airflow_stack import ComponentStatus
from streamops_contract.state.savepoints.manifest import SavepointInfo

WIDTHS = (60, 200)
DRIVER = "driver-20260301103012-0002"
LONG = ("job fleet-pings: stage vehicle-stats-1m committed no batch for 312 s (limit 120 s); "
        "source fleetsim-beta degraded since 10:31:02: connection refused")  # fmt: skip


def render(listing: Listing, width: int, *, stacked: bool = False) -> str:
    out = Console(width=width, file=io.StringIO(), record=True, color_system=None)
    listing.print(out, stacked=stacked)
    return out.export_text()


def assert_whole(text: str, values: list[str], width: int) -> None:
    """No line is wider than the console, nothing is cut, every value reads whole once the
    wrapping (line breaks and padding) is undone."""
    assert "…" not in text
    assert max(len(line.rstrip()) for line in text.splitlines()) <= width
    flat = " ".join(text.split())
    for value in values:
        assert " ".join(value.split()) in flat, (width, value, text)


def job_view() -> JobView:
    return JobView(
        name="fleet-pings", version="2", state="RUNNING", is_live=True, driver_id=DRIVER,
        driver_state="RUNNING", worker="worker-2", worker_address="127.0.0.1:34005",
        last_batch_age=3.2, input_rows_per_second=400.0, processed_rows_per_second=398.5,
        standby="driver-20260301103013-0003 armed",
    )  # fmt: skip


TABLES = {
    "jobs": (jobs_table([job_view()]),
             ["fleet-pings", DRIVER, "worker-2 (127.0.0.1:34005)",
              "driver-20260301103013-0003 armed", "3.2 s ago", "398.5", "processed rows/s"]),
    "health": (report_table(HealthReport(time.time(), (
        CheckResult("cluster", "workers", Level.FAIL, "worker worker-2 is DEAD; 1 of 2 "
                    "expected workers ALIVE"),
        CheckResult("progress", "fleet-pings/vehicle-stats-1m", Level.WARN, LONG)))),
        ["worker worker-2 is DEAD; 1 of 2 expected workers ALIVE", LONG,
         "fleet-pings/vehicle-stats-1m", "fail", "warn"]),
    "health history": (history_table([
        {"at": time.time(), "source": "airflow", "level": "fail", "summary": LONG,
         "results": [{"level": "fail"}, {"level": "warn"}]}]),
        [LONG, "airflow", "1 / 1"]),
    "list-snapshots": (savepoints_table([SavepointInfo(
        "fleet-pings-upgrade-20260301-103000", "fleet-pings", "2", time.time(), 3 * 2**20,
        ("vehicles", "vehicle-stats-1m", "quarantine-audit"), Path("/tmp/sp"))]),
        ["fleet-pings-upgrade-20260301-103000", "3.0 MiB",
         "vehicles, vehicle-stats-1m, quarantine-audit"]),
    "sim status": (sims_table([
        SimStatus("beta", "fleetsim-beta", 4242, "127.0.0.1", 8000, 1234,
                  Path("/work/var/cluster/logs/fleetsim-beta.log")),
        SimStatus("alpha", "fleetsim-alpha", None, None, None, None,
                  Path("/work/var/cluster/logs/fleetsim-alpha.log"))]),
        ["fleetsim-beta", "running", "4242", "8000", "1234", "stopped",
         "/work/var/cluster/logs/fleetsim-beta.log"]),
    "vehicles": (vehicles_table([SimpleNamespace(
        vin="1BWDE7L2X4N123456", source="fleetsim-beta", sequence=123456, latitude=52.520008,
        longitude=13.404954, speed=48.25, heading=271.5)], 100),
        ["1BWDE7L2X4N123456", "fleetsim-beta", "123456", "52.52001", "13.40495", "271.5"]),
    "airflow status": (airflow_table("http://127.0.0.1:8088", [
        ComponentStatus("dag-processor", 777, "healthy"),
        ComponentStatus("api-server", None, None)]),
        ["http://127.0.0.1:8088", "dag-processor", "777", "healthy", "api-server"]),
    "release list": (releases_table("/work/config/jars/releases", ["r1", "r2"], "r2"),
                     ["/work/config/jars/releases", "r1", "r2"]),
}  # fmt: skip


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("name", sorted(TABLES))
def test_every_table_keeps_its_values_whole(name: str, width: int) -> None:
    listing, values = TABLES[name]
    assert_whole(render(listing, width), [listing.title, *values], width)


@pytest.mark.parametrize("width", WIDTHS)
def test_an_outcome_prints_as_name_value_lines(width: int) -> None:
    out = Console(width=width, file=io.StringIO(), record=True, color_system=None)
    print_fields("job fleet-pings upgraded", [("version", "v1 → v2"), ("driver", DRIVER),
                                              ("savepoint took", "4.2 s")], out)  # fmt: skip
    text = out.export_text()
    assert_whole(text, ["job fleet-pings upgraded", "v1 → v2", DRIVER], width)
    assert any(line.split()[:2] == ["driver", DRIVER] for line in text.splitlines() if line)


def test_wide_terminal_gets_one_line_per_row_narrow_one_block_per_row() -> None:
    listing, _ = TABLES["jobs"]
    wide = [line for line in render(listing, 200).splitlines() if DRIVER in line]
    assert len(wide) == 1 and "worker-2 (127.0.0.1:34005)" in wide[0]
    narrow = render(listing, 60).splitlines()
    assert any(line.split()[:2] == ["driver", DRIVER] for line in narrow if line)


def test_a_long_last_column_wraps_in_the_grid() -> None:
    listing, _ = TABLES["health"]
    lines = render(listing, 120).splitlines()
    assert lines[1].split()[:4] == ["group", "check", "level", "message"]  # still a grid
    assert len([line for line in lines if "fleet-pings/vehicle-stats-1m" in line]) == 1


def test_a_row_must_fill_every_column() -> None:
    with pytest.raises(ValueError, match="2 cells for 3 columns"):
        Listing("t", ("a", "b", "c")).add("1", "2")
