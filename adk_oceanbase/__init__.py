"""adk-oceanbase: ADK session and memory services on OceanBase, seekdb and MySQL."""
__version__ = "0.1.0"
