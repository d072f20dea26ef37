// Package controllertest holds what the controllers' reconcile tests share: informers on fake
// clientsets, waits on their caches, and the Events a fake recorder got.
package controllertest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"

	"github.com/gitops-service/gitops-service/pkg/controller/framework"
	gitopsfake "github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned/fake"
)

// InformerFactory is what the generated and client-go informer factories have in common.
type InformerFactory interface {
	Start(stopCh <-chan struct{})
	WaitForCacheSync(stopCh <-chan struct{}) map[reflect.Type]bool
}

// StartInformers starts the factories' informers and waits until their caches are filled.
func StartInformers(t testing.TB, ctx context.Context, factories ...InformerFactory) {
	t.Helper()
	for _, f := range factories {
		f.Start(ctx.Done())
	}
	for _, f := range factories {
		for typ, ok := range f.WaitForCacheSync(ctx.Done()) {
			if !ok {
				t.Fatalf("cache of %v did not sync", typ)
			}
		}
	}
}

// Eventually waits up to 5 s for cond, which reads the caches: a write through a fake
// clientset reaches them a moment later.
func Eventually(t testing.TB, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		return cond(), nil
	}); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// ExpectEvents checks that rec got exactly want, in order, since the last call.
func ExpectEvents(t testing.TB, rec *record.FakeRecorder, want ...string) {
	t.Helper()
	var got []string
	for {
		select {
		case e := <-rec.Events:
			got = append(got, e)
			continue
		default:
		}
		break
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// Recorded drains rec: "Type Reason Message" per Event.
func Recorded(rec *record.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-rec.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// RecordedReasons drains rec: "Type Reason" per Event.
func RecordedReasons(rec *record.FakeRecorder) []string {
	var out []string
	for _, e := range Recorded(rec) {
		f := strings.Fields(e)
		out = append(out, f[0]+" "+f[1])
	}
	return out
}

// FailStatusWrites makes the next n status updates of resource (of the GitOps API) fail with a
// conflict, as a write racing another would.
func FailStatusWrites(c *gitopsfake.Clientset, resource string, n int) {
	c.PrependReactor("update", resource, func(action clienttesting.Action) (bool, runtime.Object, error) {
		if action.GetSubresource() != "status" || n == 0 {
			return false, nil, nil
		}
		n--
		return true, nil, apierrors.NewConflict(schema.GroupResource{Group: action.GetResource().Group, Resource: resource}, "x", errors.New("changed"))
	})
}

// Drain waits until c's handlers have been given their informers' initial lists, then empties
// c's queue and returns the keys it held. After it, the queue holds only what the test's own
// writes or handler calls queue.
func Drain(t testing.TB, ctx context.Context, c *framework.Controller) []string {
	t.Helper()
	Eventually(t, ctx, c.Name+"'s handlers given the initial lists", c.HandlersSynced)
	var keys []string
	for c.Queue.Len() > 0 {
		k, _ := c.Queue.Get()
		c.Queue.Done(k)
		c.Queue.Forget(k)
		keys = append(keys, k)
	}
	return keys
}

// ServerFields makes a fake clientset fill in, on the objects it creates, what the API server
// would: a name from generateName ("operation-" → "operation-1", "operation-2", …) and the
// creationTimestamp. Without it they would all be stored under the empty name, and as created
// at the zero time, which code that expires objects by age deletes at once.
func ServerFields(fake *clienttesting.Fake) {
	var mu sync.Mutex
	n := 0
	fake.PrependReactor("create", "*", func(action clienttesting.Action) (bool, runtime.Object, error) {
		create, ok := action.(clienttesting.CreateAction)
		if !ok {
			return false, nil, nil
		}
		obj, err := meta.Accessor(create.GetObject())
		if err != nil {
			return false, nil, nil
		}
		mu.Lock()
		defer mu.Unlock()
		if obj.GetName() == "" && obj.GetGenerateName() != "" {
			n++
			obj.SetName(fmt.Sprintf("%s%d", obj.GetGenerateName(), n))
		}
		if obj.GetCreationTimestamp().Time.IsZero() {
			obj.SetCreationTimestamp(metav1.Now())
		}
		return false, nil, nil
	})
}

// SelectSecretsByType makes a fake clientset honour a field selector on the type of Secrets
// in lists and watches, as the API server does (the agent's Secret informers select one type);
// the fake would otherwise show every Secret.
func SelectSecretsByType(fake *kubefake.Clientset) {
	gvr := corev1.SchemeGroupVersion.WithResource("secrets")
	gvk := corev1.SchemeGroupVersion.WithKind("Secret")
	matches := func(sel fields.Selector, obj runtime.Object) bool {
		s, ok := obj.(*corev1.Secret)
		return !ok || sel == nil || sel.Matches(fields.Set{"type": string(s.Type)})
	}
	fake.PrependReactor("list", "secrets", func(action clienttesting.Action) (bool, runtime.Object, error) {
		sel := action.(clienttesting.ListAction).GetListRestrictions().Fields
		if sel == nil || sel.Empty() {
			return false, nil, nil
		}
		obj, err := fake.Tracker().List(gvr, gvk, action.GetNamespace())
		if err != nil {
			return true, nil, err
		}
		list := obj.(*corev1.SecretList)
		list.Items = slices.DeleteFunc(list.Items, func(s corev1.Secret) bool { return !matches(sel, &s) })
		return true, list, nil
	})
	fake.PrependWatchReactor("secrets", func(action clienttesting.Action) (bool, watch.Interface, error) {
		sel := action.(clienttesting.WatchAction).GetWatchRestrictions().Fields
		if sel == nil || sel.Empty() {
			return false, nil, nil
		}
		w, err := fake.Tracker().Watch(gvr, action.GetNamespace())
		if err != nil {
			return true, nil, err
		}
		return true, watch.Filter(w, func(e watch.Event) (watch.Event, bool) { return e, matches(sel, e.Object) }), nil
	})
}
