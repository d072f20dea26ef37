package apiserver

import (
	"crypto/x509"
	"net/http"
	"slices"
	"sync"
	"time"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/authenticatorfactory"
	"k8s.io/apiserver/pkg/authentication/group"
	"k8s.io/apiserver/pkg/authentication/request/headerrequest"
	"k8s.io/apiserver/pkg/authentication/request/union"
)

// withVerifiedFrontProxies puts in front of the delegated authenticator one that remembers
// which front-proxy client certificates (kube-apiserver's aggregator) it has verified. Every
// request kube-apiserver proxies to us carries the same certificate over the same connection,
// and k8s.io/apiserver's request-header authenticator verifies its chain for each of them
// again: an RSA signature check, 12% of this server's CPU while it served gets through the
// aggregator (issue 37; pkg/storage/README.md, "Consistent gets"). A certificate is taken as
// verified only against the very CA pool it was verified with (k8s.io/apiserver's CA
// providers build a new pool whenever the bundle's content changes: a CA removed from the
// file or the extension-apiserver-authentication ConfigMap is refused at once), until
// the first certificate of its chain expires and for at most frontProxyVerifiedFor; its common
// name is checked against the allowed names on every request, as they may change. Everything
// it does not accept (no verified certificate, a name not allowed, no user header) goes to
// the delegated authenticator unchanged, which decides as before.
func withVerifiedFrontProxies(delegate authenticator.Request, rh *authenticatorfactory.RequestHeaderConfig) authenticator.Request {
	if rh == nil || rh.CAContentProvider == nil {
		return delegate
	}
	front := &frontProxyAuthenticator{
		verifyOptions: rh.CAContentProvider.VerifyOptions,
		allowedNames:  rh.AllowedClientNames,
		headers:       headerrequest.NewDynamic(rh.UsernameHeaders, rh.GroupHeaders, rh.ExtraHeaderPrefixes),
		verified:      map[*x509.CertPool]map[string]time.Time{},
		now:           time.Now,
		verify:        (*x509.Certificate).Verify,
	}
	return unionWithDelegate(front, delegate)
}

// unionWithDelegate asks front, then delegate; front's users get system:authenticated, as the
// delegated authenticator's do.
func unionWithDelegate(front *frontProxyAuthenticator, delegate authenticator.Request) authenticator.Request {
	return union.New(group.NewAuthenticatedGroupAdder(front), delegate)
}

// frontProxyVerifiedFor bounds how long a verified certificate is remembered.
const frontProxyVerifiedFor = 5 * time.Minute

// frontProxyCacheSize bounds the certificates remembered; a cluster has one or two front
// proxies' certificates at a time, so a full cache is simply emptied.
const frontProxyCacheSize = 64

type frontProxyAuthenticator struct {
	verifyOptions func() (x509.VerifyOptions, bool)
	allowedNames  headerrequest.StringSliceProvider
	headers       authenticator.Request
	now           func() time.Time
	// verify is x509.Certificate.Verify; tests count its calls.
	verify func(*x509.Certificate, x509.VerifyOptions) ([][]*x509.Certificate, error)

	mu sync.Mutex
	// verified says until when a certificate (by its DER) counts as verified against a CA pool.
	verified map[*x509.CertPool]map[string]time.Time
}

func (a *frontProxyAuthenticator) AuthenticateRequest(req *http.Request) (*authenticator.Response, bool, error) {
	if req.TLS == nil || len(req.TLS.PeerCertificates) == 0 {
		return nil, false, nil
	}
	opts, ok := a.verifyOptions()
	if !ok || opts.Roots == nil {
		return nil, false, nil
	}
	leaf := req.TLS.PeerCertificates[0]
	if names := a.allowedNames.Value(); len(names) > 0 && !slices.Contains(names, leaf.Subject.CommonName) {
		return nil, false, nil
	}
	if !a.isVerified(opts, req.TLS.PeerCertificates) {
		return nil, false, nil
	}
	return a.headers.AuthenticateRequest(req)
}

// isVerified verifies the chain as x509request.Verifier does, or finds that it did so before.
func (a *frontProxyAuthenticator) isVerified(opts x509.VerifyOptions, certs []*x509.Certificate) bool {
	now := a.now()
	a.mu.Lock()
	until, ok := a.verified[opts.Roots][string(certs[0].Raw)]
	a.mu.Unlock()
	if ok && now.Before(until) {
		return true
	}
	if opts.Intermediates == nil && len(certs) > 1 {
		opts.Intermediates = x509.NewCertPool()
		for _, c := range certs[1:] {
			opts.Intermediates.AddCert(c)
		}
	}
	opts.CurrentTime = now
	chains, err := a.verify(certs[0], opts)
	if err != nil || len(chains) == 0 {
		return false
	}
	until = now.Add(frontProxyVerifiedFor)
	for _, c := range chains[0] {
		if c.NotAfter.Before(until) {
			until = c.NotAfter
		}
	}
	a.mu.Lock()
	known, ok := a.verified[opts.Roots]
	if !ok || len(known) >= frontProxyCacheSize {
		// A new pool (the CA was rotated: the old pools' verdicts are of no more use), or more
		// certificates than front proxies have.
		known = map[string]time.Time{}
		a.verified = map[*x509.CertPool]map[string]time.Time{opts.Roots: known}
	}
	known[string(certs[0].Raw)] = until
	a.mu.Unlock()
	return true
}
