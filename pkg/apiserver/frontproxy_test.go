package apiserver

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/authenticatorfactory"
	"k8s.io/apiserver/pkg/authentication/request/headerrequest"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
)

type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

func newTestCA(t *testing.T, name string) testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return testCA{cert: cert, key: key, pool: pool}
}

func (ca testCA) issue(t *testing.T, cn string, notAfter time.Time) *x509.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: notAfter,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, KeyUsage: x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return cert
}

func proxied(cert *x509.Certificate, user string) *http.Request {
	req, _ := http.NewRequest(http.MethodGet, "https://gitops/apis", nil)
	req.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{cert}}
	req.Header.Set("X-Remote-User", user)
	return req
}

// TestFrontProxyCertificatesVerifiedOnce checks that a front proxy's certificate is verified
// once and then remembered, while the user still comes from each request's headers, and that
// what is remembered never lets through a certificate the delegated authenticator would
// refuse: one of another CA, one after the CA was rotated, one whose name is no longer
// allowed, one that expired; and that the verdict is verified again after
// frontProxyVerifiedFor.
func TestFrontProxyCertificatesVerifiedOnce(t *testing.T) {
	ca, other := newTestCA(t, "front-proxy-ca"), newTestCA(t, "other-ca")
	now := time.Now()
	proxy := ca.issue(t, "front-proxy-client", now.Add(time.Hour))
	roots := ca.pool
	allowed := []string{"front-proxy-client"}
	verifications := 0
	a := &frontProxyAuthenticator{
		verifyOptions: func() (x509.VerifyOptions, bool) {
			return x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}, true
		},
		allowedNames: headerrequest.StringSliceProviderFunc(func() []string { return allowed }),
		headers: headerrequest.NewDynamic(headerrequest.StaticStringSlice{"X-Remote-User"},
			headerrequest.StaticStringSlice{"X-Remote-Group"}, headerrequest.StaticStringSlice{"X-Remote-Extra-"}),
		verified: nil,
		now:      func() time.Time { return now },
		verify: func(c *x509.Certificate, o x509.VerifyOptions) ([][]*x509.Certificate, error) {
			verifications++
			return c.Verify(o)
		},
	}
	expect := func(name string, req *http.Request, wantUser string, wantVerifications int) {
		t.Helper()
		resp, ok, err := a.AuthenticateRequest(req)
		switch {
		case err != nil:
			t.Errorf("%s: %v", name, err)
		case wantUser == "" && ok:
			t.Errorf("%s: authenticated as %s, want refused", name, resp.User.GetName())
		case wantUser != "" && (!ok || resp.User.GetName() != wantUser):
			t.Errorf("%s: ok %v, resp %+v, want %s", name, ok, resp, wantUser)
		}
		if verifications != wantVerifications {
			t.Errorf("%s: %d verifications so far, want %d", name, verifications, wantVerifications)
		}
	}
	expect("first request", proxied(proxy, "alice"), "alice", 1)
	expect("second request", proxied(proxy, "bob"), "bob", 1)
	expect("no user header", proxied(proxy, ""), "", 1)
	expect("another CA's certificate", proxied(other.issue(t, "front-proxy-client", now.Add(time.Hour)), "mallory"), "", 2)

	allowed = []string{"someone-else"}
	expect("name no longer allowed", proxied(proxy, "alice"), "", 2)
	allowed = []string{"front-proxy-client"}

	now = now.Add(frontProxyVerifiedFor + time.Second)
	expect("after frontProxyVerifiedFor", proxied(proxy, "alice"), "alice", 3)

	now = proxy.NotAfter.Add(time.Second)
	expect("expired", proxied(proxy, "alice"), "", 4)
	now = time.Now()

	roots = other.pool
	expect("CA rotated", proxied(proxy, "alice"), "", 5)
	roots = ca.pool // the pool's verdict still stands
	expect("back to the CA", proxied(proxy, "alice"), "alice", 5)
}

