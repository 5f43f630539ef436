-- nq schema version 23: what a public project tells and shows its volunteers. See docs/store.md,
-- "News and teams", and docs/http.md. (Versions may have gaps.)
--
-- news: the operator's messages to volunteers (`nq-admin news add TEXT`): shown on the page,
--   sent in welcome (the newest few) and to every connected client when added; each client logs
--   each item once.
-- teams: groups of owners, made by the operator (`nq-admin team add NAME`); a volunteer joins one
--   with `nq-client --join --team NAME`. owners.team_id: its team, or NULL.

CREATE TABLE news (
  id   INTEGER PRIMARY KEY,
  at   INTEGER NOT NULL,
  text TEXT NOT NULL
);

CREATE TABLE teams (
  id      INTEGER PRIMARY KEY,
  name    TEXT NOT NULL UNIQUE,
  created INTEGER NOT NULL
);
ALTER TABLE owners ADD COLUMN team_id INTEGER REFERENCES teams(id);
CREATE INDEX owners_team ON owners(team_id) WHERE team_id IS NOT NULL;
