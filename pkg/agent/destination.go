package agent

import (
	"context"
	"fmt"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
)

// Argo CD's cluster Secrets: the label that makes a Secret one, and its data keys (reference
// argocd.md §1.6).
const (
	LabelArgoSecretType     = "argocd.argoproj.io/secret-type"
	argoSecretTypeCluster   = "cluster"
	clusterKeyName          = "name"
	clusterKeyServer        = "server"
	clusterKeyConfig        = "config"
	clusterKeyNamespaces    = "namespaces"
	clusterKeyClusterScoped = "clusterResources"
)

// destination is where depl deploys: an Argo CD cluster, always named (destination.name is
// the name of a cluster Secret the agent owns, never a server URL a tenant could aim at
// another cluster Secret with), and a namespace. It does not write anything, so the
// AppProject can be computed from it too.
func (a *Agent) destination(depl *managedv1alpha1.GitOpsDeployment) (argov1alpha1.ApplicationDestination, error) {
	if depl.Spec.Destination.Environment != "" {
		return a.environmentDestination(depl)
	}
	return a.localDestination(depl)
}

// clusterSecret is an Argo CD cluster Secret in the Argo CD namespace. The credentials go
// only into this Secret (never into the GitOps objects, PostgreSQL or the log); environments
// share them (cluster_share.go).
type clusterSecret struct {
	// Name is both the Secret's name and the cluster's name in Argo CD.
	Name string
	// Server is the API URL. Argo CD keys its cluster cache by it, so two Secrets for the same
	// API server must differ in it (a query parameter does; reference §4.3).
	Server string
	Config argov1alpha1.ClusterConfig
	// Namespaces limits what Argo CD watches and deploys to; empty means the whole cluster.
	Namespaces       []string
	ClusterResources bool
	// Labels tie the Secret back to what it was made for.
	Labels      map[string]string
	Annotations map[string]string
}

// deleteSecret deletes a Secret of the Argo CD namespace; a missing one is not an error.
func (a *Agent) deleteSecret(ctx context.Context, name string) error {
	err := a.kube.CoreV1().Secrets(a.argoNamespace).Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting Secret %s: %w", name, err)
	}
	return nil
}

func hasAnnotations(s *corev1.Secret, annotations map[string]string) bool {
	for k, v := range annotations {
		if s.Annotations[k] != v {
			return false
		}
	}
	return true
}

// secretHas tells whether s already carries the labels and exactly the data given, so that an
// unchanged Secret costs no write.
func secretHas(s *corev1.Secret, labels, data map[string]string) bool {
	for k, v := range labels {
		if s.Labels[k] != v {
			return false
		}
	}
	if len(s.Data) != len(data) {
		return false
	}
	for k, v := range data {
		if string(s.Data[k]) != v {
			return false
		}
	}
	return true
}
