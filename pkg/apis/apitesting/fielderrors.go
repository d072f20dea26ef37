// Package apitesting holds what the tests of both API groups share: comparing validation
// errors by type and exact field path, and fuzzing every kind through a round trip.
package apitesting

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Want is one expected validation error: its type and its exact field path.
type Want struct {
	Type  field.ErrorType
	Field string
}

// Required, Invalid, NotSupported, Duplicate, Forbidden, TooLong and TooMany expect an error of
// that type at f.
func Required(f string) Want     { return Want{field.ErrorTypeRequired, f} }
func Invalid(f string) Want      { return Want{field.ErrorTypeInvalid, f} }
func NotSupported(f string) Want { return Want{field.ErrorTypeNotSupported, f} }
func Duplicate(f string) Want    { return Want{field.ErrorTypeDuplicate, f} }
func Forbidden(f string) Want    { return Want{field.ErrorTypeForbidden, f} }
func TooLong(f string) Want      { return Want{field.ErrorTypeTooLong, f} }
func TooMany(f string) Want      { return Want{field.ErrorTypeTooMany, f} }

// ExpectErrors compares the whole list, so an extra error fails as much as a missing one.
func ExpectErrors(t testing.TB, errs field.ErrorList, wants ...Want) {
	t.Helper()
	got := make([]string, 0, len(errs))
	for _, e := range errs {
		got = append(got, fmt.Sprintf("%s %s", e.Type, e.Field))
	}
	exp := make([]string, 0, len(wants))
	for _, w := range wants {
		exp = append(exp, fmt.Sprintf("%s %s", w.Type, w.Field))
	}
	sort.Strings(got)
	sort.Strings(exp)
	if strings.Join(got, "\n") != strings.Join(exp, "\n") {
		t.Errorf("errors:\n  %s\nwant:\n  %s\nfull: %v", strings.Join(got, "\n  "), strings.Join(exp, "\n  "), errs)
	}
}
