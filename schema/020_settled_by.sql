-- nq schema version 20: who settled a unit, for the evidence file (docs/evidence.md, "How a unit
-- is settled").
--
-- units.settled_by: the assignment whose trusted owner's result settled the unit (contest 2);
--   NULL for a unit settled by its quorum (contest 0) or by an audit's reference count (contest
--   3), and for units settled before this version (the export then names the oldest valid result
--   of a trusted owner with the unit's counts and nodes).

ALTER TABLE units ADD COLUMN settled_by INTEGER;
