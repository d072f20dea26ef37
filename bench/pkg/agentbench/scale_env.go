package agentbench

import (
	"context"
	"fmt"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/argocd"
	"github.com/gitops-service/gitops-service/pkg/controller/managedenvironment"
)

// The environments step of the scale benchmark (issue 18): after the tenant steps,
// GitOpsDeploymentManagedEnvironments to the stack's remote cluster (its second kube-apiserver,
// hack/local-up.sh with GITOPS_LOCAL_REMOTE_CLUSTER=1), each with one automated deployment
// through it, in two phases:
//
//   - distinct credentials: tenants 1..N each get a ServiceAccount of their own on the remote
//     cluster, with every right in a remote namespace of their own, and an environment limited
//     to that namespace: one Argo CD cluster Secret, and so one cluster cache, each;
//   - shared credentials: tenants N+1..2N each get an environment of their own made from ONE
//     ServiceAccount token (the same remote namespace list for all): the agent gives them one
//     cluster Secret, and Argo CD one cache.
//
// After each phase it samples the watches on the remote kube-apiserver and the processes'
// memory, so that the report can state what an environment costs.
const (
	// EnvironmentName names the environment, its Secret and its deployment in a tenant namespace.
	EnvironmentName = "scale-env"
	// envSharedRemoteNamespace is the remote namespace of the shared credentials.
	envSharedRemoteNamespace = "scale-env-shared"
	// envRemoteServiceAccount is the ServiceAccount (and its Role and RoleBinding) in each
	// remote namespace.
	envRemoteServiceAccount = "deployer"
	// envTokenLifetime is how long the ServiceAccount tokens the environments use are valid.
	envTokenLifetime = 24 * time.Hour
)

// envRemoteNamespace is the remote namespace of tenant i's own credentials (distinct phase).
func envRemoteNamespace(i int) string { return fmt.Sprintf("scale-env-%04d", i) }

// envSharedPath is the fixture path of the k-th (from 0) deployment of the shared phase: they
// all deploy into the one shared remote namespace, so each needs a ConfigMap of its own. Paths
// 0 and 1 are the tenants' and the probe's.
func envSharedPath(k int) string { return appPath(2 + k) }

// RemoteCluster is the stack's second kube-apiserver, through its admin credentials.
type RemoteCluster struct {
	Kube kubernetes.Interface
	// Server and CAData go into the environments' kubeconfigs.
	Server string
	CAData []byte
}

// EnvironmentSample is one sample of the environments step.
type EnvironmentSample struct {
	// Resources holds the local figures: kube-apiserver's watches, the processes' RSS and the
	// Applications.
	Resources
	// RemoteWatches is the WATCH requests in flight on the remote kube-apiserver.
	RemoteWatches           float64
	RemoteWatchesByResource map[string]float64
	// ClusterSecrets counts the agent's shared Argo CD cluster Secrets (managedenvironment.LabelManagedCluster).
	ClusterSecrets int
}

// EnvironmentPhase is one phase of the environments step.
type EnvironmentPhase struct {
	// Environments is how many environments (each with one deployment) the phase added.
	Environments int
	// Synced is from the phase's first create until every one of its deployments was reported
	// Synced and Healthy on both sides; NotSynced counts those that were not within StepTimeout.
	Synced    time.Duration
	NotSynced int
	Sample    EnvironmentSample
	// Latency is that of the phase's deployments, as for the tenants' (apply, status).
	Latency *Result
}

// EnvironmentsResult is the environments step.
type EnvironmentsResult struct {
	// N is the environments of each phase; Tenants the tenants that existed.
	N, Tenants int
	// Before is sampled after the tenant steps, before the first environment.
	Before EnvironmentSample
	// Distinct and Shared are the two phases (nil when the run ended before them).
	Distinct, Shared *EnvironmentPhase
}

