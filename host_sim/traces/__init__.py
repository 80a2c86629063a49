"""Traces (docs/traces.md): task -> session -> output -> commit, linked by the host;
the event spool; agents' proposed actions; the read-only lineage lookup tool."""
