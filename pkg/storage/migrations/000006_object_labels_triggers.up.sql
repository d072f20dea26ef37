-- object_labels was written by the statements of gitops-apiserver that write objects
-- (migration 000004). A replica of an earlier release, still running while a newer one
-- migrated, wrote objects and changes only, and its rows were missing from the index (and
-- label-selected lists) for good. Triggers keep the index exact whoever writes objects: any
-- release, an operator's psql, a backfill.
--
-- Row triggers, each doing what the statements' CTEs did for their one row. A status update
-- leaves labels as they are and costs only the WHEN test.
CREATE FUNCTION object_labels_on_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- ON CONFLICT: writers of the release before this one also insert the rows themselves,
    -- earlier in the same statement.
    INSERT INTO object_labels (lkey, lvalue, key)
    SELECT l.key, l.value, NEW.key FROM jsonb_each_text(NEW.labels) l
    ON CONFLICT DO NOTHING;
    RETURN NULL;
END
$$;

-- Only the pairs that changed: most label changes touch one label of several.
CREATE FUNCTION object_labels_on_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM object_labels ol USING jsonb_each_text(OLD.labels) l
    WHERE ol.lkey = l.key AND ol.lvalue = l.value AND ol.key = OLD.key
        AND (NEW.key <> OLD.key OR NEW.labels ->> l.key IS DISTINCT FROM l.value);
    INSERT INTO object_labels (lkey, lvalue, key)
    SELECT l.key, l.value, NEW.key FROM jsonb_each_text(NEW.labels) l
    WHERE NEW.key <> OLD.key OR OLD.labels ->> l.key IS DISTINCT FROM l.value
    ON CONFLICT DO NOTHING;
    RETURN NULL;
END
$$;

CREATE FUNCTION object_labels_on_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM object_labels ol USING jsonb_each_text(OLD.labels) l
    WHERE ol.lkey = l.key AND ol.lvalue = l.value AND ol.key = OLD.key;
    RETURN NULL;
END
$$;

CREATE TRIGGER object_labels_on_insert AFTER INSERT ON objects
    FOR EACH ROW WHEN (NEW.labels <> '{}') EXECUTE FUNCTION object_labels_on_insert();
CREATE TRIGGER object_labels_on_update AFTER UPDATE OF key, labels ON objects
    FOR EACH ROW WHEN (NEW.labels <> OLD.labels OR NEW.key <> OLD.key) EXECUTE FUNCTION object_labels_on_update();
CREATE TRIGGER object_labels_on_delete AFTER DELETE ON objects
    FOR EACH ROW WHEN (OLD.labels <> '{}') EXECUTE FUNCTION object_labels_on_delete();

-- The repair of what earlier writers left wrong: label rows of objects deleted or relabelled
-- by them, and the labels of the objects they created or relabelled. CREATE TRIGGER took a
-- SHARE ROW EXCLUSIVE lock on objects, which every writer's INSERT, UPDATE and DELETE waits
-- for until this migration commits, so nothing changes objects between the repair and the
-- triggers taking over. Reads go on; writes wait for the repair (0.7-0.8 s at 100,000
-- objects), up to their lock_timeout. Without that lock a writer could relabel an object to a
-- pair the DELETE below then removes as stale, its snapshot being older than the relabel.
DELETE FROM object_labels ol
WHERE NOT EXISTS (SELECT FROM objects o WHERE o.key = ol.key AND o.labels ->> ol.lkey = ol.lvalue);
INSERT INTO object_labels (lkey, lvalue, key)
SELECT l.key, l.value, o.key FROM objects o, jsonb_each_text(o.labels) l
ON CONFLICT DO NOTHING;