// checkRemoteClean refuses to start while remote namespaces of an earlier run exist.
func checkRemoteClean(ctx context.Context, remote *RemoteCluster) error {
	selector := ScaleLabel + "=" + scaleLabelValue
	old, err := remote.Kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return fmt.Errorf("the remote cluster: %w", err)
	}
	if len(old.Items) > 0 {
		return fmt.Errorf("%d namespaces of an earlier run exist on the remote cluster (%s ...): delete them first (kubectl --kubeconfig <stack>/remote.kubeconfig delete namespace -l %s)",
			len(old.Items), old.Items[0].Name, selector)
	}
	return nil
}

// runEnvironments runs the environments step over the tenants 1..tenants (which must be at
// least 2*cfg.Environments). Unless cfg.Keep, what it made goes again before it returns.
func runEnvironments(ctx context.Context, cfg ScaleConfig, tr *Tracker, repoURL string, tenants int, logf func(string, ...interface{})) (*EnvironmentsResult, error) {
	n := cfg.Environments
	res := &EnvironmentsResult{N: n, Tenants: tenants}
	if cfg.Remote == nil {
		return res, fmt.Errorf("environments: no remote cluster")
	}
	if 2*n > tenants {
		return res, fmt.Errorf("environments: %d environments in each of two phases need %d tenants, there are %d", n, 2*n, tenants)
	}
	var (
		remoteNamespaces []string
		tenantsUsed      []string
		uids             []string
	)
	if !cfg.Keep {
		defer func() { cleanupEnvironments(cfg, tenantsUsed, remoteNamespaces, uids, res.Before.ClusterSecrets, logf) }()
	}

	logf("environments: settling %s, then sampling before the first", cfg.Settle)
	var err error
	if res.Before, err = sampleEnvironments(ctx, cfg, tr); err != nil {
		return res, err
	}
	logf("environments: before: %s", describeEnvironments(res.Before))

	// (a) distinct credentials: one ServiceAccount and remote namespace per tenant.
	logf("environments: distinct credentials: %d tenants, each with a remote ServiceAccount and namespace of its own, an environment and a deployment through it", n)
	start := time.Now()
	var phaseUIDs []string
	for k := 1; k <= n; k++ {
		tenant, rns := TenantNamespace(k), envRemoteNamespace(k)
		remoteNamespaces = append(remoteNamespaces, rns)
		token, err := remoteServiceAccount(ctx, cfg.Remote, rns)
		if err != nil {
			return res, err
		}
		tenantsUsed = append(tenantsUsed, tenant)
		d, err := createEnvironment(ctx, cfg, repoURL, tenant, rns, token, appPath(0))
		if err != nil {
			return res, err
		}
		tr.Created(d, 0)
		phaseUIDs = append(phaseUIDs, string(d.UID))
		uids = append(uids, string(d.UID))
	}
	if res.Distinct, err = finishPhase(ctx, cfg, tr, "distinct credentials", phaseUIDs, tenantsUsed, start, logf); err != nil {
		return res, err
	}

	// (b) shared credentials: one ServiceAccount token for N more tenants.
	logf("environments: shared credentials: %d more tenants, each with an environment made from one shared ServiceAccount token and a deployment through it", n)
	start = time.Now()
	phaseUIDs = nil
	remoteNamespaces = append(remoteNamespaces, envSharedRemoteNamespace)
	token, err := remoteServiceAccount(ctx, cfg.Remote, envSharedRemoteNamespace)
	if err != nil {
		return res, err
	}
	var phaseTenants []string
	for k := 0; k < n; k++ {
		tenant := TenantNamespace(n + 1 + k)
		tenantsUsed = append(tenantsUsed, tenant)
		phaseTenants = append(phaseTenants, tenant)
		d, err := createEnvironment(ctx, cfg, repoURL, tenant, envSharedRemoteNamespace, token, envSharedPath(k))
		if err != nil {
			return res, err
		}
		tr.Created(d, 2+k)
		phaseUIDs = append(phaseUIDs, string(d.UID))
		uids = append(uids, string(d.UID))
	}
	if res.Shared, err = finishPhase(ctx, cfg, tr, "shared credentials", phaseUIDs, phaseTenants, start, logf); err != nil {
		return res, err
	}
	return res, nil
}

