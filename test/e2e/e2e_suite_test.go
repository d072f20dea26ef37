//go:build e2e

// Package e2e tests the GitOps Service as users meet it: through kubectl and client-go against
// a kube-apiserver that proxies to gitops-apiserver. hack/e2e.sh starts the stack and runs it.
package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	argoclient "github.com/argoproj/argo-cd/v2/pkg/client/clientset/versioned"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned"
)

func TestE2E(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "GitOps Service e2e")
}

var (
	stackDir string
	kubectl  string

	adminConfig *rest.Config
	kube        kubernetes.Interface
	gitops      versioned.Interface

	// placeholderRepo is a local Git repository whose path "deploy" holds no manifests: specs
	// that need a valid GitOpsDeployment but do not test deploying point it here, so that Argo
	// CD never tries to reach a host this machine cannot reach.
	placeholderRepo string
)

// Tenants: alice administers tenant-a, bob administers tenant-b, carol may only view tenant-a.
const (
	tenantA = "e2e-tenant-a"
	tenantB = "e2e-tenant-b"
)

var _ = BeforeSuite(func(ctx context.Context) {
	stackDir = os.Getenv("GITOPS_E2E_DIR")
	kubectl = os.Getenv("GITOPS_E2E_KUBECTL")
	Expect(stackDir).NotTo(BeEmpty(), "GITOPS_E2E_DIR is not set: run the suite with hack/e2e.sh")
	Expect(kubectl).NotTo(BeEmpty(), "GITOPS_E2E_KUBECTL is not set: run the suite with hack/e2e.sh")

	var err error
	adminConfig, err = clientcmd.BuildConfigFromFlags("", kubeconfig("admin"))
	Expect(err).NotTo(HaveOccurred())
	// client-go's default of 5 requests a second would make creating 1,000 objects take minutes.
	adminConfig.QPS, adminConfig.Burst = 200, 400
	kube = kubernetes.NewForConfigOrDie(adminConfig)
	gitops = versioned.NewForConfigOrDie(adminConfig)
	placeholderRepo = "file://" + gitRepository(GinkgoT().TempDir(), map[string]string{
		"deploy/README.md": "Nothing to deploy: the e2e suite's placeholder repository.\n",
	})

	for ns, bindings := range map[string]map[string]string{
		tenantA: {"alice": "admin", "carol": "view"},
		tenantB: {"bob": "admin"},
	} {
		createNamespace(ctx, ns)
		for user, role := range bindings {
			_, err := kube.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: user + "-" + role},
				RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role},
				Subjects:   []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: user}},
			}, metav1.CreateOptions{})
			if !apierrors.IsAlreadyExists(err) {
				Expect(err).NotTo(HaveOccurred())
			}
		}
	}
})

func kubeconfig(user string) string {
	if user == "admin" {
		return filepath.Join(stackDir, "kubeconfig")
	}
	return filepath.Join(stackDir, user+".kubeconfig")
}

func createNamespace(ctx context.Context, name string) {
	_, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		Expect(err).NotTo(HaveOccurred())
	}
}

