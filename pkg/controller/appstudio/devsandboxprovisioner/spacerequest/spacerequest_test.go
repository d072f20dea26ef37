package spacerequest

import (
	"errors"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fakediscovery "k8s.io/client-go/discovery/fake"
	clienttesting "k8s.io/client-go/testing"
)

// TestServed: only discovery's answer (the resource listed, the group/version not found or
// listed without it) changes Served's; an error that is no answer keeps the last one.
func TestServed(t *testing.T) {
	served := &metav1.APIResourceList{GroupVersion: GroupVersion,
		APIResources: []metav1.APIResource{{Name: "spacerequests", Namespaced: true, Kind: Kind}}}
	withoutResource := &metav1.APIResourceList{GroupVersion: GroupVersion,
		APIResources: []metav1.APIResource{{Name: "spaces", Namespaced: true, Kind: "Space"}}}
	transient := errors.New("dial tcp: i/o timeout")
	unavailable := apierrors.NewServiceUnavailable("the server is currently unable to handle the request")
	notFound := apierrors.NewNotFound(schema.GroupResource{Group: "toolchain.dev.openshift.com"}, "v1alpha1")

	// A step is one discovery answer, a Recheck after the last: the resources it lists (nil:
	// the group/version is not found) or an error, and what Served then says.
	type step struct {
		resources *metav1.APIResourceList
		err       error
		want      bool
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"not found", []step{{want: false}}},
		{"served", []step{{resources: served, want: true}}},
		{"the group/version without the resource", []step{{resources: withoutResource, want: false}}},
		{"a transient error first is not served", []step{{err: transient, want: false}, {resources: served, want: true}}},
		{"a transient error keeps served", []step{{resources: served, want: true}, {err: transient, want: true}, {err: unavailable, want: true}}},
		{"a transient error keeps not served", []step{{want: false}, {err: transient, want: false}, {resources: served, want: true}}},
		{"a NotFound error is not served", []step{{resources: served, want: true}, {err: notFound, want: false}}},
		{"the API going away is not served", []step{{resources: served, want: true}, {want: false}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := &clienttesting.Fake{}
			var answer step
			fake.AddReactor("get", "resource", func(clienttesting.Action) (bool, runtime.Object, error) {
				return answer.err != nil, nil, answer.err
			})
			clock := time.Unix(1000, 0)
			f := Served(&fakediscovery.FakeDiscovery{Fake: fake}, func() time.Time { return clock })
			for i, s := range tc.steps {
				answer = s
				fake.Resources = nil
				if s.resources != nil {
					fake.Resources = []*metav1.APIResourceList{s.resources}
				}
				if got := f(); got != s.want {
					t.Fatalf("step %d: served = %v, want %v", i, got, s.want)
				}
				clock = clock.Add(Recheck)
			}
		})
	}
}
