-- Runs once, as root@<OB_TENANT_NAME> (root@test), right after the container's first boot
-- (oceanbase-ce boot/start.sh: exec_tenant_init_sql). Do NOT change root's password here:
-- the image applies OB_TENANT_PASSWORD after these scripts have run.

-- The database named in ADK_OCEANBASE_URL. adk-oceanbase would also create it on first
-- use (it needs the CREATE privilege for that); our tables set utf8mb4_bin themselves.
CREATE DATABASE IF NOT EXISTS adk DEFAULT CHARACTER SET utf8mb4;

-- No ALTER SYSTEM SET ob_vector_memory_limit_percentage here any more: from 4.3.5.3 (the pinned image)
-- its default 0 is adaptive (40% of a tenant of 8 GB or less, 50% above), and the 30 this file used to
-- set would cap the HNSW index below that. On an older image (OB_IMAGE < 4.3.5.3, which setup refuses
-- below 4.3.5.1 anyway) set it by hand: ALTER SYSTEM SET ob_vector_memory_limit_percentage = 30;
