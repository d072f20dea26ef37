ALTER INDEX objects_labels RESET (gin_pending_list_limit);
