"""What the running test is marked for, so a test that starts a ``redis-server`` or runs a
crawl without its marker fails at once instead of slipping into the default run.

``tests/conftest.py`` sets :data:`MARKS` before each test; outside pytest (the benchmarks
use the same helpers) it stays None and nothing is checked.
"""

from __future__ import annotations

#: The markers of the test being run; None outside a test run.
MARKS: frozenset[str] | None = None


def require(marker: str, what: str) -> None:
    """Refuse ``what`` (a redis-server started, a crawl run) in a test not marked ``marker``."""
    if MARKS is not None and marker not in MARKS:
        raise RuntimeError(
            f"this test {what} but is not marked `{marker}`: use a fixture of tests/conftest.py "
            f"that marks it, or mark it with @pytest.mark.{marker}"
        )
