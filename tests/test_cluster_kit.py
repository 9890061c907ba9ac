"""The cluster kit against a real OceanBase cluster (behind ODP): ``ADK_OB_CLUSTER_URL=oceanbase://... pytest -m cluster``.

Nothing here can boot a cluster, so without the variable the test is skipped
with that reason (shown by ``-rs``).  The reason names no engine, so
``tests/conftest.py`` does not count it as an untested engine and ``CI=true``
stays green.  With it, every selftest check must pass on the cluster; set
``ADK_OB_CLUSTER_FAILOVER_WAIT`` (seconds) to pause the durability check for a
leader kill (README, "Growing into an OceanBase cluster").
"""

from __future__ import annotations

import os

import pytest

from adk_oceanbase import selftest
from adk_oceanbase.config import Config

URL = os.environ.get("ADK_OB_CLUSTER_URL", "")

pytestmark = [
    pytest.mark.cluster,
    pytest.mark.skipif(not URL, reason="no cluster to test: set ADK_OB_CLUSTER_URL=oceanbase://root%40tenant%23cluster:pw@odp:2883/adk"),
]


async def test_selftest_passes_on_the_cluster():
    wait = float(os.environ.get("ADK_OB_CLUSTER_FAILOVER_WAIT", "0"))
    outcomes = await selftest.run(Config.from_url(URL), failover_wait_s=wait, say=print)
    failed = [f"{o.check}: {o.detail}" for o in outcomes if not o.ok]
    assert not failed, failed
