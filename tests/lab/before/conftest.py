"""before/: ct200 as the seeds found it (the `before` image)."""

import pytest


@pytest.fixture(scope="module")
def lab_state():
    return "before"
