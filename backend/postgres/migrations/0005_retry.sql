-- Retry policies (docs/operator-commands.md): each queue's policy, in its JSON form
-- (events.RetryPolicy), kept when absent from a queue's definition.
CREATE TABLE retry_policies (
    queue  text PRIMARY KEY,
    policy jsonb NOT NULL
);

-- An event's retry rule (0: none) and avoidNode (run-failed and the lease
-- ends a rule retried).
ALTER TABLE events ADD COLUMN rule integer NOT NULL DEFAULT 0;
ALTER TABLE events ADD COLUMN avoid_node boolean NOT NULL DEFAULT false;

-- A job's retries per rule, its last rule and the nodes it avoids
-- (events.Job's Retries, Rule, AvoidNodes): {"retries": [0, 2], "rule": 2,
-- "avoidNodes": ["c1/n1"]}, or NULL when none is set.
ALTER TABLE jobs ADD COLUMN retry jsonb;
