"""Static check of docker/docker-compose.yml (no Docker engine needed).

Parses the file as YAML and checks what adk-oceanbase relies on: the OceanBase CE image
pinned to a full version (not a floating tag) at or above the version gate's minimum,
port 2881 published, a healthcheck, both persistence volumes, tenant memory for the HNSW
index, only environment variables the oceanbase-ce image documents (oceanbase/docker-images,
oceanbase-ce/README.md, boot/env.sh, boot/start.sh), an obproxy-ce (ODP) service on 2883,
and no init.d setting that the pinned version makes harmful.

    python docker/check_compose.py
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import yaml

# Variables read by the image's boot/env.sh and boot/start.sh (see docker/README.md, sources).
KNOWN_ENV = {
    "MODE", "EXIT_WHILE_ERROR", "OB_CLUSTER_NAME", "OB_TENANT_NAME", "OB_MEMORY_LIMIT",
    "OB_DATAFILE_SIZE", "OB_LOG_DISK_SIZE", "OB_SYS_PASSWORD", "OB_TENANT_PASSWORD",
    "OB_SYSTEM_MEMORY", "OB_TENANT_MIN_CPU", "OB_TENANT_MEMORY_SIZE", "OB_TENANT_LOG_DISK_SIZE",
    "OB_CONFIGSERVER_ADDRESS", "OB_TENANT_INIT_SQL_DIR", "OB_SCENARIO", "OB_SERVER_IP",
}


MINIMUM = (4, 3, 5, 1)
"""adk_oceanbase.server_version.MINIMUMS["oceanbase"] (this script runs without the package installed)."""


def main() -> int:
    path = Path(__file__).with_name("docker-compose.yml")
    doc = yaml.safe_load(path.read_text())
    ob = doc["services"]["oceanbase"]
    problems = []
    if "oceanbase/oceanbase-ce" not in ob["image"]:
        problems.append(f"unexpected image {ob['image']}")
    if not any(str(p).endswith(":2881") for p in ob.get("ports", [])):
        problems.append("port 2881 is not published")
    if "test" not in ob.get("healthcheck", {}):
        problems.append("no healthcheck")
    mounts = {str(v).split(":")[1] for v in ob.get("volumes", [])}
    for needed in ("/root/ob", "/root/.obd/cluster"):
        if needed not in mounts:
            problems.append(f"{needed} is not persisted")
    unknown = set(ob.get("environment", {})) - KNOWN_ENV
    if unknown:
        problems.append(f"environment variables the image does not read: {sorted(unknown)}")
    pinned = re.search(r"oceanbase-ce:(\d+)\.(\d+)\.(\d+)\.(\d+)-\d+\}?$", ob["image"])
    if pinned is None:
        problems.append(f"image {ob['image']} is not pinned to a full version (x.y.z.bp-build)")
    elif tuple(map(int, pinned.groups())) < MINIMUM:
        problems.append(f"image {ob['image']} is older than the version gate's minimum {MINIMUM}")
    if "OB_TENANT_MEMORY_SIZE" not in ob.get("environment", {}):
        problems.append("no OB_TENANT_MEMORY_SIZE: the HNSW index lives in tenant memory")
    odp = doc["services"].get("obproxy")
    if odp is None or "obproxy-ce" not in odp.get("image", ""):
        problems.append("no obproxy-ce (ODP) service")
    elif not any(str(p).endswith(":2883") for p in odp.get("ports", [])):
        problems.append("ODP port 2883 is not published")
    for sql in sorted(path.with_name("init.d").glob("*.sql")):
        active = [ln for ln in sql.read_text().splitlines() if not ln.lstrip().startswith("--")]
        if any("ob_vector_memory_limit_percentage" in ln for ln in active):
            problems.append(f"{sql.name} sets ob_vector_memory_limit_percentage: adaptive from 4.3.5.3, a fixed value caps it")
    for p in problems:
        print("compose check:", p, file=sys.stderr)
    print("docker-compose.yml: " + ("OK" if not problems else f"{len(problems)} problem(s)"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
