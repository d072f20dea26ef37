ALTER TABLE state DROP COLUMN min_writer;