// TestFrontProxyAuthenticatorFallsBack checks that a request the remembering authenticator does
// not accept goes to the delegated one, and that one it accepts gets system:authenticated.
func TestFrontProxyAuthenticatorFallsBack(t *testing.T) {
	delegated := 0
	delegate := authenticator.RequestFunc(func(*http.Request) (*authenticator.Response, bool, error) {
		delegated++
		return nil, false, nil
	})
	if got := withVerifiedFrontProxies(delegate, nil); got == nil {
		t.Fatal("nil authenticator without a request-header configuration")
	}
	ca := newTestCA(t, "front-proxy-ca")
	a := &frontProxyAuthenticator{
		verifyOptions: func() (x509.VerifyOptions, bool) {
			return x509.VerifyOptions{Roots: ca.pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}, true
		},
		allowedNames: headerrequest.StaticStringSlice{"front-proxy-client"},
		headers: headerrequest.NewDynamic(headerrequest.StaticStringSlice{"X-Remote-User"},
			headerrequest.StaticStringSlice{"X-Remote-Group"}, headerrequest.StaticStringSlice{"X-Remote-Extra-"}),
		now:    time.Now,
		verify: (*x509.Certificate).Verify,
	}
	chain := unionWithDelegate(a, delegate)
	resp, ok, _ := chain.AuthenticateRequest(proxied(ca.issue(t, "front-proxy-client", time.Now().Add(time.Hour)), "alice"))
	if !ok || resp.User.GetName() != "alice" || delegated != 0 {
		t.Fatalf("proxied request: ok %v, resp %+v, delegated %d", ok, resp, delegated)
	}
	if groups := resp.User.GetGroups(); len(groups) == 0 || groups[len(groups)-1] != "system:authenticated" {
		t.Errorf("groups %v, want system:authenticated", groups)
	}
	req, _ := http.NewRequest(http.MethodGet, "https://gitops/apis", nil)
	req.Header.Set("Authorization", "Bearer token")
	if _, ok, _ := chain.AuthenticateRequest(req); ok || delegated != 1 {
		t.Errorf("request without a client certificate: ok %v, delegated %d times, want refused by the delegate", ok, delegated)
	}
}

// TestFrontProxyVerdictEndsWithTheChain checks that a remembered verdict ends when the first
// certificate of the chain expires, even well within frontProxyVerifiedFor: the leaf's own
// expiry, and that of an intermediate CA the front proxy sends with it. A verdict kept for
// frontProxyVerifiedFor regardless would accept both after they expired.
func TestFrontProxyVerdictEndsWithTheChain(t *testing.T) {
	if frontProxyVerifiedFor <= 2*time.Minute {
		t.Fatalf("frontProxyVerifiedFor %s: the certificates below must expire within it", frontProxyVerifiedFor)
	}
	root := newTestCA(t, "front-proxy-root")
	start := time.Now()

	// An intermediate CA that expires in two minutes, and a leaf of it valid for an hour.
	intermediate := func() testCA {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "front-proxy-intermediate"},
			NotBefore: start.Add(-time.Hour), NotAfter: start.Add(2 * time.Minute),
			IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, root.cert, &key.PublicKey, root.key)
		if err != nil {
			t.Fatal(err)
		}
		cert, _ := x509.ParseCertificate(der)
		return testCA{cert: cert, key: key}
	}()

	for _, tc := range []struct {
		name  string
		chain []*x509.Certificate
	}{
		{"leaf expires", []*x509.Certificate{root.issue(t, "front-proxy-client", start.Add(2*time.Minute))}},
		{"intermediate expires", []*x509.Certificate{intermediate.issue(t, "front-proxy-client", start.Add(time.Hour)), intermediate.cert}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := start
			a := &frontProxyAuthenticator{
				verifyOptions: func() (x509.VerifyOptions, bool) {
					return x509.VerifyOptions{Roots: root.pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}, true
				},
				allowedNames: headerrequest.StaticStringSlice{"front-proxy-client"},
				headers: headerrequest.NewDynamic(headerrequest.StaticStringSlice{"X-Remote-User"},
					headerrequest.StaticStringSlice{"X-Remote-Group"}, headerrequest.StaticStringSlice{"X-Remote-Extra-"}),
				now:    func() time.Time { return now },
				verify: (*x509.Certificate).Verify,
			}
			request := func() *http.Request {
				req := proxied(tc.chain[0], "alice")
				req.TLS.PeerCertificates = tc.chain
				return req
			}
			if _, ok, err := a.AuthenticateRequest(request()); !ok || err != nil {
				t.Fatalf("valid chain refused: ok %v, err %v", ok, err)
			}
			now = start.Add(time.Minute)
			if _, ok, err := a.AuthenticateRequest(request()); !ok || err != nil {
				t.Fatalf("valid chain refused from the cache: ok %v, err %v", ok, err)
			}
			now = start.Add(2*time.Minute + time.Second)
			if resp, ok, _ := a.AuthenticateRequest(request()); ok {
				t.Fatalf("expired chain accepted as %s, %s after it was verified", resp.User.GetName(), now.Sub(start))
			}
		})
	}
}

