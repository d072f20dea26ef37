-- unique_key is what must be unique among the objects of one resource in one namespace, for the
-- resources that have such a rule (one SnapshotEnvironmentBinding per application and
-- environment). The index makes of two racing creates exactly one win.
ALTER TABLE objects ADD COLUMN unique_key text COLLATE "C";
CREATE UNIQUE INDEX objects_unique_key ON objects (resource, namespace, unique_key) WHERE unique_key IS NOT NULL;
