"""Memory (docs/memory.md, seed 001): what a conversation was read into, and compaction.

Layering: ``memory`` builds on ``stores`` (the records and their indexes, `RecordStore`),
``lineage`` (finding turns and records, the one walk forward and forget share) and
``models`` (a summary is one model call); ``sessions`` builds on it (``host.memory``, the
handlers' ``ctx.ai.memory``, and the history a compacted session's model is given). It
imports nothing of ``sessions``: what it tells the host (events) goes through the
`MemoryNotices` seam the host passes in.
"""
