-- audit_log is the audit trail (AuditTrail): one row per audited write, inserted by the write's
-- own statement, so that it commits or rolls back with the write. rv is the write's
-- resourceVersion; entry is what the server made of the request (user, verb, object), from
-- which it builds the AuditEntry objects it serves. The trail is not in objects and changes:
-- a row here costs one heap tuple and one index entry, where an object costs a dozen.
CREATE TABLE audit_log (
    namespace    text COLLATE "C" NOT NULL,
    rv           bigint NOT NULL,
    entry        bytea  NOT NULL,
    committed_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (namespace, rv)
);
-- Retention deletes by age; rows arrive in time order, which a BRIN index follows at the cost
-- of a few pages.
CREATE INDEX audit_log_committed_at ON audit_log USING brin (committed_at);

-- Writers of earlier releases would write without their audit rows: from this commit on they
-- are refused (min_writer, 000007).
UPDATE state SET min_writer = 8;
