//go:build e2e

package e2e

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// kube-apiserver tells gitops-apiserver who is asking in X-Remote-* headers, over a connection
// authenticated with the front-proxy client certificate. Whoever reaches gitops-apiserver's port
// directly must not be able to claim an identity that way.
var _ = Describe("gitops-apiserver's own port", func() {
	It("ignores identity headers unless they come with the front-proxy client certificate", func(ctx context.Context) {
		port := strings.TrimSpace(must("admin", "get", "apiservice", "v1alpha1.managed-gitops.redhat.com", "-o", "jsonpath={.spec.service.port}"))
		Expect(port).NotTo(BeEmpty())
		url := "https://127.0.0.1:" + port + "/apis/managed-gitops.redhat.com/v1alpha1/gitopsdeployments"
		certs := filepath.Join(stackDir, "certs")
		forged := map[string]string{"X-Remote-User": "admin", "X-Remote-Group": "system:masters"}

		get := func(cert *tls.Certificate, headers map[string]string) (int, string) {
			GinkgoHelper()
			// The server's certificate is not what this spec is about; the client's identity is.
			tlsConfig := &tls.Config{InsecureSkipVerify: true} //nolint:gosec
			if cert != nil {
				tlsConfig.Certificates = []tls.Certificate{*cert}
			}
			client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsConfig}}
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			Expect(err).NotTo(HaveOccurred())
			for k, v := range headers {
				req.Header.Set(k, v)
			}
			resp, err := client.Do(req)
			Expect(err).NotTo(HaveOccurred())
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, string(body)
		}

		By("forged headers without a client certificate")
		code, body := get(nil, forged)
		Expect(code).To(BeElementOf(http.StatusUnauthorized, http.StatusForbidden), body)

		By("forged headers with a certificate named front-proxy-client, but from the cluster's client CA")
		impostor := signClientCert(filepath.Join(certs, "ca.crt"), filepath.Join(certs, "ca.key"), "front-proxy-client")
		code, body = get(&impostor, forged)
		Expect(code).To(BeElementOf(http.StatusUnauthorized, http.StatusForbidden), body)

		By("the same headers with the real front-proxy certificate, so that the refusals above are about the certificate")
		proxy, err := tls.LoadX509KeyPair(filepath.Join(certs, "front-proxy-client.crt"), filepath.Join(certs, "front-proxy-client.key"))
		Expect(err).NotTo(HaveOccurred())
		code, body = get(&proxy, forged)
		Expect(code).To(Equal(http.StatusOK), body)
	})
})

// signClientCert issues a client certificate for cn from the CA in caCert/caKey (PEM files).
func signClientCert(caCert, caKey, cn string) tls.Certificate {
	GinkgoHelper()
	readPEM := func(path string) []byte {
		raw, err := os.ReadFile(path)
		Expect(err).NotTo(HaveOccurred())
		block, _ := pem.Decode(raw)
		Expect(block).NotTo(BeNil(), "no PEM block in %s", path)
		return block.Bytes
	}
	ca, err := x509.ParseCertificate(readPEM(caCert))
	Expect(err).NotTo(HaveOccurred())
	parsed, err := x509.ParsePKCS8PrivateKey(readPEM(caKey))
	if err != nil {
		parsed, err = x509.ParsePKCS1PrivateKey(readPEM(caKey))
	}
	Expect(err).NotTo(HaveOccurred())
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	Expect(err).NotTo(HaveOccurred())
	template := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    time.Now().Add(-time.Minute),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, template, ca, &key.PublicKey, parsed)
	Expect(err).NotTo(HaveOccurred())
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}