// finishPhase waits until the phase's deployments are reported Synced and Healthy (or
// StepTimeout), then samples.
func finishPhase(ctx context.Context, cfg ScaleConfig, tr *Tracker, what string, uids, tenants []string, start time.Time,
	logf func(string, ...interface{})) (*EnvironmentPhase, error) {
	phase := &EnvironmentPhase{Environments: len(uids)}
	stepCtx, cancel := context.WithTimeout(ctx, cfg.StepTimeout)
	reported := 0
	_ = wait.PollUntilContextCancel(stepCtx, time.Second, true, func(context.Context) (bool, error) {
		var applied int
		applied, reported = tr.Progress(uids)
		logf("environments: %s %4.0fs: %d/%d Applications made, %d/%d reported Synced+Healthy", what,
			time.Since(start).Seconds(), applied, len(uids), reported, len(uids))
		return reported == len(uids), nil
	})
	cancel()
	phase.Synced = time.Since(start)
	phase.NotSynced = len(uids) - reported
	phase.Latency = tr.Result(uids)
	if ctx.Err() != nil {
		return phase, ctx.Err()
	}
	if phase.NotSynced > 0 {
		logNotConnected(ctx, cfg, tenants, logf)
	}
	logf("environments: %s: settling %s, then sampling", what, cfg.Settle)
	var err error
	if phase.Sample, err = sampleEnvironments(ctx, cfg, tr); err != nil {
		return phase, err
	}
	logf("environments: after %s: %s", what, describeEnvironments(phase.Sample))
	return phase, nil
}

// logNotConnected logs the environments among tenants that do not show a connection, to tell
// why a phase did not get Synced.
func logNotConnected(ctx context.Context, cfg ScaleConfig, tenants []string, logf func(string, ...interface{})) {
	shown := 0
	for _, tenant := range tenants {
		env, err := cfg.GitOps.ManagedGitopsV1alpha1().GitOpsDeploymentManagedEnvironments(tenant).Get(ctx, EnvironmentName, metav1.GetOptions{})
		if err != nil {
			logf("environments: %s/%s: %v", tenant, EnvironmentName, err)
			shown++
		} else if c := meta.FindStatusCondition(env.Status.Conditions, managedv1alpha1.ManagedEnvironmentStatusConnectionInitializationSucceeded); c == nil || c.Status != metav1.ConditionTrue {
			logf("environments: %s/%s not connected: %+v", tenant, EnvironmentName, c)
			shown++
		}
		if shown >= 5 {
			return
		}
	}
}

// sampleEnvironments waits Settle, then samples the stack, the remote kube-apiserver's watches
// and the cluster Secrets.
func sampleEnvironments(ctx context.Context, cfg ScaleConfig, tr *Tracker) (EnvironmentSample, error) {
	var s EnvironmentSample
	var err error
	if s.Resources, err = sample(ctx, cfg, tr); err != nil {
		return s, err
	}
	if s.RemoteWatches, s.RemoteWatchesByResource, err = APIServerWatches(ctx, cfg.Remote.Kube); err != nil {
		return s, fmt.Errorf("the remote cluster: %w", err)
	}
	secrets, err := cfg.Kube.CoreV1().Secrets(cfg.ArgoNamespace).List(ctx, metav1.ListOptions{LabelSelector: managedenvironment.LabelManagedCluster})
	if err != nil {
		return s, err
	}
	s.ClusterSecrets = len(secrets.Items)
	return s, nil
}

func describeEnvironments(s EnvironmentSample) string {
	return fmt.Sprintf("%d cluster Secrets, %.0f watches on the remote kube-apiserver; %s", s.ClusterSecrets, s.RemoteWatches, describe(s.Resources))
}

