-- nq schema version 9: the public view (issue 14). See docs/store.md and docs/http.md.
-- (Versions 7 and 8 came from work in parallel; versions may have gaps.)
--
-- clients.credit_hi/credit_lo: a volunteer's credit, the node counts of the units for which one
--   of its results agreed with the verified answer (the assignment became 'valid'), split at 2^32
--   like the job_stats sums (hi = sum of nodes >> 32, lo = sum of nodes & 0xffffffff), so it stays
--   exact past 2^63. A trigger keeps it: results that lost (invalid), arrived late to a dispute
--   or were never judged earn nothing. An owner's credit is the sum over its clients (a GROUP BY
--   over clients joined to owners: sum(credit_hi), sum(credit_lo)).
-- clients.public_name: the name the client chose to be shown under (hello's public_name), NULL
--   to stay anonymous (shown as "anonymous-" and a short hash of its token hash).
-- job_history: one sample per job and minute (the server takes one every minute) of the
--   verified units, results and verified nodes, and the verified share of the estimated work, for
--   the rate chart and /api/history. Kept bounded by the server: every sample of the last day,
--   one per hour before that, and at most a fixed number in all (the oldest go first).

ALTER TABLE clients ADD COLUMN credit_hi INTEGER NOT NULL DEFAULT 0;
ALTER TABLE clients ADD COLUMN credit_lo INTEGER NOT NULL DEFAULT 0;
ALTER TABLE clients ADD COLUMN public_name TEXT;

-- The credit a database already earned before this version.
UPDATE clients SET
  credit_hi = (SELECT coalesce(sum(coalesce(u.nodes, 0) >> 32), 0) FROM assignments a
               JOIN units u ON u.id = a.unit_id WHERE a.client_id = clients.id AND a.state = 'valid'),
  credit_lo = (SELECT coalesce(sum(coalesce(u.nodes, 0) & 4294967295), 0) FROM assignments a
               JOIN units u ON u.id = a.unit_id WHERE a.client_id = clients.id AND a.state = 'valid');

-- The leaderboard reads the top of this index.
CREATE INDEX clients_credit ON clients (credit_hi * 4294967296.0 + credit_lo);

CREATE TRIGGER assignments_credit AFTER UPDATE OF state ON assignments
WHEN new.state = 'valid' AND old.state IS NOT 'valid'
BEGIN
  UPDATE clients SET
    credit_hi = credit_hi + (SELECT coalesce(nodes, 0) >> 32 FROM units WHERE id = new.unit_id),
    credit_lo = credit_lo + (SELECT coalesce(nodes, 0) & 4294967295 FROM units WHERE id = new.unit_id)
  WHERE id = new.client_id;
END;

-- A verified unit re-opened (schema 006: a spot check that disagrees, a ban, `unit reopen`) sends
-- its valid results back to 'reported' while the unit still holds its counts: the credit they
-- earned is taken back, exactly the parts that were added, so hi and lo stay sums of what the
-- client's valid results hold now; the results earn again if the unit is verified again.
CREATE TRIGGER assignments_uncredit AFTER UPDATE OF state ON assignments
WHEN old.state = 'valid' AND new.state IS NOT 'valid'
BEGIN
  UPDATE clients SET
    credit_hi = credit_hi - (SELECT coalesce(nodes, 0) >> 32 FROM units WHERE id = old.unit_id),
    credit_lo = credit_lo - (SELECT coalesce(nodes, 0) & 4294967295 FROM units WHERE id = old.unit_id)
  WHERE id = old.client_id;
END;

CREATE TABLE job_history (
  job_id   INTEGER NOT NULL REFERENCES jobs(id),
  minute   INTEGER NOT NULL, -- Unix time / 60
  verified INTEGER NOT NULL, -- verified units
  results  INTEGER NOT NULL, -- results received
  nodes_hi INTEGER NOT NULL, -- verified nodes, split at 2^32
  nodes_lo INTEGER NOT NULL,
  share    REAL NOT NULL,    -- verified share of the job, 0..1 (by estimates where known)
  PRIMARY KEY (job_id, minute)
) WITHOUT ROWID;
