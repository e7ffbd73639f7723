-- The leader lease (backend.Leases), in one row: who holds it, where it
-- forwards to, its fencing token (below 2^63, so a plain bigint) and when
-- it ends by the database's clock.
CREATE TABLE leader (
    one     boolean     PRIMARY KEY DEFAULT true CHECK (one),
    holder  text        NOT NULL,
    address text        NOT NULL,
    token   bigint      NOT NULL,
    expires timestamptz NOT NULL
);
