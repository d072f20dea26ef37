-- GIN's fast update queues new entries in a pending list that every search reads in full until
-- (auto)vacuum or the list's size limit merges it into the index. At the default limit (4 MB)
-- a label-selected list right after a burst of creates spent 35 ms scanning it, against 7 ms
-- once merged (BenchmarkConsistentList, 100,000 pods). A small list keeps most of the cheaper
-- batched insertion and bounds what a search pays.
ALTER INDEX objects_labels SET (gin_pending_list_limit = 128);
