// Package controllertest holds what the controllers' reconcile tests share: informers on fake
// clientsets, waits on their caches, and the Events a fake recorder got.
package controllertest

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/record"
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
