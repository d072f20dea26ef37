DROP INDEX objects_unique_key;
ALTER TABLE objects DROP COLUMN unique_key;
