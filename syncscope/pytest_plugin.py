"""pytest plugin (entry point `syncscope`): a `no_host_syncs` fixture and marker.

Kept import-light: torch is imported only when a test actually uses the fixture or marker.
"""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "no_host_syncs: fail the test on any in-scope host sync")


@pytest.fixture
def no_host_syncs():
    """Fail the test at the first host sync it makes (simulated device without a GPU)."""
    from syncscope.runtime.trap import forbid_syncs

    with forbid_syncs() as t:
        yield t
