CREATE INDEX objects_namespace ON objects (namespace, key);
