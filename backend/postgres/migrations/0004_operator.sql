-- The operator's verbs (docs/operator-commands.md): a reprioritized event's priority,
-- and a job's priority once an event changed it (NULL: the spec's).
ALTER TABLE events ADD COLUMN priority bigint NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN priority_now bigint;

-- The queues and clusters an operator cordoned (backend.Cordons): kind
-- 'queue' or 'cluster'.
CREATE TABLE cordons (
    kind text NOT NULL,
    name text NOT NULL,
    PRIMARY KEY (kind, name)
);
