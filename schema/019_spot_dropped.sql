-- nq schema version 19: spot checks that no eligible owner can take are dropped, with a record
-- (docs/reliability.md, "Liveness"; docs/store.md, "Trusted resolution").
--
-- jobs.spot_dropped: how many of the job's spot checks were dropped because, once every unit was
--   verified, no client that may take them (a key that never had the unit; a trusted owner's
--   while one is active) was online for the bound (SRV_SPOT_WAIT_S after the unit was verified).
--   The job is done without them and its status says so.
ALTER TABLE jobs ADD COLUMN spot_dropped INTEGER NOT NULL DEFAULT 0 CHECK (spot_dropped >= 0);

-- clients.paused_since: when the client last said it is paused (`paused` in `progress`,
--   docs/protocol.md), 0 while it is not. Its leases are extended while it says so (within their
--   hold limit) rather than left to lapse; status counts the paused clients seen within the window.
ALTER TABLE clients ADD COLUMN paused_since INTEGER NOT NULL DEFAULT 0 CHECK (paused_since >= 0);
