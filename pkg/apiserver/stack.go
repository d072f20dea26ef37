package apiserver

import (
	"net/http"

	"k8s.io/apiserver/pkg/authentication/authenticator"
)

// A request is served by two goroutines that start afresh for it: the HTTP/2 server's, which
// runs the outer filters up to k8s.io/apiserver's timeout filter, and the one the timeout
// filter starts, which runs the rest. Both start with a small stack (the average of all
// goroutines', most of which are idle watchers and connections), and a get goes about 25 KiB
// deep through the filters, go-restful, the registry, the watch cache and the JSON encoder:
// the stacks were copied three or four times over, each time larger, and those copies were
// 10-16% of this server's CPU while it served gets (issue 37; pkg/storage/README.md,
// "Consistent gets"). Growing each stack to its working size in one step near the goroutine's
// start, where little is copied, costs a fraction of that. CockroachDB does the same (util/growstack).

// withGrownStack grows the stack of the timeout filter's goroutine before authenticating the
// request: the authenticator is the first code of ours on it.
func withGrownStack(delegate authenticator.Request) authenticator.Request {
	return authenticator.RequestFunc(func(req *http.Request) (*authenticator.Response, bool, error) {
		growStack32()
		return delegate.AuthenticateRequest(req)
	})
}

// withGrownServerStack grows the stack of the HTTP server's goroutine; it is the outermost
// filter.
func withGrownServerStack(handler http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		growStack16()
		handler.ServeHTTP(w, req)
	})
}

// growStack32 needs a frame of 32 KiB, so the runtime gives the goroutine a stack of 64 KiB
// if it has less; the frame is gone when it returns, the stack stays (until a garbage
// collection finds it mostly unused and halves it).
//
//go:noinline
func growStack32() {
	var buf [32 << 10]byte
	sink(buf[:])
}

// growStack16 grows the stack to 32 KiB.
//
//go:noinline
func growStack16() {
	var buf [16 << 10]byte
	sink(buf[:])
}

//go:noinline
func sink([]byte) {}
