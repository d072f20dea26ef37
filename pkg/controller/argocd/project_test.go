package argocd

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// localJane is where a GitOpsDeployment of namespace jane deploys on the local cluster.
var localJane = argov1alpha1.ApplicationDestination{Server: InClusterServer, Namespace: "jane"}

func TestDesiredProject(t *testing.T) {
	p := DesiredProject("jane", "argocd", []string{"https://b", "https://a", "https://b"},
		[]argov1alpha1.ApplicationDestination{localJane, localJane}, nil, false)
	if p.Metadata.Name != "gitops-tenant-jane" || p.Metadata.Namespace != "argocd" {
		t.Errorf("name = %s/%s", p.Metadata.Namespace, p.Metadata.Name)
	}
	if got := strings.Join(p.Spec.SourceRepos, ","); got != "https://a,https://b" {
		t.Errorf("sourceRepos = %s, want each repository once, sorted", got)
	}
	if len(p.Spec.Destinations) != 1 || p.Spec.Destinations[0] != localJane {
		t.Errorf("destinations = %+v, want only the tenant's namespace", p.Spec.Destinations)
	}
	if len(p.Spec.ClusterResourceWhitelist) != 0 {
		t.Error("a tenant project without a cluster-wide environment must not allow cluster-scoped resources")
	}
	live := &argov1alpha1.AppProject{ObjectMeta: metav1.ObjectMeta{Labels: p.Metadata.Labels}, Spec: p.Spec}
	if !p.UpToDate(live) {
		t.Error("the project as applied is reported as drifted")
	}
	live.Spec.SourceRepos = []string{"*"}
	if p.UpToDate(live) {
		t.Error("a widened sourceRepos is not seen")
	}
	live.Spec.SourceRepos = p.Spec.SourceRepos
	live.Spec.Destinations = []argov1alpha1.ApplicationDestination{{Server: "*", Namespace: "*"}}
	if p.UpToDate(live) {
		t.Error("a widened destination is not seen")
	}
	live.Spec.Destinations = p.Spec.Destinations
	live.Spec.ClusterResourceWhitelist = []metav1.GroupKind{{Group: "*", Kind: "*"}}
	if p.UpToDate(live) {
		t.Error("cluster-scoped resources allowed behind the agent's back are not seen")
	}

	body, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(body), `"clusterResourceWhitelist":[]`) {
		t.Errorf("the apply must send an empty clusterResourceWhitelist to take back what others allowed: %s", body)
	}

	withEnv := DesiredProject("jane", "argocd", []string{"https://a"}, []argov1alpha1.ApplicationDestination{localJane}, nil, true)
	if want := []metav1.GroupKind{{Group: "*", Kind: "*"}}; !slices.Equal(withEnv.Spec.ClusterResourceWhitelist, want) {
		t.Errorf("clusterResourceWhitelist = %v, want %v for a tenant with a cluster-wide environment", withEnv.Spec.ClusterResourceWhitelist, want)
	}
	if !withEnv.UpToDate(&argov1alpha1.AppProject{ObjectMeta: metav1.ObjectMeta{Labels: withEnv.Metadata.Labels}, Spec: withEnv.Spec}) {
		t.Error("the project with cluster-scoped resources, as applied, is reported as drifted")
	}
}

func TestDesiredProjectServiceAccounts(t *testing.T) {
	acct := func(server, namespace, sa string) argov1alpha1.ApplicationDestinationServiceAccount {
		return argov1alpha1.ApplicationDestinationServiceAccount{Server: server, Namespace: namespace, DefaultServiceAccount: sa}
	}
	local := acct(InClusterServer, "jane", "jane:gitops-deployer")
	envB := acct(`https://b\?managedEnvironment=2`, "*", "kube-system:b")
	envA := acct(`https://a\?managedEnvironment=1`, "*", "kube-system:a")
	envAOther := acct(`https://a\?managedEnvironment=1`, "api", "kube-system:a")
	dests := []argov1alpha1.ApplicationDestination{localJane}

	p := DesiredProject("jane", "argocd", []string{"https://r"}, dests,
		[]argov1alpha1.ApplicationDestinationServiceAccount{local, envB, envA, local, envAOther, envB}, true)
	want := []argov1alpha1.ApplicationDestinationServiceAccount{envA, envAOther, envB, local}
	if got := p.Spec.DestinationServiceAccounts; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("destinationServiceAccounts = %+v, want %+v (sorted by server and namespace, each once)", got, want)
	}
	// Sorting a copy: the caller's order is left alone.
	in := []argov1alpha1.ApplicationDestinationServiceAccount{local, envA}
	DesiredProject("jane", "argocd", nil, dests, in, false)
	if in[0] != local || in[1] != envA {
		t.Errorf("DesiredProject reordered its argument: %+v", in)
	}

	body, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(body), `"destinationServiceAccounts":[{"server":"https://a\\?managedEnvironment=1","namespace":"*","defaultServiceAccount":"kube-system:a"}`) {
		t.Errorf("the apply body does not carry the accounts: %s", body)
	}

	live := func(mutate func(*argov1alpha1.AppProject)) *argov1alpha1.AppProject {
		lp := &argov1alpha1.AppProject{ObjectMeta: metav1.ObjectMeta{Labels: p.Metadata.Labels}, Spec: *p.Spec.DeepCopy()}
		if mutate != nil {
			mutate(lp)
		}
		return lp
	}
	if !p.UpToDate(live(nil)) {
		t.Error("the project as applied is reported as drifted")
	}
	for name, mutate := range map[string]func(*argov1alpha1.AppProject){
		"changed account": func(lp *argov1alpha1.AppProject) {
			lp.Spec.DestinationServiceAccounts[3].DefaultServiceAccount = "kube-system:argocd-manager"
		},
		"widened server": func(lp *argov1alpha1.AppProject) { lp.Spec.DestinationServiceAccounts[0].Server = "*" },
		"widened namespace": func(lp *argov1alpha1.AppProject) {
			lp.Spec.DestinationServiceAccounts[3].Namespace = "*"
		},
		"removed account": func(lp *argov1alpha1.AppProject) {
			lp.Spec.DestinationServiceAccounts = lp.Spec.DestinationServiceAccounts[:3]
		},
		"added account": func(lp *argov1alpha1.AppProject) {
			lp.Spec.DestinationServiceAccounts = append(lp.Spec.DestinationServiceAccounts, acct("*", "*", "kube-system:admin"))
		},
		"no accounts": func(lp *argov1alpha1.AppProject) { lp.Spec.DestinationServiceAccounts = nil },
	} {
		if p.UpToDate(live(mutate)) {
			t.Errorf("a %s is not seen", name)
		}
	}

	// A tenant with no account to name: one someone added is drift too.
	none := DesiredProject("jane", "argocd", []string{"https://r"}, dests, nil, false)
	nl := &argov1alpha1.AppProject{ObjectMeta: metav1.ObjectMeta{Labels: none.Metadata.Labels}, Spec: *none.Spec.DeepCopy()}
	if !none.UpToDate(nl) {
		t.Error("the project without accounts, as applied, is reported as drifted")
	}
	nl.Spec.DestinationServiceAccounts = []argov1alpha1.ApplicationDestinationServiceAccount{acct("*", "*", "kube-system:admin")}
	if none.UpToDate(nl) {
		t.Error("an account added behind the agent's back is not seen")
	}
}
