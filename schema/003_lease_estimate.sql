-- nq schema version 3: leases sized from the expected cost of a unit. See docs/store.md.
-- The scheduler reads a client's most recent reported solve times (assignments.seconds) for the
-- job to size its next leases; this partial index walks them newest first without touching the
-- client's leased or expired rows. No table changes: a database from version 2 keeps its data.
CREATE INDEX assignments_client_reported ON assignments(client_id, id) WHERE seconds IS NOT NULL;
