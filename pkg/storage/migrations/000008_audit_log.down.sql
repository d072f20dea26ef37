UPDATE state SET min_writer = 0;
DROP TABLE audit_log;