// TestFrontProxyCAProviderReload checks the cache against the CA provider gitops-apiserver
// really uses for the front proxy's CA (--requestheader-client-ca-file, reloaded when the file
// changes): once the CA is replaced, its certificates are refused at the next request, within
// the cache's lifetime.
func TestFrontProxyCAProviderReload(t *testing.T) {
	ca, next := newTestCA(t, "front-proxy-ca"), newTestCA(t, "front-proxy-ca-2")
	file := filepath.Join(t.TempDir(), "requestheader-ca.crt")
	write := func(c testCA) {
		if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.cert.Raw}), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(ca)
	provider, err := dynamiccertificates.NewDynamicCAContentFromFile("request-header", file)
	if err != nil {
		t.Fatal(err)
	}
	delegated := 0
	chain := withVerifiedFrontProxies(authenticator.RequestFunc(func(*http.Request) (*authenticator.Response, bool, error) {
		delegated++
		return nil, false, nil
	}), &authenticatorfactory.RequestHeaderConfig{
		UsernameHeaders:     headerrequest.StaticStringSlice{"X-Remote-User"},
		GroupHeaders:        headerrequest.StaticStringSlice{"X-Remote-Group"},
		ExtraHeaderPrefixes: headerrequest.StaticStringSlice{"X-Remote-Extra-"},
		CAContentProvider:   provider,
		AllowedClientNames:  headerrequest.StaticStringSlice{"front-proxy-client"},
	})
	proxy := ca.issue(t, "front-proxy-client", time.Now().Add(time.Hour))
	for i := 0; i < 2; i++ {
		if resp, ok, _ := chain.AuthenticateRequest(proxied(proxy, "alice")); !ok || resp.User.GetName() != "alice" || delegated != 0 {
			t.Fatalf("request %d before the rotation: ok %v, resp %+v, delegated %d", i, ok, resp, delegated)
		}
	}
	write(next)
	if err := provider.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	if resp, ok, _ := chain.AuthenticateRequest(proxied(proxy, "alice")); ok {
		t.Fatalf("the replaced CA's certificate accepted as %s after the reload", resp.User.GetName())
	}
	if delegated != 1 {
		t.Errorf("delegated %d times, want the refused request sent to the delegate once", delegated)
	}
	if resp, ok, _ := chain.AuthenticateRequest(proxied(next.issue(t, "front-proxy-client", time.Now().Add(time.Hour)), "bob")); !ok || resp.User.GetName() != "bob" {
		t.Errorf("the new CA's certificate: ok %v, resp %+v", ok, resp)
	}
}
