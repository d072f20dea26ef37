package cli

import (
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
)

// resource is a resource of our API as the user meets it in messages: its kind and its
// plural.group, as kubectl and RBAC name it.
type resource struct {
	Kind, Plural, Group string
}

// String is plural.group, as in `kubectl auth can-i create gitopsdeploymentsyncruns.managed-gitops.redhat.com`.
func (r resource) String() string { return r.Plural + "." + r.Group }

// name is the lower-case kind, as in `gitopsdeployment "web" not found`.
func (r resource) name() string { return strings.ToLower(r.Kind) }

var (
	resDeployment  = resource{"GitOpsDeployment", "gitopsdeployments", managedv1alpha1.GroupName}
	resSyncRun     = resource{"GitOpsDeploymentSyncRun", "gitopsdeploymentsyncruns", managedv1alpha1.GroupName}
	resApplication = resource{"Application", "applications", appstudiov1alpha1.GroupName}
	resEnvironment = resource{"Environment", "environments", appstudiov1alpha1.GroupName}
	resSnapshot    = resource{"Snapshot", "snapshots", appstudiov1alpha1.GroupName}
	resBinding     = resource{"SnapshotEnvironmentBinding", "snapshotenvironmentbindings", appstudiov1alpha1.GroupName}
	resRun         = resource{"PromotionRun", "promotionruns", appstudiov1alpha1.GroupName}
	resApproval    = resource{"PromotionApproval", "promotionapprovals", appstudiov1alpha1.GroupName}
	resAuditEntry  = resource{"AuditEntry", "auditentries", managedv1alpha1.GroupName}
)

// where is ` in namespace "ns"`, or ` in any namespace` for a request across namespaces.
func where(ns string) string {
	if ns == "" {
		return " in any namespace"
	}
	return fmt.Sprintf(" in namespace %q", ns)
}

// apiError turns an error of the API into what the user did wrong, in their words: a refusal
// names the verb and the resource (as `kubectl auth can-i` takes them) and the server's reason;
// an unknown name says which kind was looked for, where. Other errors pass unchanged: the
// server's own message (a field refused, a conflict) already says what is wrong.
func apiError(err error, verb string, r resource, ns, name string) error {
	if err == nil {
		return nil
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return err
	}
	switch {
	case apierrors.IsForbidden(err):
		return &userError{msg: fmt.Sprintf("you may not %s %s%s: %s", verb, r, where(ns), forbiddenReason(status.Status().Message))}
	case apierrors.IsNotFound(err) && name != "":
		return &userError{msg: fmt.Sprintf("%s %q not found%s", r.name(), name, where(ns)), notFound: true}
	case apierrors.IsNotFound(err):
		return &userError{msg: fmt.Sprintf("the server does not serve %s: is the GitOps Service installed on this cluster? (%s)", r, status.Status().Message)}
	case apierrors.IsUnauthorized(err):
		return &userError{msg: fmt.Sprintf("the server did not accept your credentials to %s %s: check your kubeconfig and --context (%s)", verb, r, status.Status().Message)}
	}
	return err
}

// forbiddenReason is the server's message without the `<resource> "<name>" is forbidden: `
// that the user's own words already say.
func forbiddenReason(message string) string {
	if i := strings.Index(message, " is forbidden: "); i >= 0 {
		return message[i+len(" is forbidden: "):]
	}
	return message
}

// userError is an error that is the user's to mend, printed as it is.
type userError struct {
	msg      string
	notFound bool
}

func (e *userError) Error() string { return e.msg }

// errorf is a userError.
func errorf(format string, args ...interface{}) error {
	return &userError{msg: fmt.Sprintf(format, args...)}
}

// isNotFound tells whether err is apiError's "not found".
func isNotFound(err error) bool {
	var ue *userError
	return errors.As(err, &ue) && ue.notFound
}
