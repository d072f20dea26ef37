package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apistorage "k8s.io/apiserver/pkg/storage"
)

// The database's errors reach clients as statuses that say what to do, without the server's
// address, user or SQL; every other error passes unchanged.
func TestClientError(t *testing.T) {
	secretive := "failed to connect to `user=postgres database=gitops`: 127.0.0.1:5432 (127.0.0.1): dial error"
	invalid := apierrors.NewBadRequest("invalid continue token")
	notFound := apistorage.NewKeyNotFoundError("/pods/n/a", 0)
	own := errors.New("decoding /pods/n/a: unexpected end of JSON input")
	for _, tt := range []struct {
		name       string
		err        error
		code       int32 // 0: unchanged
		retryAfter bool
	}{
		{"connection refused", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}, http.StatusServiceUnavailable, true},
		{"connect error", fmt.Errorf("%s: %w", secretive, syscall.ECONNREFUSED), http.StatusServiceUnavailable, true},
		{"server shutting down", &pgconn.PgError{Code: "57P01", Message: "terminating connection due to administrator command"}, http.StatusServiceUnavailable, true},
		{"a standby refuses writes", &pgconn.PgError{Code: "25006", Message: "cannot execute INSERT in a read-only transaction"}, http.StatusServiceUnavailable, true},
		{"connection exception", &pgconn.PgError{Code: "08006"}, http.StatusServiceUnavailable, true},
		{"serialization failure", &pgconn.PgError{Code: "40001"}, http.StatusServiceUnavailable, true},
		{"broken connection", errors.New("conn closed"), http.StatusServiceUnavailable, true},
		{"closed pool", errors.New("closed pool"), http.StatusServiceUnavailable, true},
		{"backend closed", errClosed, http.StatusServiceUnavailable, true},
		{"connection cut mid-reply", fmt.Errorf("reading rows: %w", io.ErrUnexpectedEOF), http.StatusServiceUnavailable, true},
		{"statement timeout", &pgconn.PgError{Code: "57014", Message: "canceling statement due to statement timeout"}, http.StatusGatewayTimeout, true},
		{"lock timeout", &pgconn.PgError{Code: "55P03"}, http.StatusGatewayTimeout, true},
		{"deadline", fmt.Errorf("acquiring a connection: %w", context.DeadlineExceeded), http.StatusGatewayTimeout, true},
		{"writer refused by the schema", &WriterTooOldError{Required: 9, Have: 7}, http.StatusServiceUnavailable, true},
		{"other database error", &pgconn.PgError{Code: "22021", Message: `invalid byte sequence for encoding "UTF8": 0x00`, InternalQuery: "SELECT key FROM objects"}, http.StatusInternalServerError, false},
		{"API status", invalid, 0, false},
		{"storage error", notFound, 0, false},
		{"the store's own message", own, 0, false},
		{"canceled by the client", context.Canceled, 0, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := clientError(tt.err)
			if tt.code == 0 {
				if got != tt.err {
					t.Fatalf("clientError(%v) = %v, want it unchanged", tt.err, got)
				}
				return
			}
			var status apierrors.APIStatus
			if !errors.As(got, &status) {
				t.Fatalf("clientError(%v) = %v, want an API status", tt.err, got)
			}
			s := status.Status()
			if s.Code != tt.code {
				t.Errorf("code %d, want %d", s.Code, tt.code)
			}
			if retry := s.Details != nil && s.Details.RetryAfterSeconds > 0; retry != tt.retryAfter {
				t.Errorf("Retry-After set: %v, want %v", retry, tt.retryAfter)
			}
			for _, leak := range []string{"127.0.0.1", "user=", "postgres", "SELECT", "0x00", "5432"} {
				if strings.Contains(s.Message, leak) {
					t.Errorf("message %q shows %q", s.Message, leak)
				}
			}
		})
	}
}
