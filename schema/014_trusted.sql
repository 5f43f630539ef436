-- nq schema version 14: trusted resolution (issue 30). See docs/store.md, "Trusted resolution",
-- and docs/reliability.md. (Versions may have gaps.)
--
-- owners.trusted: 1 for an owner the operator trusts (`nq-admin owner trust NAME`: the
--   operator's own machines, a lab's cluster). While any trusted owner exists (and is not
--   banned), a disagreement among results is never settled by counting votes: the unit becomes
--   contested and waits for a trusted owner's result (or an authoritative count, an audit), and
--   only a result that disagrees with that authority gets its owner banned.
-- units.contest: 0 never contested (or settled by votes as before); 1 contested: its results
--   disagree, it is not verified (its state is 'disputed'), takes no untrusted replica (need 0)
--   and waits for a trusted result; 2 verified by a trusted owner's result that settled a
--   disagreement; 3 verified by an authoritative count given to srv_sched_settle (an audit).

ALTER TABLE owners ADD COLUMN trusted INTEGER NOT NULL DEFAULT 0
  CHECK (trusted = 0 OR trusted = 1);
ALTER TABLE units ADD COLUMN contest INTEGER NOT NULL DEFAULT 0
  CHECK (contest = 0 OR contest = 1 OR contest = 2 OR contest = 3);
-- The contested units of a job: as many rows as contested units (status, trusted picks).
CREATE INDEX units_contested ON units(job_id) WHERE contest = 1;
-- The trusted owners: the scheduler asks at every decision whether any exists (a scan of this
-- index, as many rows as trusted owners, not of every volunteer).
CREATE INDEX owners_trusted ON owners(id) WHERE trusted = 1;
