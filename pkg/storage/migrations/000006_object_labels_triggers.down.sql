DROP TRIGGER object_labels_on_delete ON objects;
DROP TRIGGER object_labels_on_update ON objects;
DROP TRIGGER object_labels_on_insert ON objects;
DROP FUNCTION object_labels_on_delete();
DROP FUNCTION object_labels_on_update();
DROP FUNCTION object_labels_on_insert();
