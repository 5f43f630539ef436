-- nq schema version 6: a hostile fleet (issue 12, the trust half). See docs/store.md.
-- (Versions 007-009 are reserved for other work; versions may have gaps.)
--
-- owners: every client belongs to one. An owner is a person or an organisation, made by the
--   operator (`nq-admin owner add`) with an enrolment key of its own (its SHA-256 in enrol_hash);
--   a client that enrols with that key belongs to it. Owner 1, "default", holds every client made
--   before this version and every client enrolled with the server's own enrolment key (meta
--   enrol_key_hash) or added by `nq-admin client add`. A banned owner's key enrols nobody.
-- clients.owner_id: its owner. clients.suspect: 1 once it agreed on an answer that lost (a spot
--   check or a dispute found the other answer right); its results no longer vote. clients.net:
--   the network (/24 of an IPv4 address, /64 of an IPv6 one) it last authenticated from.
-- assignments.net: the network the client was on when it was leased the unit and, once a result
--   is in, when it reported it (--quorum-distinct network). assignments.spot: 1 for a spot-check
--   replica of a verified unit. assignments.voided: 1 for a result that no longer votes (its unit
--   was re-opened against it: its client was banned, or it was in the group a spot check
--   contradicted); it is still judged against the unit's final answer.
-- units.others: the votes outside the best agreeing group (units.best), so that the scheduler
--   knows how many more agreeing replicas a unit needs for a strict majority:
--     need = max(0, min(max(quorum - best, others - best + 1), cap - results) - live)
--   cap = max_results + extra_results while the unit is open; a disputed unit keeps taking
--   replicas up to DISPUTE_FACTOR (3) x max_results + extra_results (then it is blocked until an
--   operator retries it).
-- units.spot: 0 no spot check; 1 wanted; 2 one is leased; 3 done. Verified units only.

CREATE TABLE owners (
  id         INTEGER PRIMARY KEY,
  name       TEXT NOT NULL UNIQUE,
  enrol_hash TEXT UNIQUE,
  created    INTEGER NOT NULL,
  banned     INTEGER NOT NULL DEFAULT 0 CHECK (banned = 0 OR banned = 1)
);
INSERT INTO owners (id, name, enrol_hash, created)
  VALUES (1, 'default', NULL, CAST(strftime('%s', 'now') AS INTEGER));

ALTER TABLE clients ADD COLUMN owner_id INTEGER NOT NULL DEFAULT 1 REFERENCES owners(id);
ALTER TABLE clients ADD COLUMN suspect INTEGER NOT NULL DEFAULT 0
  CHECK (suspect = 0 OR suspect = 1);
ALTER TABLE clients ADD COLUMN net TEXT;
CREATE INDEX clients_owner ON clients(owner_id);

ALTER TABLE assignments ADD COLUMN net TEXT;
ALTER TABLE assignments ADD COLUMN spot INTEGER NOT NULL DEFAULT 0 CHECK (spot = 0 OR spot = 1);
ALTER TABLE assignments ADD COLUMN voided INTEGER NOT NULL DEFAULT 0
  CHECK (voided = 0 OR voided = 1);
-- The units a client helped verify (a ban re-opens them).
CREATE INDEX assignments_valid ON assignments(client_id) WHERE state = 'valid';

ALTER TABLE units ADD COLUMN others INTEGER NOT NULL DEFAULT 0;
ALTER TABLE units ADD COLUMN spot INTEGER NOT NULL DEFAULT 0
  CHECK (spot = 0 OR spot = 1 OR spot = 2 OR spot = 3);

-- Disputed units take replicas too now: they are open work for the scheduler.
DROP INDEX units_open;
CREATE INDEX units_open ON units(job_id)
  WHERE need > 0 AND (state = 'leased' OR state = 'awaiting' OR state = 'disputed');
-- Verified units waiting for a spot check, or with one in flight.
CREATE INDEX units_spot ON units(job_id, spot) WHERE spot = 1 OR spot = 2;

-- Results that came while a unit was disputed were kept aside ('late'); they vote now.
UPDATE assignments SET state = 'reported'
  WHERE state = 'late' AND unit_id IN (SELECT id FROM units WHERE state = 'disputed');
