-- nq schema version 22: volunteers who join by themselves (nq-client --join). See docs/store.md,
-- "Sign-ups", and docs/operations.md, "Running a public project". (Versions may have gaps.)
--
-- owners.self_joined: 1 for an owner made by a sign-up (not by the operator). Such an owner is
--   never trusted unless the operator says so (`nq-admin owner trust`), and with
--   --self-joined-distinct owner-and-network (the default) two results are independent votes
--   only when they differ in owner AND in network when either came from a self-joined owner.
-- owners.public_name: the name the volunteer chose to be shown under (NULL: anonymous).
-- signups: one row per sign-up the server admitted (a refusal stores nothing): its time, the
--   address (an IPv4 address, the /64 of an IPv6 one) and network (/24, /48) it came from, which
--   the per-address, per-network and per-day limits count; state pending (waiting for
--   `nq-admin owner approve|reject`, --signup approve), approved (the client has not come back
--   for its key yet), rejected, or joined (the owner and its first client exist: owner_id).
--   ticket_hash: the SHA-256 of the secret a pending request is polled with.

ALTER TABLE owners ADD COLUMN self_joined INTEGER NOT NULL DEFAULT 0
  CHECK (self_joined = 0 OR self_joined = 1);
ALTER TABLE owners ADD COLUMN public_name TEXT;
CREATE UNIQUE INDEX owners_public_name ON owners(public_name) WHERE public_name IS NOT NULL;

CREATE TABLE signups (
  id          INTEGER PRIMARY KEY,
  at          INTEGER NOT NULL,
  addr        TEXT NOT NULL,
  net         TEXT NOT NULL,
  state       TEXT NOT NULL CHECK (state IN ('pending', 'approved', 'rejected', 'joined')),
  ticket_hash TEXT UNIQUE,
  client_name TEXT NOT NULL,
  public_name TEXT,
  team        TEXT,
  owner_id    INTEGER REFERENCES owners(id),
  decided     INTEGER
);
CREATE INDEX signups_at ON signups(at);
CREATE INDEX signups_addr ON signups(addr, at);
CREATE INDEX signups_net ON signups(net, at);
CREATE INDEX signups_pending ON signups(id) WHERE state = 'pending';
