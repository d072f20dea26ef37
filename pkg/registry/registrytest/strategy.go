package registrytest

import (
	"context"
	"reflect"
	"testing"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/gitops-service/gitops-service/pkg/apis/apitesting"
	"github.com/gitops-service/gitops-service/pkg/registry/strategy"
	"github.com/gitops-service/gitops-service/pkg/registry/table"
)

// Object is a stored kind: the runners set its generation and deep-copy it.
type Object interface {
	runtime.Object
	metav1.Object
}

// Kind is what the table runners need to know of a kind T whose status is an S.
type Kind[T Object, S any] struct {
	// Stored returns a valid object as stored: at generation 3, with a status if the
	// kind has one. Each call returns a new object, which the cases then mutate.
	Stored func() T
	// Kind returns what the storage builds the kind's strategies from.
	Kind func() strategy.Kind
	// StatusOf points into an object's status; nil for a kind without one.
	StatusOf func(T) *S
}

// strategies are built as the storage builds them, afresh for each case so that no case
// sees another's.
func (k Kind[T, S]) strategies() (strategy.Strategy, strategy.StatusStrategy) {
	sk := k.Kind()
	return strategy.New(&sk), strategy.NewStatus(&sk)
}

// mutated returns the stored object, and another that mutate has changed as a client would.
func (k Kind[T, S]) mutated(mutate func(T)) (obj, old T) {
	obj, old = k.Stored(), k.Stored()
	mutate(obj)
	return obj, old
}

func deepCopy[T Object](obj T) T { return obj.DeepCopyObject().(T) }

// Mutation is a named change to the stored object.
type Mutation[T Object] struct {
	Name   string
	Mutate func(T)
}

// GenerationCase is a change to the stored object and the generation it should leave.
type GenerationCase[T Object] struct {
	Name   string
	Mutate func(T)
	// Want is the generation after the update; the stored one is 3.
	Want int64
}

// ErrorsCase is a change to the stored object and the field errors it should cause.
type ErrorsCase[T Object] struct {
	Name   string
	Mutate func(T)
	Want   []apitesting.Want
}

// CellsCase is a change to the stored object and the table cells it should print.
type CellsCase[T Object] struct {
	Name   string
	Mutate func(T)
	Want   []interface{}
}

// FieldsCase is an object and the fields it should be selectable by.
type FieldsCase[T Object] struct {
	Name string
	Obj  T
	Want fields.Set
}

// RunPrepareForCreate checks that a created object starts at generation 1 with no
// status, whatever the client sent, and is otherwise left as sent.
func RunPrepareForCreate[T Object, S any](t *testing.T, k Kind[T, S], cases []Mutation[T]) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			s, _ := k.strategies()
			obj, _ := k.mutated(tc.Mutate)
			want := deepCopy(obj)
			if k.StatusOf != nil {
				var zero S
				*k.StatusOf(want) = zero
			}
			want.SetGeneration(1)
			s.PrepareForCreate(context.Background(), obj)
			if !apiequality.Semantic.DeepEqual(obj, want) {
				t.Errorf("got %+v\nwant %+v", obj, want)
			}
		})
	}
}

// RunPrepareForUpdate checks that an update keeps the stored status and bumps the
// generation as each case wants: only when the spec changes.
func RunPrepareForUpdate[T Object, S any](t *testing.T, k Kind[T, S], cases []GenerationCase[T]) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			s, _ := k.strategies()
			obj, old := k.mutated(tc.Mutate)
			s.PrepareForUpdate(context.Background(), obj, old)
			if obj.GetGeneration() != tc.Want {
				t.Errorf("generation = %d, want %d", obj.GetGeneration(), tc.Want)
			}
			if k.StatusOf == nil {
				return
			}
			if got, want := *k.StatusOf(obj), *k.StatusOf(old); !apiequality.Semantic.DeepEqual(got, want) {
				t.Errorf("status = %+v, want the stored %+v", got, want)
			}
		})
	}
}

// RunPrepareForStatusUpdate checks that a write to /status takes the sent status and
// nothing else of the sent object.
func RunPrepareForStatusUpdate[T Object, S any](t *testing.T, k Kind[T, S], cases []Mutation[T]) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			_, status := k.strategies()
			obj, old := k.mutated(tc.Mutate)
			want := deepCopy(old)
			*k.StatusOf(want) = *k.StatusOf(obj)
			status.PrepareForUpdate(context.Background(), obj, old)
			if !apiequality.Semantic.DeepEqual(obj, want) {
				t.Errorf("got %+v\nwant %+v", obj, want)
			}
		})
	}
}

// RunValidate checks the errors of creating each mutated stored object.
func RunValidate[T Object, S any](t *testing.T, k Kind[T, S], cases []ErrorsCase[T]) {
	t.Helper()
	runErrors(t, k, cases, func(s strategy.Strategy, _ strategy.StatusStrategy, obj, _ T) field.ErrorList {
		return s.Validate(context.Background(), obj)
	})
}

// RunValidateUpdate checks the errors of updating the stored object to each mutated one.
func RunValidateUpdate[T Object, S any](t *testing.T, k Kind[T, S], cases []ErrorsCase[T]) {
	t.Helper()
	runErrors(t, k, cases, func(s strategy.Strategy, _ strategy.StatusStrategy, obj, old T) field.ErrorList {
		return s.ValidateUpdate(context.Background(), obj, old)
	})
}

// RunValidateStatusUpdate checks the errors of writing each mutated stored object to /status.
func RunValidateStatusUpdate[T Object, S any](t *testing.T, k Kind[T, S], cases []ErrorsCase[T]) {
	t.Helper()
	runErrors(t, k, cases, func(_ strategy.Strategy, status strategy.StatusStrategy, obj, old T) field.ErrorList {
		return status.ValidateUpdate(context.Background(), obj, old)
	})
}

func runErrors[T Object, S any](t *testing.T, k Kind[T, S], cases []ErrorsCase[T],
	validate func(s strategy.Strategy, status strategy.StatusStrategy, obj, old T) field.ErrorList) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			s, status := k.strategies()
			obj, old := k.mutated(tc.Mutate)
			apitesting.ExpectErrors(t, validate(s, status, obj, old), tc.Want...)
		})
	}
}

// RunSelectableFields checks the fields that selectableFields gives each object.
func RunSelectableFields[T Object](t *testing.T, selectableFields func(runtime.Object) fields.Set, cases []FieldsCase[T]) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			if got := selectableFields(tc.Obj); !reflect.DeepEqual(got, tc.Want) {
				t.Errorf("got %v, want %v", got, tc.Want)
			}
		})
	}
}

// RunColumns checks the one row that columns print for each mutated stored object.
func RunColumns[T Object](t *testing.T, stored func() T, columns []table.Column, cases []CellsCase[T]) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			obj := stored()
			tc.Mutate(obj)
			tbl, err := table.NewConvertor(columns...).ConvertToTable(context.Background(), obj, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(tbl.Rows) != 1 || !reflect.DeepEqual(tbl.Rows[0].Cells, tc.Want) {
				t.Errorf("rows = %+v, want one with cells %v", tbl.Rows, tc.Want)
			}
		})
	}
}
