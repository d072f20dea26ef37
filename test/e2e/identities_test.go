//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/appstudio/namespaceprovisioner"
	"github.com/gitops-service/gitops-service/pkg/controller/tenantsecrets"
	"github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned"
	"github.com/gitops-service/gitops-service/pkg/registry/fleetidentity"
)

// kubeAs is a client of the stack's cluster acting as user through impersonation.
func kubeAs(user string) kubernetes.Interface {
	cfg := rest.CopyConfig(adminConfig)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	return kubernetes.NewForConfigOrDie(cfg)
}

// No identity of the service is worth more than its job (docs/operator-identities.md). Each is
// acted as through the kube-apiserver's impersonation, with the rights the artifacts give it
// (hack/local-up.sh applies them), and the refusals come from RBAC, from the admission policies
// of artifacts/admission-policy, or from gitops-apiserver's strategies. Every refusal has a
// permitted counterpart next to it, so that a refusal for another reason (a typo, a missing
// object) would show.
var _ = Describe("the service's identities", Ordered, func() {
	const (
		provisioner = "system:serviceaccount:gitops-service:gitops-namespace-provisioner"
		controllers = "system:serviceaccount:gitops-service:gitops-controllers"
		argoCD      = "system:serviceaccount:gitops-service-argocd:argocd-application-controller"
		// The stack's one agent process plays instance main's agent, the AppStudio controllers
		// and the provisioner (hack/local-up.sh): it holds the Secret rights of the three.
		stackAgent   = "system:serviceaccount:gitops-service:gitops-agent"
		tokenSecret  = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: %s\n  namespace: %s\n  labels: {%s}\n  annotations:\n    kubernetes.io/service-account.name: %s\ntype: kubernetes.io/service-account-token\n"
		envSecretLbl = "appstudio.openshift.io/environment-secret: x"
	)
	var (
		suffix            = fmt.Sprintf("%d", time.Now().UnixNano()%100000)
		instanceA         = "e2e-ida-" + suffix
		instanceB         = "e2e-idb-" + suffix
		agentA            = fleetidentity.DefaultAgentUserPrefix + instanceA
		agentASA          = strings.TrimPrefix(agentA, "system:serviceaccount:gitops-service:")
		tenant, tenantOfA string
		provisionedNS     string
		as                = func(user string, args ...string) []string { return append([]string{"--as", user}, args...) }
		refusedTo         = func(user string, args ...string) string {
			GinkgoHelper()
			return fails("admin", "", as(user, args...)...)
		}
		refusedToWithInput = func(user, stdin string, args ...string) string {
			GinkgoHelper()
			return fails("admin", stdin, as(user, args...)...)
		}
	)

	BeforeAll(func(ctx context.Context) {
		tenant, tenantOfA = "e2e-identities-b-"+suffix, "e2e-identities-a-"+suffix
		provisionedNS = "e2e-identities-prov-" + suffix
		createNamespace(ctx, tenant)
		createNamespace(ctx, tenantOfA)
		DeferCleanup(func(ctx context.Context) {
			for _, ns := range []string{tenant, tenantOfA, provisionedNS} {
				_ = kube.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
			}
		})

		By("two instances of the fleet, A and B, draining so that the placement controller puts no tenant on them")
		for _, name := range []string{instanceA, instanceB} {
			_, err := gitops.ManagedGitopsV1alpha1().ArgoCDInstances().Create(ctx, &managedv1alpha1.ArgoCDInstance{
				ObjectMeta: metav1.ObjectMeta{Name: name},
				Spec:       managedv1alpha1.ArgoCDInstanceSpec{Namespace: name, Capacity: 1, Draining: true},
			}, metav1.CreateOptions{})
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(func(ctx context.Context) {
				_ = gitops.ManagedGitopsV1alpha1().ArgoCDInstances().Delete(ctx, name, metav1.DeleteOptions{})
			})
		}
		By("a tenant pinned on each")
		for ns, instance := range map[string]string{tenant: instanceB, tenantOfA: instanceA} {
			_, err := gitops.ManagedGitopsV1alpha1().TenantPlacements().Create(ctx, &managedv1alpha1.TenantPlacement{
				ObjectMeta: metav1.ObjectMeta{Name: ns},
				Spec:       managedv1alpha1.TenantPlacementSpec{Instance: instance, Pinned: true},
			}, metav1.CreateOptions{})
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(func(ctx context.Context) {
				_ = gitops.ManagedGitopsV1alpha1().TenantPlacements().Delete(ctx, ns, metav1.DeleteOptions{})
			})
		}
		By("instance A's agent gets the rights every instance's agent has, as artifacts/agent-deploy tells an admin to give")
		// Its own copy of gitops-agent-main-tenant-secrets: the delete of its own binding of the
		// tenant Secrets' reader role.
		ownRole := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: agentASA + "-tenant-secrets"},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{rbacv1.GroupName}, Resources: []string{"rolebindings"},
				ResourceNames: []string{tenantsecrets.BindingName(agentASA)}, Verbs: []string{"delete"}}}}
		_, err := kube.RbacV1().ClusterRoles().Create(ctx, ownRole, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx context.Context) {
			_ = kube.RbacV1().ClusterRoles().Delete(ctx, ownRole.Name, metav1.DeleteOptions{})
		})
		for _, role := range []string{"gitops-agent", "gitops-agent-deployers", ownRole.Name} {
			binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role + "-" + instanceA},
				RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
				Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: agentASA, Namespace: "gitops-service"}}}
			_, err := kube.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{})
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(func(ctx context.Context) {
				_ = kube.RbacV1().ClusterRoleBindings().Delete(ctx, binding.Name, metav1.DeleteOptions{})
			})
		}
		Eventually(func() error {
			_, _, err := run("admin", "", as(agentA, "get", "argocdinstance", instanceA)...)
			return err
		}).WithTimeout(30 * time.Second).Should(Succeed())
	})

	It("keeps every identity from minting a ServiceAccount token in kube-system", func() {
		secret := func(name string) string {
			return fmt.Sprintf(tokenSecret, name, "kube-system", envSecretLbl, "default")
		}
		for _, user := range []string{agentA, provisioner, argoCD, stackAgent} {
			By(user)
			Expect(refusedToWithInput(user, secret("e2e-minted-"+suffix), "create", "-f", "-")).To(ContainSubstring("forbidden"))
		}
		By("the admission policy refuses it even where RBAC lets the identity write Secrets (the provisioner and the stack's agent everywhere)")
		Expect(refusedToWithInput(provisioner, secret("e2e-minted-"+suffix), "create", "-f", "-")).
			To(ContainSubstring("may not write ServiceAccount token Secrets"))
		Expect(refusedToWithInput(stackAgent, fmt.Sprintf(tokenSecret, "e2e-minted-"+suffix, "gitops-service-argocd",
			"argocd.argoproj.io/secret-type: cluster", "argocd-application-controller"), "create", "-f", "-")).
			To(ContainSubstring("may not write ServiceAccount token Secrets"))

		By("nor any other type of Secret that is a credential to the cluster (a bootstrap token), labelled as theirs")
		Expect(refusedToWithInput(stackAgent, "apiVersion: v1\nkind: Secret\nmetadata:\n  name: bootstrap-token-e2e"+suffix[:1]+"\n  namespace: "+tenant+
			"\n  labels: {"+envSecretLbl+"}\ntype: bootstrap.kubernetes.io/token\nstringData: {token-id: abcdef, token-secret: 0123456789abcdef}\n",
			"create", "-f", "-")).To(ContainSubstring("write only Secrets of type Opaque"))

		By("while the Secrets they exist to write are written")
		mustIn("admin", "apiVersion: v1\nkind: Secret\nmetadata:\n  name: e2e-own-"+suffix+"\n  namespace: "+tenant+
			"\n  labels: {"+envSecretLbl+"}\ntype: Opaque\n", as(stackAgent, "create", "-f", "-")...)
		must("admin", as(stackAgent, "-n", tenant, "delete", "secret", "e2e-own-"+suffix)...)
	})

	It("keeps the service's writers of Secrets off the Secrets of others", func(ctx context.Context) {
		_, err := kube.CoreV1().Secrets(tenant).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "tenants-own"},
			StringData: map[string]string{"password": "x"}}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		for _, user := range []string{provisioner, stackAgent} {
			By(user)
			// An update, as the controllers write (they hold no patch on Secrets), of the Secret
			// as read by the admin: neither reads the Secrets of a namespace it does not serve.
			own, err := kube.CoreV1().Secrets(tenant).Get(ctx, "tenants-own", metav1.GetOptions{})
			Expect(err).NotTo(HaveOccurred())
			secrets := kubeAs(user).CoreV1().Secrets(tenant)
			own.Labels = map[string]string{"appstudio.openshift.io/environment-secret": "x"}
			_, err = secrets.Update(ctx, own, metav1.UpdateOptions{})
			Expect(err).To(MatchError(ContainSubstring("may change or delete only Secrets they labelled as theirs")))
			Expect(refusedTo(user, "-n", tenant, "delete", "secret", "tenants-own")).
				To(ContainSubstring("may change or delete only Secrets they labelled as theirs"))
			Expect(refusedToWithInput(user, "apiVersion: v1\nkind: Secret\nmetadata:\n  name: e2e-unlabelled\n  namespace: "+tenant+"\n",
				"create", "-f", "-")).To(ContainSubstring("write only Secrets labelled as theirs"))
		}
	})

	It("keeps every identity from binding edit or admin outside its purpose", func(ctx context.Context) {
		for _, user := range []string{agentA, provisioner, argoCD, stackAgent} {
			for _, role := range []string{"edit", "admin"} {
				By(user + " binding " + role + " in a tenant namespace and in kube-system")
				Expect(refusedTo(user, "-n", tenant, "create", "rolebinding", "e2e-"+role, "--clusterrole", role, "--user", "alice")).
					To(ContainSubstring("forbidden"))
				Expect(refusedTo(user, "-n", "kube-system", "create", "rolebinding", "e2e-"+role, "--clusterrole", role, "--user", "alice")).
					To(ContainSubstring("forbidden"))
			}
			Expect(refusedTo(user, "create", "clusterrolebinding", "e2e-edit-"+suffix, "--clusterrole", "edit", "--user", "alice")).
				To(ContainSubstring("forbidden"))
		}

		By("an agent binds the deployer's role to the namespace's deployer, and to no one else")
		Expect(refusedTo(agentA, "-n", tenant, "create", "rolebinding", "gitops-service-deployer", "--clusterrole", "gitops-service-deployer",
			"--user", "alice")).To(ContainSubstring("bind only a tenant namespace's deployer"))
		Expect(refusedTo(agentA, "-n", tenant, "create", "rolebinding", "e2e-deployer", "--clusterrole", "gitops-service-deployer",
			"--serviceaccount", tenant+":gitops-deployer")).To(ContainSubstring("bind only a tenant namespace's deployer"))
		for _, ns := range []string{"kube-system", "gitops-service", "default"} {
			By("not in " + ns + ", even to a gitops-deployer of its own made there")
			Expect(refusedTo(agentA, "-n", ns, "create", "rolebinding", "gitops-service-deployer", "--clusterrole", "gitops-service-deployer",
				"--serviceaccount", ns+":gitops-deployer")).To(ContainSubstring("bind only a tenant namespace's deployer"))
		}
		Expect(refusedTo(agentA, "-n", tenant, "create", "rolebinding", "gitops-service-deployer-impersonator", "--clusterrole",
			"gitops-service-deployer-impersonator", "--serviceaccount", tenant+":argocd-application-controller")).
			To(ContainSubstring("bind only a tenant namespace's deployer"))
		must("admin", as(agentA, "-n", tenant, "create", "rolebinding", "gitops-service-deployer", "--clusterrole", "gitops-service-deployer",
			"--serviceaccount", tenant+":gitops-deployer")...)

		By("the provisioner binds edit as deployer-edit to the deployer, only in a namespace it made")
		Expect(refusedTo(provisioner, "-n", tenant, "create", "rolebinding", namespaceprovisioner.RoleBindingName, "--clusterrole", "edit",
			"--serviceaccount", tenant+":"+namespaceprovisioner.ServiceAccountName)).
			To(ContainSubstring("bind only a tenant namespace's deployer"))
		namespaces := kubeAs(provisioner).CoreV1().Namespaces()
		other, err := namespaces.Get(ctx, tenant, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		other.Labels[namespaceprovisioner.LabelTarget] = "x"
		_, err = namespaces.Update(ctx, other, metav1.UpdateOptions{})
		Expect(err).To(MatchError(ContainSubstring("may change or delete only namespaces the namespace provisioner made")))
		Expect(refusedTo(provisioner, "delete", "namespace", tenant)).
			To(ContainSubstring("may change or delete only namespaces the namespace provisioner made"))
		mustIn("admin", fmt.Sprintf("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: %s\n  labels:\n    %s: x\n",
			provisionedNS, namespaceprovisioner.LabelTarget), as(provisioner, "create", "-f", "-")...)
		Expect(refusedTo(provisioner, "-n", provisionedNS, "create", "rolebinding", namespaceprovisioner.RoleBindingName, "--clusterrole", "edit",
			"--user", "alice")).To(ContainSubstring("bind only a tenant namespace's deployer"))
		must("admin", as(provisioner, "-n", provisionedNS, "create", "rolebinding", namespaceprovisioner.RoleBindingName, "--clusterrole", "edit",
			"--serviceaccount", provisionedNS+":"+namespaceprovisioner.ServiceAccountName)...)

		By("the provisioner requests tokens of a deployer only in a namespace it made")
		for _, ns := range []string{tenant, provisionedNS} {
			_, err := kube.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{
				ObjectMeta: metav1.ObjectMeta{Name: namespaceprovisioner.ServiceAccountName}}, metav1.CreateOptions{})
			Expect(err).NotTo(HaveOccurred())
		}
		Expect(refusedTo(provisioner, "-n", tenant, "create", "token", namespaceprovisioner.ServiceAccountName)).
			To(ContainSubstring("request tokens only in namespaces the namespace provisioner made"))
		Expect(must("admin", as(provisioner, "-n", provisionedNS, "create", "token", namespaceprovisioner.ServiceAccountName)...)).NotTo(BeEmpty())
	})

	It("keeps the service's identities out of the Secrets of kube-system, of the service, and of the tenants they do not serve", func(ctx context.Context) {
		for _, user := range []string{agentA, controllers, provisioner, stackAgent} {
			By(user)
			for _, ns := range []string{"kube-system", "gitops-service"} {
				Expect(refusedTo(user, "-n", ns, "get", "secrets")).To(ContainSubstring("forbidden"))
			}
			Expect(refusedTo(user, "get", "secrets", "--all-namespaces")).To(ContainSubstring("forbidden"))
			Expect(refusedTo(user, "-n", tenant, "get", "secrets")).To(ContainSubstring("forbidden"))

			By(user + " binding the tenant Secrets' reader to itself outside a tenant namespace")
			sa := strings.TrimPrefix(user, "system:serviceaccount:gitops-service:")
			for _, ns := range []string{"kube-system", "gitops-service", "default"} {
				Expect(refusedTo(user, "-n", ns, "create", "rolebinding", tenantsecrets.BindingName(sa), "--clusterrole", tenantsecrets.ReaderRole,
					"--serviceaccount", "gitops-service:"+sa)).To(ContainSubstring("bind only a tenant namespace's deployer"))
			}
		}

		By("the reader bound in a tenant namespace only to the requester itself, under its own name")
		Expect(refusedTo(agentA, "-n", tenantOfA, "create", "rolebinding", tenantsecrets.BindingName(agentASA), "--clusterrole", tenantsecrets.ReaderRole,
			"--user", "alice")).To(ContainSubstring("bind only a tenant namespace's deployer"))
		Expect(refusedTo(agentA, "-n", tenantOfA, "create", "rolebinding", tenantsecrets.BindingName(agentASA), "--clusterrole", tenantsecrets.ReaderRole,
			"--serviceaccount", "gitops-service:gitops-controllers")).To(ContainSubstring("bind only a tenant namespace's deployer"))
		Expect(refusedTo(agentA, "-n", tenantOfA, "create", "rolebinding", tenantsecrets.BindingName(agentASA), "--clusterrole", tenantsecrets.ReaderRole,
			"--serviceaccount", "gitops-service:"+agentASA, "--serviceaccount", "gitops-service:gitops-controllers")).
			To(ContainSubstring("bind only a tenant namespace's deployer"))
		Expect(refusedTo(agentA, "-n", tenantOfA, "create", "rolebinding", "e2e-reader", "--clusterrole", tenantsecrets.ReaderRole,
			"--serviceaccount", "gitops-service:"+agentASA)).To(ContainSubstring("bind only a tenant namespace's deployer"))
		must("admin", as(agentA, "-n", tenantOfA, "create", "rolebinding", tenantsecrets.BindingName(agentASA), "--clusterrole", tenantsecrets.ReaderRole,
			"--serviceaccount", "gitops-service:"+agentASA)...)
		Eventually(func() error {
			_, _, err := run("admin", "", as(agentA, "-n", tenantOfA, "get", "secrets")...)
			return err
		}).WithTimeout(30 * time.Second).Should(Succeed())
		Expect(refusedTo(agentA, "-n", tenant, "get", "secrets")).To(ContainSubstring("forbidden"))
		By("and deleted by it, its own binding only")
		Expect(refusedTo(agentA, "-n", tenantOfA, "delete", "rolebinding", tenantsecrets.BindingName("gitops-controllers"))).
			To(ContainSubstring("forbidden"))
		must("admin", as(agentA, "-n", tenantOfA, "delete", "rolebinding", tenantsecrets.BindingName(agentASA))...)

		By("the stack's agent reads the Secrets of a tenant it serves, through the binding it made itself")
		served := "e2e-identities-served-" + suffix
		createNamespace(ctx, served)
		DeferCleanup(func(ctx context.Context) {
			_ = kube.CoreV1().Namespaces().Delete(ctx, served, metav1.DeleteOptions{})
		})
		// Pinned on the stack's instance main, whose agent the stack's agent process is.
		_, err := gitops.ManagedGitopsV1alpha1().TenantPlacements().Create(ctx, &managedv1alpha1.TenantPlacement{
			ObjectMeta: metav1.ObjectMeta{Name: served},
			Spec:       managedv1alpha1.TenantPlacementSpec{Instance: "main", Pinned: true},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx context.Context) {
			_ = gitops.ManagedGitopsV1alpha1().TenantPlacements().Delete(ctx, served, metav1.DeleteOptions{})
		})
		_, err = gitops.ManagedGitopsV1alpha1().GitOpsDeploymentManagedEnvironments(served).Create(ctx, &managedv1alpha1.GitOpsDeploymentManagedEnvironment{
			ObjectMeta: metav1.ObjectMeta{Name: "env"},
			Spec:       managedv1alpha1.ManagedEnvironmentSpec{APIURL: "https://127.0.0.1:1", ClusterCredentialsSecret: "creds"},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		Eventually(func(g Gomega, ctx context.Context) {
			rb, err := kube.RbacV1().RoleBindings(served).Get(ctx, tenantsecrets.BindingName("gitops-agent"), metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(rb.RoleRef.Name).To(Equal(tenantsecrets.ReaderRole))
			g.Expect(rb.Subjects).To(Equal([]rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "gitops-agent", Namespace: "gitops-service"}}))
		}).WithContext(ctx).WithTimeout(60 * time.Second).Should(Succeed())
		Eventually(func() error {
			_, _, err := run("admin", "", as(stackAgent, "-n", served, "get", "secrets")...)
			return err
		}).WithTimeout(30 * time.Second).Should(Succeed())
	})

	It("lets the AppStudio controllers run verification Jobs only as a namespace's deployer, and decide nothing", func() {
		for _, c := range []struct{ args, want string }{
			{"impersonate serviceaccounts/gitops-deployer -n " + tenant, "yes"},
			{"impersonate serviceaccounts/default -n " + tenant, "no"},
			{"create jobs.batch -n " + tenant, "no"},
			{"create pods -n " + tenant, "no"},
			{"update promotiongates.appstudio.redhat.com -n " + tenant + " --subresource=status", "yes"},
			{"update promotiongates.appstudio.redhat.com -n " + tenant, "no"},
			{"create environmentholds.appstudio.redhat.com -n " + tenant, "yes"},
			{"delete environmentholds.appstudio.redhat.com -n " + tenant, "no"},
			{"list promotionapprovals.appstudio.redhat.com -n " + tenant, "yes"},
			{"create promotionapprovals.appstudio.redhat.com -n " + tenant, "no"},
			{"approve environments.appstudio.redhat.com/prod -n " + tenant, "no"},
		} {
			out, _, _ := run("admin", "", as(controllers, append([]string{"auth", "can-i"}, strings.Fields(c.args)...)...)...)
			Expect(strings.TrimSpace(out)).To(Equal(c.want), c.args)
		}
	})

	It("keeps Argo CD's application-controller out of the control plane's Secrets and off the nodes", func() {
		for _, ns := range []string{"kube-system", "gitops-service", tenant} {
			Expect(refusedTo(argoCD, "-n", ns, "get", "secrets")).To(ContainSubstring("forbidden"))
		}
		Expect(refusedTo(argoCD, "get", "secrets", "--all-namespaces")).To(ContainSubstring("forbidden"))
		for _, c := range []struct{ args, want string }{
			// kubectl reads "nodes/proxy" as the node named proxy: a subresource needs the flag.
			{"get nodes --subresource=proxy", "no"},
			{"create pods --subresource=exec", "no"},
			{"get /metrics", "no"},
			{"get /logs", "no"},
			// What it needs: its own namespace's settings, the cache of what it deploys, discovery.
			{"list secrets -n gitops-service-argocd", "yes"},
			{"list configmaps --all-namespaces", "yes"},
			{"list deployments.apps --all-namespaces", "yes"},
			{"get /apis", "yes"},
		} {
			out, _, _ := run("admin", "", as(argoCD, append([]string{"auth", "can-i"}, strings.Fields(c.args)...)...)...)
			Expect(strings.TrimSpace(out)).To(Equal(c.want), c.args)
		}
	})

	It("lets the agent of instance A report on A and take A's tenants, and nothing of instance B", func(ctx context.Context) {
		// As the agent writes: update (its ClusterRole has no patch on the fleet's kinds).
		cfg := rest.CopyConfig(adminConfig)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: agentA}
		fleet := versioned.NewForConfigOrDie(cfg).ManagedGitopsV1alpha1()
		instances, placements := fleet.ArgoCDInstances(), fleet.TenantPlacements()
		report := func(ctx context.Context, name string) error {
			in, err := instances.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			in.Status.Leader = "e2e"
			_, err = instances.UpdateStatus(ctx, in, metav1.UpdateOptions{})
			return err
		}
		placement := func(ctx context.Context, name string, change func(*managedv1alpha1.TenantPlacement), status bool) error {
			p, err := placements.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			change(p)
			if status {
				_, err = placements.UpdateStatus(ctx, p, metav1.UpdateOptions{})
			} else {
				_, err = placements.Update(ctx, p, metav1.UpdateOptions{})
			}
			return err
		}
		take := func(p *managedv1alpha1.TenantPlacement) { p.Status.Instance = instanceA }

		By("its own instance's status and tenants")
		Expect(report(ctx, instanceA)).To(Succeed())
		Expect(placement(ctx, tenantOfA, take, true)).To(Succeed())
		Expect(placement(ctx, tenantOfA, func(p *managedv1alpha1.TenantPlacement) { p.Finalizers = []string{"e2e/held"} }, false)).To(Succeed())
		Expect(placement(ctx, tenantOfA, func(p *managedv1alpha1.TenantPlacement) { p.Finalizers = nil }, false)).To(Succeed())

		By("instance B's status")
		Expect(report(ctx, instanceB)).To(MatchError(ContainSubstring("may report only on its own instance")))
		By("a tenant placed on B: neither taken, nor touched")
		Expect(placement(ctx, tenant, take, true)).To(MatchError(ContainSubstring("may change only the tenants placed on or held by its instance")))
		Expect(placement(ctx, tenant, func(p *managedv1alpha1.TenantPlacement) { p.Status.Message = "mine" }, true)).
			To(MatchError(ContainSubstring("may change only the tenants placed on or held by its instance")))
		Expect(placement(ctx, tenant, func(p *managedv1alpha1.TenantPlacement) { p.Finalizers = []string{"e2e/held"} }, false)).
			To(MatchError(ContainSubstring("may change only the tenants placed on or held by its instance")))
		By("moving a tenant, even its own; deleting or creating one")
		Expect(placement(ctx, tenantOfA, func(p *managedv1alpha1.TenantPlacement) { p.Spec.Instance = instanceB }, false)).
			To(MatchError(ContainSubstring("may not move tenants")))
		Expect(placements.Delete(ctx, tenant, metav1.DeleteOptions{})).To(MatchError(ContainSubstring("forbidden")))
		Expect(refusedTo(agentA, "patch", "tenantplacement", tenant, "--type", "merge",
			"-p", fmt.Sprintf(`{"spec":{"instance":%q}}`, instanceA))).To(ContainSubstring("forbidden"))
	})

	It("admits to the internal kinds the identities it names, not every ServiceAccount of gitops-service", func(ctx context.Context) {
		// The host cluster's RBAC lets both through, so that the refusal seen is gitops-apiserver's.
		role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "e2e-identities-internal-" + suffix},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{"managed-gitops.redhat.com"}, Resources: []string{"*"}, Verbs: []string{"get", "list"}}}}
		_, err := kube.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx context.Context) {
			_ = kube.RbacV1().ClusterRoles().Delete(ctx, role.Name, metav1.DeleteOptions{})
		})
		binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role.Name},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "default", Namespace: "gitops-service"},
				{Kind: rbacv1.ServiceAccountKind, Name: "gitops-namespace-provisioner", Namespace: "gitops-service"}}}
		_, err = kube.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx context.Context) {
			_ = kube.RbacV1().ClusterRoleBindings().Delete(ctx, binding.Name, metav1.DeleteOptions{})
		})
		Eventually(func() error {
			_, _, err := run("admin", "", as("system:serviceaccount:gitops-service:default", "get", "gitopsdeployments", "--all-namespaces")...)
			return err
		}).WithTimeout(30 * time.Second).Should(Succeed())
		for _, resource := range []string{"argocdinstances", "tenantplacements", "operations"} {
			Expect(refusedTo("system:serviceaccount:gitops-service:default", "get", resource, "--all-namespaces")).
				To(ContainSubstring(resource + ".managed-gitops.redhat.com are internal to the GitOps Service"))
			Expect(refusedTo(provisioner, "get", resource, "--all-namespaces")).
				To(ContainSubstring(resource + ".managed-gitops.redhat.com are internal to the GitOps Service"))
		}
		must("admin", as(agentA, "get", "tenantplacements")...)
	})
})
