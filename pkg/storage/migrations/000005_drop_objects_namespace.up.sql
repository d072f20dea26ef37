-- objects_namespace (namespace, key) served one query only: a metadata.namespace field selector
-- on a list across namespaces that the watch cache does not answer (a page, a continue token
-- or an exact RV), which now filters the resource's key range instead. Every create paid an
-- insert into it, as did every update the page could not keep in place: with object_labels
-- added, a create of three labels took 283 µs against 232 before; without this index, 258
-- (BenchmarkCreate, three labels, 8 runs each, interleaved).
DROP INDEX objects_namespace;