// remoteServiceAccount makes the remote namespace rns with a ServiceAccount that may do
// anything in it (which includes impersonating itself, as Argo CD's sync impersonation does),
// and returns a token of it.
func remoteServiceAccount(ctx context.Context, remote *RemoteCluster, rns string) (string, error) {
	kube := remote.Kube
	wrap := func(what string, err error) error { return fmt.Errorf("remote %s in %s: %w", what, rns, err) }
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name: rns, Labels: map[string]string{ScaleLabel: scaleLabelValue},
	}}, metav1.CreateOptions{}); err != nil {
		return "", wrap("namespace", err)
	}
	if _, err := kube.CoreV1().ServiceAccounts(rns).Create(ctx, &corev1.ServiceAccount{
		ObjectMeta: metav1.ObjectMeta{Name: envRemoteServiceAccount},
	}, metav1.CreateOptions{}); err != nil {
		return "", wrap("ServiceAccount", err)
	}
	if _, err := kube.RbacV1().Roles(rns).Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: envRemoteServiceAccount},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}}},
	}, metav1.CreateOptions{}); err != nil {
		return "", wrap("Role", err)
	}
	if _, err := kube.RbacV1().RoleBindings(rns).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: envRemoteServiceAccount},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: envRemoteServiceAccount},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: envRemoteServiceAccount, Namespace: rns}},
	}, metav1.CreateOptions{}); err != nil {
		return "", wrap("RoleBinding", err)
	}
	tok, err := kube.CoreV1().ServiceAccounts(rns).CreateToken(ctx, envRemoteServiceAccount, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(envTokenLifetime / time.Second))},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", wrap("token", err)
	}
	return tok.Status.Token, nil
}

// createEnvironment makes, in the tenant namespace, the Secret with a kubeconfig of token, the
// environment limited to the remote namespace rns, and an automated deployment of path into rns
// through it; it returns the deployment.
func createEnvironment(ctx context.Context, cfg ScaleConfig, repoURL, tenant, rns, token, path string) (*managedv1alpha1.GitOpsDeployment, error) {
	wrap := func(what string, err error) error {
		return fmt.Errorf("%s %s/%s: %w", what, tenant, EnvironmentName, err)
	}
	kubeconfig, err := tokenKubeconfig(cfg.Remote.Server, token, cfg.Remote.CAData)
	if err != nil {
		return nil, wrap("kubeconfig", err)
	}
	if _, err := cfg.Kube.CoreV1().Secrets(tenant).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: EnvironmentName},
		Type:       managedv1alpha1.ManagedEnvironmentSecretType,
		Data:       map[string][]byte{"kubeconfig": kubeconfig},
	}, metav1.CreateOptions{}); err != nil {
		return nil, wrap("Secret", err)
	}
	if _, err := cfg.GitOps.ManagedGitopsV1alpha1().GitOpsDeploymentManagedEnvironments(tenant).Create(ctx, &managedv1alpha1.GitOpsDeploymentManagedEnvironment{
		ObjectMeta: metav1.ObjectMeta{Name: EnvironmentName},
		Spec: managedv1alpha1.ManagedEnvironmentSpec{
			APIURL: cfg.Remote.Server, ClusterCredentialsSecret: EnvironmentName, Namespaces: []string{rns},
		},
	}, metav1.CreateOptions{}); err != nil {
		return nil, wrap("GitOpsDeploymentManagedEnvironment", err)
	}
	d := automatedDeployment(EnvironmentName, repoURL, path)
	d.Spec.Destination = managedv1alpha1.ApplicationDestination{Environment: EnvironmentName, Namespace: rns}
	created, err := cfg.GitOps.ManagedGitopsV1alpha1().GitOpsDeployments(tenant).Create(ctx, d, metav1.CreateOptions{})
	if err != nil {
		return nil, wrap("GitOpsDeployment", err)
	}
	return created, nil
}

// tokenKubeconfig is a kubeconfig with one context for server, authenticating with token and
// verifying the server with ca.
func tokenKubeconfig(server, token string, ca []byte) ([]byte, error) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["target"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: ca}
	cfg.AuthInfos["deployer"] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["deployer@target"] = &clientcmdapi.Context{Cluster: "target", AuthInfo: "deployer"}
	cfg.CurrentContext = "deployer@target"
	return clientcmd.Write(*cfg)
}

