-- nq schema version 11: hoarding by re-grab (issue 33). See docs/store.md, "Leases".
-- (Versions may have gaps.)
--
-- assignments.hold_until: the hold limit of the replica, set when a client of its key (the
--   --quorum-distinct mode: itself, its owner, its network) was first given the unit, and kept
--   when the same client, or another of its key, is given the unit again after a lease expired.
--   A lease or a progress extension never runs past it. Once it has passed and the lease has
--   expired, no client of that key gets the unit again until the replica has waited one
--   --lease-seconds for a client of another key (a job with exactly `quorum` keys still
--   finishes); then a fresh hold begins. 0 for rows made before this version (their hold is
--   issued + the hold time, as before).
-- clients.lapses: leases of the client that expired without a result, less one for each result
--   it reported since (never below 0). A client with lapses gets fewer and shorter leases
--   (docs/store.md), and `nq-admin clients` shows it as hoarding.

ALTER TABLE assignments ADD COLUMN hold_until INTEGER NOT NULL DEFAULT 0;
ALTER TABLE clients ADD COLUMN lapses INTEGER NOT NULL DEFAULT 0 CHECK (lapses >= 0);
