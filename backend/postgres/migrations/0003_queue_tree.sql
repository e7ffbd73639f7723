-- The queue tree (docs/queue-tree.md): a queue's parent group and quota
-- vectors, and the groups. A quota vector is a JSON object of resource
-- amounts in the schema's units ({"cpu": 16000, "nvidia.com/gpu": 4}),
-- the resources not given left out; NULL when none is given.
ALTER TABLE queues
    ADD COLUMN parent        text NOT NULL DEFAULT '',
    ADD COLUMN guaranteed    jsonb,
    ADD COLUMN quota_limit   jsonb,
    ADD COLUMN lending_limit jsonb;

CREATE TABLE queue_groups (
    name            text PRIMARY KEY,
    parent          text NOT NULL,
    priority_factor double precision NOT NULL,
    guaranteed      jsonb,
    quota_limit     jsonb,
    lending_limit   jsonb
);
CREATE INDEX queue_groups_parent ON queue_groups (parent);
CREATE INDEX queues_parent ON queues (parent) WHERE parent <> '';