// cleanupEnvironments deletes the environments' deployments and waits for their Applications
// to go, then the environments and their Secrets, waits for the cluster Secrets to return to
// clusterSecrets, and deletes the remote namespaces (with their ServiceAccounts and RBAC).
func cleanupEnvironments(cfg ScaleConfig, tenants, remoteNamespaces, uids []string, clusterSecrets int, logf func(string, ...interface{})) {
	if len(tenants) == 0 && len(remoteNamespaces) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	logf("environments: deleting the %d environments and their deployments", len(tenants))
	gitops := cfg.GitOps.ManagedGitopsV1alpha1()
	for _, t := range tenants {
		if err := gitops.GitOpsDeployments(t).Delete(ctx, EnvironmentName, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			logf("environments: deleting the deployment of %s: %v", t, err)
		}
	}
	ours := map[string]bool{}
	for _, u := range uids {
		ours[u] = true
	}
	if err := wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		apps, err := cfg.Argo.ArgoprojV1alpha1().Applications(cfg.ArgoNamespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		for _, a := range apps.Items {
			if ours[a.Labels[argocd.LabelDeploymentUID]] {
				return false, nil
			}
		}
		return true, nil
	}); err != nil {
		logf("environments: their Applications were not all deleted after %s; going on", time.Since(start).Round(time.Second))
	}
	for _, t := range tenants {
		if err := gitops.GitOpsDeploymentManagedEnvironments(t).Delete(ctx, EnvironmentName, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			logf("environments: deleting the environment of %s: %v", t, err)
		}
		if err := cfg.Kube.CoreV1().Secrets(t).Delete(ctx, EnvironmentName, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			logf("environments: deleting the Secret of %s: %v", t, err)
		}
	}
	if err := wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		s, err := cfg.Kube.CoreV1().Secrets(cfg.ArgoNamespace).List(ctx, metav1.ListOptions{LabelSelector: managedenvironment.LabelManagedCluster})
		return err == nil && len(s.Items) <= clusterSecrets, nil
	}); err != nil {
		logf("environments: the agent had not deleted their cluster Secrets after %s; going on", time.Since(start).Round(time.Second))
	}
	if cfg.Remote != nil {
		for _, rns := range remoteNamespaces {
			if err := deleteRemoteNamespace(ctx, cfg.Remote.Kube, rns); err != nil {
				logf("environments: deleting remote namespace %s: %v", rns, err)
			}
		}
	}
	logf("environments: cleaned up in %s", time.Since(start).Round(time.Second))
}

// deleteRemoteNamespace deletes what the benchmark and Argo CD put into the remote namespace,
// then the namespace. The remote cluster's kube-controller-manager runs only the token
// controller, not the namespace controller, so the namespace is finalized here, as that
// controller would once the namespace is empty.
func deleteRemoteNamespace(ctx context.Context, kube kubernetes.Interface, rns string) error {
	del, all := metav1.DeleteOptions{}, metav1.ListOptions{}
	core, rbac := kube.CoreV1(), kube.RbacV1()
	for _, c := range []struct {
		what string
		err  error
	}{
		{"ConfigMaps", core.ConfigMaps(rns).DeleteCollection(ctx, del, all)},
		{"Secrets", core.Secrets(rns).DeleteCollection(ctx, del, all)},
		{"RoleBindings", rbac.RoleBindings(rns).DeleteCollection(ctx, del, all)},
		{"Roles", rbac.Roles(rns).DeleteCollection(ctx, del, all)},
		{"ServiceAccounts", core.ServiceAccounts(rns).DeleteCollection(ctx, del, all)},
	} {
		if c.err != nil && !apierrors.IsNotFound(c.err) {
			return fmt.Errorf("deleting its %s: %w", c.what, c.err)
		}
	}
	if err := kube.CoreV1().Namespaces().Delete(ctx, rns, metav1.DeleteOptions{}); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	}
	ns, err := kube.CoreV1().Namespaces().Get(ctx, rns, metav1.GetOptions{})
	if err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	}
	ns.Spec.Finalizers = nil
	if _, err := kube.CoreV1().Namespaces().Finalize(ctx, ns, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("finalizing it: %w", err)
	}
	return nil
}
