-- state holds the one global resourceVersion counter. Every write transaction increments it in
-- its last statement, so the row lock serialises writers from that point until COMMIT: RV order is
-- commit order (see pkg/storage/README.md).
CREATE TABLE state (
    id boolean PRIMARY KEY DEFAULT true CHECK (id),
    rv bigint  NOT NULL
);
INSERT INTO state (id, rv) VALUES (true, 1);

-- compaction holds the oldest RV that can still be read or watched from. It is a separate row so
-- that the compactor never waits for, or holds up, the writers' counter lock.
CREATE TABLE compaction (
    id boolean PRIMARY KEY DEFAULT true CHECK (id),
    rv bigint  NOT NULL
);
INSERT INTO compaction (id, rv) VALUES (true, 0);

-- objects is the current state, one row per key. Keys compare bytewise (COLLATE "C") so that
-- prefix ranges use the primary key index and list order matches etcd's.
CREATE TABLE objects (
    key        text COLLATE "C" PRIMARY KEY,
    resource   text COLLATE "C" NOT NULL,
    namespace  text COLLATE "C" NOT NULL,
    name       text COLLATE "C" NOT NULL,
    labels     jsonb  NOT NULL,
    value      bytea  NOT NULL,
    create_rv  bigint NOT NULL,
    mod_rv     bigint NOT NULL,
    expires_at timestamptz
) WITH (fillfactor = 80);
CREATE INDEX objects_labels ON objects USING gin (labels);
CREATE INDEX objects_namespace ON objects (namespace, key);
CREATE INDEX objects_expires ON objects (expires_at) WHERE expires_at IS NOT NULL;

-- changes is the log of every write in RV order. It feeds watches and, together with objects,
-- answers reads at an older RV: the state of a key at RV r is its row in objects when
-- mod_rv <= r, otherwise the prev_* columns of its first change after r.
CREATE TABLE changes (
    rv             bigint PRIMARY KEY,
    key            text COLLATE "C" NOT NULL,
    created        boolean NOT NULL,
    deleted        boolean NOT NULL,
    value          bytea,
    prev_value     bytea,
    prev_labels    jsonb,
    prev_namespace text COLLATE "C",
    prev_rv        bigint,
    committed_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX changes_key_rv ON changes (key, rv);

-- Fresh tables have no statistics; without them the planner guesses thousands of rows for the
-- single-row tables, which can push cheap queries over jit_above_cost.
ANALYZE state;
ANALYZE compaction;