// run runs kubectl as user with stdin (may be empty) and returns stdout, stderr and the error.
func run(user, stdin string, args ...string) (string, string, error) {
	cmd := exec.Command(kubectl, append([]string{"--kubeconfig", kubeconfig(user)}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	err := cmd.Run()
	return stdout.String(), stderr.String(), err
}

var (
	pluginOnce  sync.Once
	pluginPath  string
	pluginBuild error
)

// pluginBinary returns kubectl-gitops, built from this tree the first time a spec asks for it
// (once per suite process) in a folder AfterSuite removes.
func pluginBinary() string {
	GinkgoHelper()
	pluginOnce.Do(func() {
		dir, err := os.MkdirTemp("", "e2e-kubectl-gitops-")
		if err != nil {
			pluginBuild = err
			return
		}
		pluginPath = filepath.Join(dir, "kubectl-gitops")
		out, err := exec.Command("go", "build", "-o", pluginPath, "github.com/gitops-service/gitops-service/cmd/kubectl-gitops").CombinedOutput()
		if err != nil {
			pluginBuild = fmt.Errorf("go build: %w: %s", err, out)
		}
	})
	Expect(pluginBuild).NotTo(HaveOccurred())
	return pluginPath
}

var _ = AfterSuite(func() {
	if pluginPath != "" {
		Expect(os.RemoveAll(filepath.Dir(pluginPath))).To(Succeed())
	}
})

// runPlugin runs kubectl gitops as a user runs it, a process with user's kubeconfig in ns (args
// may name another -n), and returns its stdout, stderr and exit code.
func runPlugin(user, ns string, args ...string) (string, string, int) {
	GinkgoHelper()
	cmd := exec.Command(pluginBinary(), append([]string{"--kubeconfig", kubeconfig(user), "-n", ns}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		code = exit.ExitCode()
	} else {
		Expect(err).NotTo(HaveOccurred())
	}
	GinkgoWriter.Printf("$ kubectl gitops %s (as %s): exit %d\n%s%s", strings.Join(args, " "), user, code, stdout.String(), stderr.String())
	return stdout.String(), stderr.String(), code
}

// must runs kubectl as user and fails the spec unless it succeeds.
func must(user string, args ...string) string {
	GinkgoHelper()
	stdout, stderr, err := run(user, "", args...)
	Expect(err).NotTo(HaveOccurred(), "kubectl %s: %s", strings.Join(args, " "), stderr)
	return stdout
}

// mustIn is must with stdin.
func mustIn(user, stdin string, args ...string) string {
	GinkgoHelper()
	stdout, stderr, err := run(user, stdin, args...)
	Expect(err).NotTo(HaveOccurred(), "kubectl %s: %s", strings.Join(args, " "), stderr)
	return stdout
}

// fails runs kubectl as user, expects it to fail, and returns its stderr.
func fails(user, stdin string, args ...string) string {
	GinkgoHelper()
	stdout, stderr, err := run(user, stdin, args...)
	Expect(err).To(HaveOccurred(), "kubectl %s succeeded: %s", strings.Join(args, " "), stdout)
	return stderr
}

// deleteAllDeployments deletes every GitOpsDeployment of ns and waits until they are gone,
// finalizers and all, so that the agent and Argo CD carry no backlog of a spec into the next.
// The SnapshotEnvironmentBindings go first: their controller would make their GitOpsDeployments
// again.
func deleteAllDeployments(ctx context.Context, ns string) {
	GinkgoHelper()
	Expect(gitops.AppStudioV1alpha1().SnapshotEnvironmentBindings(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})).To(Succeed())
	client := gitops.ManagedGitopsV1alpha1().GitOpsDeployments(ns)
	Expect(client.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})).To(Succeed())
	Eventually(func(g Gomega, ctx context.Context) {
		list, err := client.List(ctx, metav1.ListOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(list.Items).To(BeEmpty())
	}).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
}

// stackPID is the PID hack/local-up.sh recorded for a process of the stack.
func stackPID(name string) int {
	GinkgoHelper()
	raw, err := os.ReadFile(filepath.Join(stackDir, "pids", name+".pid"))
	Expect(err).NotTo(HaveOccurred())
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	Expect(err).NotTo(HaveOccurred())
	return pid
}

// killStackProcess kills a process of the stack with SIGKILL.
func killStackProcess(name string) {
	GinkgoHelper()
	Expect(syscall.Kill(stackPID(name), syscall.SIGKILL)).To(Succeed())
}

// restartIfKilled starts a process of the stack again unless it runs, so that a spec failing
// between killStackProcess and startStackProcess leaves the stack whole for the next.
func restartIfKilled(name string) {
	GinkgoHelper()
	if syscall.Kill(stackPID(name), 0) != nil {
		startStackProcess(name)
	}
}

// startStackProcess has hack/local-up.sh start a process of the stack (gitops-apiserver or
// agent) again.
func startStackProcess(name string) {
	GinkgoHelper()
	// Starting it truncates its log: what the earlier process wrote goes on in NAME.earlier.log,
	// which hack/e2e.sh keeps with the other logs when the suite fails.
	logs := filepath.Join(stackDir, "logs")
	if earlier, err := os.ReadFile(filepath.Join(logs, name+".log")); err == nil {
		f, err := os.OpenFile(filepath.Join(logs, name+".earlier.log"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		Expect(err).NotTo(HaveOccurred())
		_, err = f.Write(earlier)
		Expect(errors.Join(err, f.Close())).NotTo(HaveOccurred())
	}
	restart := exec.Command("../../hack/local-up.sh", "start-"+name)
	restart.Stdout, restart.Stderr = GinkgoWriter, GinkgoWriter
	Expect(restart.Run()).To(Succeed())
}

// bindClusterRole binds users to the ClusterRole role in ns.
func bindClusterRole(ctx context.Context, ns, role string, users ...string) {
	GinkgoHelper()
	for _, user := range users {
		_, err := kube.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: user + "-" + role},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
	}
}

// grantEverythingOnGitOps gives user every verb on every resource of managed-gitops.redhat.com
// in ns (a Role with resources: ["*"]), the broadest grant a namespace admin can make.
func grantEverythingOnGitOps(ctx context.Context, ns, user string) {
	GinkgoHelper()
	_, err := kube.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "everything"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"managed-gitops.redhat.com"}, Resources: []string{"*"}, Verbs: []string{"*"}}}},
		metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	_, err = kube.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user + "-everything"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "everything"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
}

// waitCanI waits until the host cluster's RBAC lets user do verb on resource in ns.
func waitCanI(user, verb, resource, ns string) {
	GinkgoHelper()
	Eventually(func() string {
		out, _, _ := run("admin", "", "auth", "can-i", verb, resource, "-n", ns, "--as", user)
		return strings.TrimSpace(out)
	}).WithTimeout(30*time.Second).Should(Equal("yes"), "%s may %s %s in %s", user, verb, resource, ns)
}

// configMapValue reads the key "value" of ConfigMap name in ns, where the specs' manifests put
// the version deployed.
func configMapValue(ctx context.Context, ns, name string) (string, error) {
	cm, err := kube.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	return cm.Data["value"], nil
}

// hardRefresh asks Argo CD to look at the repository of deployment's Application again, as a
// Git webhook would. It goes to Argo CD, not through the agent; a normal refresh may resolve the
// branch from the repo-server's cache of ls-remote (kept 3 minutes) and find the old commit.
func hardRefresh(g Gomega, ctx context.Context, ns, deployment string) {
	d, err := gitops.ManagedGitopsV1alpha1().GitOpsDeployments(ns).Get(ctx, deployment, metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = argoclient.NewForConfigOrDie(adminConfig).ArgoprojV1alpha1().Applications(argoNamespace).Patch(ctx,
		"gitopsdepl-"+string(d.UID), types.MergePatchType,
		[]byte(`{"metadata":{"annotations":{"argocd.argoproj.io/refresh":"hard"}}}`), metav1.PatchOptions{})
	g.Expect(err).NotTo(HaveOccurred())
}
