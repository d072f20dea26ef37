// Package table renders objects as the tables kubectl get prints.
package table

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apiserver/pkg/registry/rest"
)

// Column is one column of a resource's table, after NAME and before AGE.
type Column struct {
	metav1.TableColumnDefinition
	// Cell returns the column's value for one object.
	Cell func(obj runtime.Object) interface{}
}

// Convertor renders a resource's objects with its columns.
type Convertor struct {
	columns []Column
}

var _ rest.TableConvertor = Convertor{}

// NewConvertor returns a convertor printing NAME, then columns, then AGE.
func NewConvertor(columns ...Column) Convertor {
	return Convertor{columns: columns}
}

var objectMetaDescriptions = metav1.ObjectMeta{}.SwaggerDoc()

// ConvertToTable implements rest.TableConvertor.
func (c Convertor) ConvertToTable(_ context.Context, object runtime.Object, tableOptions runtime.Object) (*metav1.Table, error) {
	var table metav1.Table
	row := func(obj runtime.Object) error {
		m, err := meta.Accessor(obj)
		if err != nil {
			return err
		}
		cells := make([]interface{}, 0, len(c.columns)+2)
		cells = append(cells, m.GetName())
		for _, col := range c.columns {
			cells = append(cells, col.Cell(obj))
		}
		cells = append(cells, age(m.GetCreationTimestamp()))
		table.Rows = append(table.Rows, metav1.TableRow{Cells: cells, Object: runtime.RawExtension{Object: obj}})
		return nil
	}
	if meta.IsListType(object) {
		if err := meta.EachListItem(object, row); err != nil {
			return nil, err
		}
	} else if err := row(object); err != nil {
		return nil, err
	}

	// kubectl pages through tables (--chunk-size) with the list's continue token.
	if m, err := meta.ListAccessor(object); err == nil {
		table.ResourceVersion = m.GetResourceVersion()
		table.Continue = m.GetContinue()
		table.RemainingItemCount = m.GetRemainingItemCount()
	} else if m, err := meta.CommonAccessor(object); err == nil {
		table.ResourceVersion = m.GetResourceVersion()
	}

	if opts, ok := tableOptions.(*metav1.TableOptions); !ok || !opts.NoHeaders {
		table.ColumnDefinitions = make([]metav1.TableColumnDefinition, 0, len(c.columns)+2)
		table.ColumnDefinitions = append(table.ColumnDefinitions, metav1.TableColumnDefinition{
			Name: "Name", Type: "string", Format: "name", Description: objectMetaDescriptions["name"],
		})
		for _, col := range c.columns {
			table.ColumnDefinitions = append(table.ColumnDefinitions, col.TableColumnDefinition)
		}
		table.ColumnDefinitions = append(table.ColumnDefinitions, metav1.TableColumnDefinition{
			Name: "Age", Type: "string", Description: objectMetaDescriptions["creationTimestamp"],
		})
	}
	return &table, nil
}

func age(ts metav1.Time) string {
	if ts.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(time.Since(ts.Time))
}

// String is a column of type string of objects of type T.
func String[T runtime.Object](name, description string, cell func(T) string) Column {
	return Column{
		TableColumnDefinition: metav1.TableColumnDefinition{Name: name, Type: "string", Description: description},
		Cell:                  func(obj runtime.Object) interface{} { return cell(obj.(T)) },
	}
}

// Integer is a column of type integer of objects of type T.
func Integer[T runtime.Object](name, description string, cell func(T) int64) Column {
	return Column{
		TableColumnDefinition: metav1.TableColumnDefinition{Name: name, Type: "integer", Description: description},
		Cell:                  func(obj runtime.Object) interface{} { return cell(obj.(T)) },
	}
}

// Wide marks a column to be shown only with -o wide.
func Wide(c Column) Column {
	c.Priority = 1
	return c
}

// LastCondition is the last of conditions, the one application-api's kinds print as their
// state (.status.conditions[-1]); the zero Condition when there is none.
func LastCondition(conditions []metav1.Condition) metav1.Condition {
	if len(conditions) == 0 {
		return metav1.Condition{}
	}
	return conditions[len(conditions)-1]
}
