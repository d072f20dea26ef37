CREATE INDEX objects_labels ON objects USING gin (labels) WITH (gin_pending_list_limit = 128);
DROP TABLE object_labels;
