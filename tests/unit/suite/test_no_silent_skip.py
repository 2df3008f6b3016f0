"""The suite itself: under ``STREAMOPS_REQUIRE_ALL=1`` every kind of skip fails with its reason
(``support.require_all``), and a PostgreSQL server that does not answer fails the tests that
need it, naming it (``support.postgres``), with or without the variable. Each runs pytest on
a small test module of its own (``pytester``, in this process)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from support.postgres import TEST_PG_URL
from support.require_all import REQUIRE_ALL

SKIPS = """
import pytest

@pytest.fixture
def server():
    pytest.skip("no server here")

@pytest.mark.skipif(True, reason="no chromium here")
def test_marked():
    pass

def test_skips_itself():
    pytest.skip("not root here")

def test_needs_a_server(server):
    pass

@pytest.mark.xfail(reason="a known defect", strict=True)
def test_expected_to_fail():
    raise AssertionError

def test_runs():
    pass
"""

MODULE_SKIPPED = """
import pytest

pytest.skip("no ip here", allow_module_level=True)

def test_never():
    pass
"""

FAILED = f"{REQUIRE_ALL}=1 and this would be skipped: Skipped: "


def test_without_the_variable_a_skip_is_a_skip(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(REQUIRE_ALL, raising=False)
    pytester.makepyfile(test_skips=SKIPS, test_module_skipped=MODULE_SKIPPED)
    result = pytester.runpytest("-p", "support.require_all")
    result.assert_outcomes(passed=1, skipped=4, xfailed=1)


def test_under_the_variable_every_skip_fails_with_its_reason(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(REQUIRE_ALL, "1")
    pytester.makepyfile(test_skips=SKIPS)
    result = pytester.runpytest("-p", "support.require_all")
    # the mark and the fixture skip in the setup (an error), the test in its call (a failure)
    result.assert_outcomes(passed=1, failed=1, errors=2, xfailed=1)
    for reason in ("no chromium here", "no server here", "not root here"):
        result.stdout.fnmatch_lines([f"{FAILED}{reason} (*test_skips.py:*)"])
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def test_under_the_variable_a_module_skipped_at_collection_fails(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(REQUIRE_ALL, "1")
    pytester.makepyfile(test_module_skipped=MODULE_SKIPPED)
    result = pytester.runpytest("-p", "support.require_all")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines([f"{FAILED}no ip here (*test_module_skipped.py:*)"])
    assert result.ret == pytest.ExitCode.INTERRUPTED  # pytest stops after a collection error


@pytest.mark.parametrize("require_all", ["", "1"])
def test_a_postgresql_that_does_not_answer_fails_naming_it(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    free_port: Callable[[], int],
    require_all: str,
) -> None:
    monkeypatch.setenv(REQUIRE_ALL, require_all)
    url = f"postgresql+psycopg2://nobody@127.0.0.1:{free_port()}/none"  # nothing listens there
    monkeypatch.setenv(TEST_PG_URL, url)
    pytester.makeconftest("""
        import pytest

        @pytest.fixture(scope="session")
        def free_port():
            def none():
                raise AssertionError("an external server needs no port")
            return none
    """)  # fmt: skip
    pytester.makepyfile("def test_store(postgres_url):\n    pass\n")
    result = pytester.runpytest("-p", "support.postgres", "-p", "support.require_all")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines([f"*the tests' PostgreSQL at {url} does not answer*"])
