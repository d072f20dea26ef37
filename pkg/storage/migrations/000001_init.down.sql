DROP TABLE changes;
DROP TABLE objects;
DROP TABLE compaction;
DROP TABLE state;
