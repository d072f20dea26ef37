package gitopsdeployment

import (
	"encoding/json"
	"errors"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/argocd"
)

// Argo CD constants the mapping depends on.
const (
	// argoBackgroundFinalizer made Argo CD delete what an Application deployed; Applications
	// of earlier agents carry it, and retiring them takes it off (retire.go).
	argoBackgroundFinalizer    = "resources-finalizer.argocd.argoproj.io/background"
	prunePropagationBackground = argocd.PrunePropagationBackground
	fieldManager               = argocd.FieldManager
)

// userError is an error whose message is meant for the owner of the GitOpsDeployment; retrying
// does not help until they change the object.
type userError struct{ msg string }

func (e *userError) Error() string { return e.msg }

func isUserError(err error) bool {
	var ue *userError
	return errors.As(err, &ue)
}

// desiredApplication is the part of the Argo CD Application the agent owns for depl, at the
// revision of hold while there is one (hold.go). Only these fields are sent (server-side
// apply), so Argo CD's status and operation are never touched.
func desiredApplication(depl *managedv1alpha1.GitOpsDeployment, hold *managedv1alpha1.GitOpsDeploymentHold, argoNamespace string,
	dest argov1alpha1.ApplicationDestination) (*applicationApply, error) {
	src := depl.Spec.Source
	switch src.Path {
	case "":
		return nil, &userError{managedv1alpha1.GitOpsDeploymentUserErrorPathIsRequired}
	case "/":
		return nil, &userError{managedv1alpha1.GitOpsDeploymentUserErrorInvalidPathSlash}
	}
	spec := argov1alpha1.ApplicationSpec{
		Source: &argov1alpha1.ApplicationSource{
			RepoURL:        src.RepoURL,
			Path:           src.Path,
			TargetRevision: targetRevision(depl, hold),
		},
		Destination: dest,
		Project:     argocd.ProjectName(depl.Namespace),
		SyncPolicy:  syncPolicy(depl.Spec),
	}
	return &applicationApply{
		TypeMeta: metav1.TypeMeta{APIVersion: argov1alpha1.SchemeGroupVersion.String(), Kind: "Application"},
		Metadata: argocd.ApplyMeta{
			Name:      argocd.ApplicationName(depl.UID),
			Namespace: argoNamespace,
			Labels: map[string]string{
				argocd.LabelDeploymentNamespace: depl.Namespace,
				argocd.LabelDeploymentUID:       string(depl.UID),
			},
			Annotations: map[string]string{argocd.AnnotationDeploymentName: depl.Name},
		},
		Spec: spec,
	}, nil
}

// syncPolicy follows the original service: automated deployments prune, heal and retry forever
// with backoff; manual ones sync only through an operation, which carries its own options.
func syncPolicy(spec managedv1alpha1.GitOpsDeploymentSpec) *argov1alpha1.SyncPolicy {
	var userOptions argov1alpha1.SyncOptions
	if spec.SyncPolicy != nil {
		for _, o := range spec.SyncPolicy.SyncOptions {
			userOptions = append(userOptions, string(o))
		}
	}
	if spec.Type != managedv1alpha1.GitOpsDeploymentSpecTypeAutomated {
		if len(userOptions) == 0 {
			return nil
		}
		return &argov1alpha1.SyncPolicy{SyncOptions: userOptions}
	}
	factor := int64(2)
	return &argov1alpha1.SyncPolicy{
		Automated:   &argov1alpha1.SyncPolicyAutomated{Prune: true, SelfHeal: true, AllowEmpty: true},
		SyncOptions: append(argov1alpha1.SyncOptions{prunePropagationBackground}, userOptions...),
		Retry: &argov1alpha1.RetryStrategy{
			Limit: -1,
			Backoff: &argov1alpha1.Backoff{
				Duration:    "5s",
				Factor:      &factor,
				MaxDuration: "3m",
			},
		},
	}
}

// applicationApply is a server-side apply body for an Application: just the fields the agent
// manages. Marshalling argov1alpha1.Application itself would send an empty status, and the
// Application CRD has no status subresource to protect it.
type applicationApply struct {
	metav1.TypeMeta `json:",inline"`
	Metadata        argocd.ApplyMeta             `json:"metadata"`
	Spec            argov1alpha1.ApplicationSpec `json:"spec"`
}

// upToDate tells whether app already has everything want would apply, so that an unchanged
// GitOpsDeployment costs no write.
func (want *applicationApply) upToDate(app *argov1alpha1.Application) bool {
	if app == nil {
		return false
	}
	for k, v := range want.Metadata.Labels {
		if app.Labels[k] != v {
			return false
		}
	}
	for k, v := range want.Metadata.Annotations {
		if app.Annotations[k] != v {
			return false
		}
	}
	if hasArgoFinalizer(app) {
		return false // the apply takes it off
	}
	got := app.Spec
	return got.Project == want.Spec.Project &&
		got.Destination == want.Spec.Destination &&
		got.Source != nil && got.Source.RepoURL == want.Spec.Source.RepoURL &&
		got.Source.Path == want.Spec.Source.Path && got.Source.TargetRevision == want.Spec.Source.TargetRevision &&
		syncPolicyEqual(got.SyncPolicy, want.Spec.SyncPolicy)
}

func syncPolicyEqual(a, b *argov1alpha1.SyncPolicy) bool {
	if a == nil || b == nil {
		return a == b
	}
	if (a.Automated == nil) != (b.Automated == nil) || (a.Automated != nil && *a.Automated != *b.Automated) {
		return false
	}
	if len(a.SyncOptions) != len(b.SyncOptions) {
		return false
	}
	for i := range a.SyncOptions {
		if a.SyncOptions[i] != b.SyncOptions[i] {
			return false
		}
	}
	return (a.Retry == nil) == (b.Retry == nil) && (a.Retry == nil || a.Retry.Limit == b.Retry.Limit &&
		backoffEqual(a.Retry.Backoff, b.Retry.Backoff))
}

func backoffEqual(a, b *argov1alpha1.Backoff) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Duration == b.Duration && a.MaxDuration == b.MaxDuration &&
		(a.Factor == nil) == (b.Factor == nil) && (a.Factor == nil || *a.Factor == *b.Factor)
}

// without is list less every s.
func without(list []string, s string) []string {
	out := make([]string, 0, len(list))
	for _, x := range list {
		if x != s {
			out = append(out, x)
		}
	}
	return out
}

// finalizersPatch is a merge patch setting an object's finalizers. The resourceVersion makes it
// fail (conflict) if the object changed since, rather than drop a finalizer someone else added.
func finalizersPatch(resourceVersion string, finalizers []string) ([]byte, error) {
	return json.Marshal(map[string]interface{}{
		"metadata": map[string]interface{}{"resourceVersion": resourceVersion, "finalizers": finalizers},
	})
}
