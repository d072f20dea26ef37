package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apistorage "k8s.io/apiserver/pkg/storage"
	"k8s.io/klog/v2"
)

// retryAfterSeconds is what clients are told to wait after the database failed them for a
// reason that passes (a restart, a failover, a full pool).
const retryAfterSeconds = 1

// clientError turns an error of the database into what a client of the API may see. The
// apiserver sends any error that is not an API status as a 500 with the error's text, and
// pgx's texts name the server, port, user and database and quote SQL: none of that is the
// client's business, so those errors are logged here and replaced by a status that says what
// the client can do. Errors that are already API statuses or storage errors, and the store's
// own messages, pass unchanged.
func clientError(err error) error {
	if err == nil {
		return err
	}
	var status apierrors.APIStatus
	var storageErr *apistorage.StorageError
	if errors.As(err, &status) || errors.As(err, &storageErr) || apistorage.IsInvalidError(err) {
		return err
	}
	// Another replica can take the write: the client's retry may reach one.
	var tooOld *WriterTooOldError
	if errors.As(err, &tooOld) {
		klog.ErrorS(err, "Write refused by the storage schema")
		e := apierrors.NewServiceUnavailable(tooOld.Error())
		e.ErrStatus.Details = &metav1.StatusDetails{RetryAfterSeconds: retryAfterSeconds}
		return e
	}
	switch kind := classify(err); kind {
	case dbUnavailable:
		klog.ErrorS(err, "PostgreSQL is unavailable")
		e := apierrors.NewServiceUnavailable("the storage database is unavailable; a write in flight may or may not have been applied; retry")
		e.ErrStatus.Details = &metav1.StatusDetails{RetryAfterSeconds: retryAfterSeconds}
		return e
	case dbTimeout:
		klog.ErrorS(err, "PostgreSQL did not answer in time")
		return apierrors.NewTimeoutError("the storage database did not answer in time; a write in flight may or may not have been applied", retryAfterSeconds)
	case dbFailed:
		klog.ErrorS(err, "PostgreSQL failed a request")
		return apierrors.NewInternalError(errors.New("the storage database failed the request; the server's log has the details"))
	default:
		return err
	}
}

// WriterTooOldError is a write the database refused because a migration raised the schema's
// minimum writer version (state.min_writer) above this release's: the schema changed in a
// way this release's writes would corrupt, and only replicas of a newer release may write.
type WriterTooOldError struct {
	Required, Have int
}

func (e *WriterTooOldError) Error() string {
	return fmt.Sprintf("the storage schema requires gitops-apiserver of schema version ≥ %d; this replica has %d: finish the upgrade",
		e.Required, e.Have)
}

type dbErrorKind int

const (
	notFromDB dbErrorKind = iota
	dbUnavailable
	dbTimeout
	dbFailed
)

// classify tells the database's errors apart by what a client can do about them.
func classify(err error) dbErrorKind {
	if err == nil {
		return notFromDB
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case strings.HasPrefix(pgErr.Code, "08"), // connection exception
			pgErr.Code == "57P01", pgErr.Code == "57P02", pgErr.Code == "57P03", // shut down, crashed, starting
			pgErr.Code == "53300",                        // too many connections
			pgErr.Code == "25006",                        // read-only transaction: a standby, before failover ends
			pgErr.Code == "40001", pgErr.Code == "40P01", // serialization failure, deadlock: safe to retry
			pgErr.Code == "25P03": // idle in transaction timeout
			return dbUnavailable
		case pgErr.Code == "57014", pgErr.Code == "55P03": // statement or lock timeout
			return dbTimeout
		default:
			return dbFailed
		}
	}
	var connectErr *pgconn.ConnectError
	var netErr net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded), pgconn.Timeout(err):
		return dbTimeout
	case errors.As(err, &connectErr), errors.As(err, &netErr),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.ECONNREFUSED),
		errors.Is(err, syscall.ECONNRESET), errors.Is(err, errClosed), pgconn.SafeToRetry(err):
		return dbUnavailable
	}
	// pgconn reports a connection that broke under a query, and pgxpool a closed pool, as plain
	// errors with these texts.
	if msg := err.Error(); strings.Contains(msg, "conn closed") || strings.Contains(msg, "closed pool") {
		return dbUnavailable
	}
	return notFromDB
}
