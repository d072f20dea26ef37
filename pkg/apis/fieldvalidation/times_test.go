package fieldvalidation

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

type withTimes struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Status            struct {
		Conditions []metav1.Condition     `json:"conditions,omitempty"`
		Started    *metav1.Time           `json:"started,omitempty"`
		Probes     map[string]metav1.Time `json:"probes,omitempty"`
		Heartbeat  metav1.MicroTime       `json:"heartbeat,omitempty"`
	} `json:"status"`
}

func TestTimes(t *testing.T) {
	plusOne := time.FixedZone("+01:00", 3600)
	minusOne := time.FixedZone("-01:00", -3600)
	yearZeroPlusOne := metav1.NewTime(time.Date(0, 1, 1, 0, 0, 0, 0, plusOne))          // year -1 in UTC
	year9999MinusOne := metav1.NewTime(time.Date(9999, 12, 31, 23, 30, 0, 0, minusOne)) // year 10000 in UTC
	fine := metav1.NewTime(time.Date(2026, 11, 25, 12, 0, 0, 0, plusOne))
	for _, tt := range []struct {
		name  string
		set   func(*withTimes)
		paths []string
	}{
		{"none set", func(*withTimes) {}, nil},
		{"ordinary times", func(o *withTimes) {
			o.CreationTimestamp = fine
			o.Status.Started = &fine
			o.Status.Conditions = []metav1.Condition{{LastTransitionTime: fine}}
		}, nil},
		{"year 0 in UTC is fine", func(o *withTimes) { o.Status.Started = ptr(metav1.NewTime(time.Date(0, 1, 1, 1, 0, 0, 0, plusOne))) }, nil},
		{"a condition before year 0 in UTC", func(o *withTimes) {
			o.Status.Conditions = []metav1.Condition{{LastTransitionTime: fine}, {LastTransitionTime: yearZeroPlusOne}}
		}, []string{"status.conditions[1].lastTransitionTime"}},
		{"after 9999 in UTC", func(o *withTimes) { o.Status.Started = &year9999MinusOne }, []string{"status.started"}},
		{"in a map", func(o *withTimes) { o.Status.Probes = map[string]metav1.Time{"a": yearZeroPlusOne} }, []string{"status.probes[a]"}},
		{"a MicroTime", func(o *withTimes) { o.Status.Heartbeat = metav1.NewMicroTime(yearZeroPlusOne.Time) }, []string{"status.heartbeat"}},
		{"metadata", func(o *withTimes) { o.DeletionTimestamp = &year9999MinusOne }, []string{"metadata.deletionTimestamp"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			obj := &withTimes{}
			tt.set(obj)
			errs := Times(obj)
			var got []string
			for _, e := range errs {
				got = append(got, e.Field)
			}
			if len(got) != len(tt.paths) {
				t.Fatalf("errors at %v, want at %v (%v)", got, tt.paths, errs)
			}
			for i := range got {
				if got[i] != tt.paths[i] {
					t.Errorf("error %d at %s, want %s", i, got[i], tt.paths[i])
				}
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }
