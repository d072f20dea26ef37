package argocd

import (
	"encoding/json"
	"slices"
	"sort"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ApplyMeta is the metadata of a server-side apply body for an Argo CD object: just the fields
// the agent manages.
type ApplyMeta struct {
	Name        string            `json:"name"`
	Namespace   string            `json:"namespace"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// DesiredProject is the AppProject of a tenant namespace: it may take sources only from the
// repositories the namespace's GitOpsDeployments name, and deploy only to the destinations they
// resolve to. Cluster-scoped resources are allowed only if clusterScoped (one of the tenant's
// ManagedEnvironments gives access to them); even then, its deployments into its own namespace
// cannot write any, as the deployer Argo CD impersonates there has no cluster-wide rights.
// accounts are the destinationServiceAccounts: whom Argo CD impersonates for each destination.
func DesiredProject(namespace, argoNamespace string, repoURLs []string, dests []argov1alpha1.ApplicationDestination,
	accounts []argov1alpha1.ApplicationDestinationServiceAccount, clusterScoped bool) *ProjectApply {
	repos := append([]string(nil), repoURLs...)
	sort.Strings(repos)
	repos = dedupSorted(repos)
	destinations := append([]argov1alpha1.ApplicationDestination(nil), dests...)
	sort.Slice(destinations, func(i, j int) bool {
		di, dj := destinations[i], destinations[j]
		if di.Name != dj.Name {
			return di.Name < dj.Name
		}
		if di.Server != dj.Server {
			return di.Server < dj.Server
		}
		return di.Namespace < dj.Namespace
	})
	out := destinations[:0]
	for i, d := range destinations {
		if i == 0 || d != destinations[i-1] {
			out = append(out, d)
		}
	}
	destinations = out
	accts := append([]argov1alpha1.ApplicationDestinationServiceAccount(nil), accounts...)
	sort.Slice(accts, func(i, j int) bool {
		if accts[i].Server != accts[j].Server {
			return accts[i].Server < accts[j].Server
		}
		return accts[i].Namespace < accts[j].Namespace
	})
	accts = slices.Compact(accts)
	var clusterKinds []metav1.GroupKind
	if clusterScoped {
		clusterKinds = []metav1.GroupKind{{Group: "*", Kind: "*"}}
	}
	return &ProjectApply{
		TypeMeta: metav1.TypeMeta{APIVersion: argov1alpha1.SchemeGroupVersion.String(), Kind: "AppProject"},
		Metadata: ApplyMeta{
			Name:      ProjectName(namespace),
			Namespace: argoNamespace,
			Labels:    map[string]string{LabelTenantNamespace: namespace},
		},
		Spec: argov1alpha1.AppProjectSpec{
			SourceRepos:                repos,
			Destinations:               destinations,
			ClusterResourceWhitelist:   clusterKinds,
			DestinationServiceAccounts: accts,
			Description:                "GitOpsDeployments of namespace " + namespace,
		},
	}
}

// ProjectApply is a server-side apply body for an AppProject: just the fields the agent
// manages.
type ProjectApply struct {
	metav1.TypeMeta `json:",inline"`
	Metadata        ApplyMeta                   `json:"metadata"`
	Spec            argov1alpha1.AppProjectSpec `json:"spec"`
}

// MarshalJSON sends clusterResourceWhitelist even when empty: server-side apply leaves alone
// the fields an apply omits, so only an explicit empty list takes back cluster-scoped kinds
// that someone else allowed.
func (want *ProjectApply) MarshalJSON() ([]byte, error) {
	type plain ProjectApply // without this method
	raw, err := json.Marshal((*plain)(want))
	if err != nil || len(want.Spec.ClusterResourceWhitelist) > 0 {
		return raw, err
	}
	var obj map[string]interface{}
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, err
	}
	obj["spec"].(map[string]interface{})["clusterResourceWhitelist"] = []interface{}{}
	return json.Marshal(obj)
}

// UpToDate tells whether p already is what want would apply, so that an unchanged tenant costs
// no write, and a project widened behind the agent's back is seen.
func (want *ProjectApply) UpToDate(p *argov1alpha1.AppProject) bool {
	if p == nil || p.Labels[LabelTenantNamespace] != want.Metadata.Labels[LabelTenantNamespace] ||
		p.Spec.Description != want.Spec.Description ||
		len(p.Spec.SourceRepos) != len(want.Spec.SourceRepos) ||
		len(p.Spec.Destinations) != len(want.Spec.Destinations) ||
		!slices.Equal(p.Spec.ClusterResourceWhitelist, want.Spec.ClusterResourceWhitelist) ||
		!slices.Equal(p.Spec.DestinationServiceAccounts, want.Spec.DestinationServiceAccounts) {
		return false
	}
	for i := range want.Spec.SourceRepos {
		if p.Spec.SourceRepos[i] != want.Spec.SourceRepos[i] {
			return false
		}
	}
	for i := range want.Spec.Destinations {
		if p.Spec.Destinations[i] != want.Spec.Destinations[i] {
			return false
		}
	}
	return true
}

func dedupSorted(s []string) []string {
	out := s[:0]
	for i, x := range s {
		if i == 0 || x != s[i-1] {
			out = append(out, x)
		}
	}
	return out
}
