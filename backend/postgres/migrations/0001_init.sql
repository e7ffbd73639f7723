-- Flotilla's PostgreSQL backend, version 1. Times are Unix nanoseconds
-- (bigint; NULL for the zero time), durations nanoseconds; resource
-- amounts are JSON objects keyed by resource name, so the resource schema
-- can grow without a migration.

-- The highest fencing token of any applied job write, in one row. The
-- token is a uint64 stored as a bigint with its top bit flipped
-- (token - 2^63), so that SQL's order is the tokens' order.
CREATE TABLE fence (
    one    boolean PRIMARY KEY DEFAULT true CHECK (one),
    biased bigint NOT NULL
);
INSERT INTO fence (one, biased) VALUES (true, -9223372036854775808);

CREATE TABLE queues (
    name            text PRIMARY KEY,
    priority_factor double precision NOT NULL,
    -- {"class": {"resource": fraction}}, or NULL.
    limits          jsonb
);

-- One row per job set ever written to: last_seq is its log's last
-- sequence number. Kept when the queue is deleted.
CREATE TABLE job_sets (
    queue    text   NOT NULL,
    name     text   NOT NULL,
    last_seq bigint NOT NULL,
    PRIMARY KEY (queue, name)
);

CREATE TABLE jobs (
    id               text PRIMARY KEY,
    queue            text     NOT NULL,
    job_set          text     NOT NULL,
    -- The spec: never changes after submit.
    priority_class   text     NOT NULL,
    priority         bigint   NOT NULL,
    submit_time      bigint,
    requests         jsonb    NOT NULL, -- {"cpu": 1000, "memory": 1073741824}
    node_selector    jsonb,             -- {"label": "value"}
    tolerations      jsonb,             -- [{"key", "operator", "value", "effect"}]
    avoid_clusters   text[],
    gang_id          text     NOT NULL,
    gang_cardinality integer  NOT NULL,
    gang_uniformity  text     NOT NULL,
    client_id        text,              -- NULL when none
    principal        text     NOT NULL,
    grace            bigint   NOT NULL,
    deadline         bigint   NOT NULL,
    runtime          bigint   NOT NULL,
    spec_exit_code   bigint   NOT NULL,
    -- The state its events left it in (events.Job).
    state            smallint NOT NULL,
    live             boolean  NOT NULL, -- not in a terminal state
    attempts         integer  NOT NULL,
    cancel_requested boolean  NOT NULL,
    cluster          text     NOT NULL,
    node             text     NOT NULL,
    failed_clusters  jsonb,             -- ["c1", "c2"], or NULL
    submitted        bigint,
    leased           bigint,
    finished         bigint,
    reason           text     NOT NULL,
    exit_code        bigint   NOT NULL
);
CREATE UNIQUE INDEX jobs_client_id ON jobs (queue, client_id) WHERE client_id IS NOT NULL;
CREATE INDEX jobs_live ON jobs (queue, id) WHERE live;

CREATE TABLE events (
    queue     text     NOT NULL,
    job_set   text     NOT NULL,
    seq       bigint   NOT NULL,
    time      bigint,
    job       text     NOT NULL,
    type      smallint NOT NULL,
    cluster   text     NOT NULL,
    node      text     NOT NULL,
    attempt   integer  NOT NULL,
    reason    text     NOT NULL,
    exit_code bigint   NOT NULL,
    requeued  boolean  NOT NULL,
    PRIMARY KEY (queue, job_set, seq)
);

CREATE TABLE executors (
    cluster  text PRIMARY KEY,
    reported bigint,
    -- [{"name", "labels", "taints", "total": {"cpu": 32000}, "unschedulable"}]
    nodes    jsonb NOT NULL
);

CREATE TABLE usage (
    key   text PRIMARY KEY,
    value jsonb NOT NULL, -- {"cpu": 12.5, "memory": 3e12}
    at    bigint
);
