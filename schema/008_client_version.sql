-- nq schema version 8: what each client runs (issue 13). See docs/store.md.
-- Every hello records the client's software (its `software` string, e.g. "nq-client 0.1.0") and
-- the protocol version the session speaks, for `nq-admin clients` and for knowing who still runs
-- an old client before a server raises its minimum protocol. NULL until the client's next hello,
-- so a database from an older version keeps its data.
ALTER TABLE clients ADD COLUMN software TEXT CHECK (software IS NULL OR length(software) <= 64);
ALTER TABLE clients ADD COLUMN protocol INTEGER CHECK (protocol IS NULL OR protocol >= 1);
