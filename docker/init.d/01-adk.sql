-- Runs once, as root@<OB_TENANT_NAME> (root@test), right after the container's first boot
-- (oceanbase-ce boot/start.sh: exec_tenant_init_sql). Do NOT change root's password here:
-- the image applies OB_TENANT_PASSWORD after these scripts have run.

-- The database named in ADK_OCEANBASE_URL. adk-oceanbase would also create it on first
-- use (it needs the CREATE privilege for that); our tables set utf8mb4_bin themselves.
CREATE DATABASE IF NOT EXISTS adk DEFAULT CHARACTER SET utf8mb4;

-- Memory for HNSW vector indexes (the memory service). On OceanBase 4.3.x before 4.3.5.3
-- the default 0 allocates none and CREATE VECTOR INDEX fails; later versions size it
-- adaptively, and an explicit 30 (% of tenant memory) is still a sane dev setting.
ALTER SYSTEM SET ob_vector_memory_limit_percentage = 30;
