package namespaceprovisioner

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	kubeinformers "k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/record"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/controllertest"
	"github.com/gitops-service/gitops-service/pkg/controller/framework"
	"github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned/fake"
	"github.com/gitops-service/gitops-service/pkg/generated/informers/externalversions"
)

// testCA is a PEM certificate, as New requires one.
func testCA(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

type fixture struct {
	t      *testing.T
	ctx    context.Context
	gitops *fake.Clientset
	kube   *kubefake.Clientset
	events *record.FakeRecorder
	gf     externalversions.SharedInformerFactory
	kf     kubeinformers.SharedInformerFactory
	sf     kubeinformers.SharedInformerFactory // Secrets of the managed-environment type
	c      *Controller
	clock  time.Time
	ca     []byte
	// tokens counts the TokenRequests; each token is "token-<n>".
	tokens atomic.Int32
}

func newFixture(t *testing.T, objs ...runtime.Object) *fixture {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	f := &fixture{t: t, ctx: ctx, gitops: fake.NewSimpleClientset(objs...), kube: kubefake.NewSimpleClientset(),
		events: record.NewFakeRecorder(100), clock: now, ca: testCA(t)}
	f.kube.PrependReactor("create", "serviceaccounts", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "token" {
			return false, nil, nil
		}
		req := a.(clienttesting.CreateAction).GetObject().(*authenticationv1.TokenRequest)
		n := f.tokens.Add(1)
		out := req.DeepCopy()
		out.Status = authenticationv1.TokenRequestStatus{
			Token:               fmt.Sprintf("token-%d", n),
			ExpirationTimestamp: metav1.NewTime(f.clock.Add(time.Duration(*req.Spec.ExpirationSeconds) * time.Second)),
		}
		return true, out, nil
	})
	// The fake clientset gives no UIDs; the server does, and the namespace records its target's.
	f.gitops.PrependReactor("create", "deploymenttargets", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if t, ok := a.(clienttesting.CreateAction).GetObject().(*targetT); ok && t.UID == "" {
			t.UID = types.UID("uid-of-" + t.Name)
		}
		return false, nil, nil
	})
	f.gf = externalversions.NewSharedInformerFactory(f.gitops, 0)
	f.kf = kubeinformers.NewSharedInformerFactory(f.kube, 0)
	// The agent's Secret informer holds the managed-environment type only.
	controllertest.SelectSecretsByType(f.kube)
	f.sf = kubeinformers.NewSharedInformerFactoryWithOptions(f.kube, 0, kubeinformers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("type", string(managedv1alpha1.ManagedEnvironmentSecretType)).String()
	}))
	appstudio := f.gf.AppStudio().V1alpha1()
	var err error
	f.c, err = New(appstudio.DeploymentTargetClaims(), appstudio.DeploymentTargets(), appstudio.DeploymentTargetClasses(),
		f.kf.Core().V1().Namespaces(), framework.SecretInformer(f.sf.Core().V1().Secrets()), f.gitops, f.kube, f.events, server, f.ca)
	if err != nil {
		t.Fatal(err)
	}
	f.c.now = func() time.Time { return f.clock }
	controllertest.StartInformers(t, ctx, f.gf, f.kf, f.sf)
	return f
}

func (f *fixture) key() string { return ns + "/" + unitTarget }

func (f *fixture) sync() error { return f.c.sync(f.ctx, f.key()) }

func (f *fixture) mustSync() {
	f.t.Helper()
	if err := f.sync(); err != nil {
		f.t.Fatalf("sync: %v", err)
	}
}

func (f *fixture) target() *targetT {
	t, err := f.gitops.AppStudioV1alpha1().DeploymentTargets(ns).Get(f.ctx, unitTarget, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		f.t.Fatal(err)
	}
	return t
}

func (f *fixture) claim() *claimT {
	c, err := f.gitops.AppStudioV1alpha1().DeploymentTargetClaims(ns).Get(f.ctx, "preview", metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		f.t.Fatal(err)
	}
	return c
}

func (f *fixture) secret() *corev1.Secret {
	s, err := f.kube.CoreV1().Secrets(ns).Get(f.ctx, SecretName(unitTarget), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		f.t.Fatal(err)
	}
	return s
}

func (f *fixture) namespace() *corev1.Namespace {
	n, err := f.kube.CoreV1().Namespaces().Get(f.ctx, unitNS, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		f.t.Fatal(err)
	}
	return n
}

// settle waits until the caches hold what the server holds.
func (f *fixture) settle() {
	f.t.Helper()
	controllertest.Eventually(f.t, f.ctx, "the caches", func() bool {
		t := f.target()
		ct, err := f.c.targets.DeploymentTargets(ns).Get(unitTarget)
		if (t == nil) != apierrors.IsNotFound(err) || (t != nil && !apiequality.Semantic.DeepEqual(t, ct)) {
			return false
		}
		c := f.claim()
		cc, err := f.c.claims.DeploymentTargetClaims(ns).Get("preview")
		if (c == nil) != apierrors.IsNotFound(err) || (c != nil && !apiequality.Semantic.DeepEqual(c, cc)) {
			return false
		}
		s := f.secret()
		cs, err := f.c.secrets.Secrets(ns).Get(SecretName(unitTarget))
		if (s == nil) != apierrors.IsNotFound(err) || (s != nil && !apiequality.Semantic.DeepEqual(s, cs)) {
			return false
		}
		n := f.namespace()
		cn, err := f.c.namespaces.Get(unitNS)
		return (n == nil) == apierrors.IsNotFound(err) && (n == nil || apiequality.Semantic.DeepEqual(n, cn))
	})
}

// writes are the kube and gitops writes since the marks.
func writes(actions []clienttesting.Action) []string {
	var out []string
	for _, a := range actions {
		switch a.GetVerb() {
		case "get", "list", "watch":
			continue
		}
		r := a.GetResource().Resource
		if s := a.GetSubresource(); s != "" {
			r += "/" + s
		}
		out = append(out, a.GetVerb()+" "+r)
	}
	return out
}

func (f *fixture) marks() (int, int) { return len(f.kube.Actions()), len(f.gitops.Actions()) }

func (f *fixture) writesSince(k, g int) string {
	return strings.Join(append(writes(f.kube.Actions()[k:]), writes(f.gitops.Actions()[g:])...), ", ")
}

func (f *fixture) expectEvents(want ...string) {
	f.t.Helper()
	controllertest.ExpectEvents(f.t, f.events, want...)
}

// provision runs the first sync of a claim of class and checks it.
func (f *fixture) provision() {
	f.t.Helper()
	f.mustSync()
	f.settle()
	f.expectEvents(fmt.Sprintf("Normal Provisioned Provisioned DeploymentTarget %s with namespace %s, ServiceAccount deployer and Secret %s",
		unitTarget, unitNS, SecretName(unitTarget)))
	// The next sync records the target's UID, which the server gave it, on the namespace.
	k, g := f.marks()
	f.mustSync()
	f.settle()
	if w := f.writesSince(k, g); w != "update namespaces" {
		f.t.Fatalf("the sync after provisioning wrote %q, want the namespace's record of its target", w)
	}
	if uid := f.namespace().Annotations[AnnTargetUID]; uid == "" || uid != string(f.target().UID) {
		f.t.Fatalf("the namespace names target %q, the target is %q", uid, f.target().UID)
	}
}

func TestProvisionEndToEnd(t *testing.T) {
	class := newClass("Delete", `{"resourceQuota": {"requests.cpu": "2"}, "containerLimits": {"default": {"memory": "256Mi"}}, "tokenExpiration": "1h"}`)
	f := newFixture(t, class, newClaim())
	f.provision()

	n := f.namespace()
	if n == nil || n.Labels[LabelClaimNamespace] != ns || n.Labels[LabelClaimName] != "preview" || n.Labels[LabelClaimUID] != "claim-uid" ||
		n.Labels[LabelTarget] != unitTarget {
		t.Fatalf("namespace %+v", n)
	}
	if _, err := f.kube.CoreV1().ServiceAccounts(unitNS).Get(f.ctx, ServiceAccountName, metav1.GetOptions{}); err != nil {
		t.Errorf("ServiceAccount: %v", err)
	}
	rb, err := f.kube.RbacV1().RoleBindings(unitNS).Get(f.ctx, RoleBindingName, metav1.GetOptions{})
	if err != nil || rb.RoleRef.Name != "edit" || rb.RoleRef.Kind != "ClusterRole" || rb.Subjects[0].Name != ServiceAccountName {
		t.Errorf("RoleBinding %+v %v", rb, err)
	}
	q, err := f.kube.CoreV1().ResourceQuotas(unitNS).Get(f.ctx, ResourceQuotaName, metav1.GetOptions{})
	if err != nil || !q.Spec.Hard.Cpu().IsZero() || !q.Spec.Hard.Name("requests.cpu", resource.DecimalSI).Equal(resource.MustParse("2")) {
		t.Errorf("ResourceQuota %+v %v", q, err)
	}
	lr, err := f.kube.CoreV1().LimitRanges(unitNS).Get(f.ctx, LimitRangeName, metav1.GetOptions{})
	if err != nil || !lr.Spec.Limits[0].Default.Memory().Equal(resource.MustParse("256Mi")) {
		t.Errorf("LimitRange %+v %v", lr, err)
	}
	if n.Labels[LabelPodSecurityEnforce] != "restricted" {
		t.Errorf("namespace labels %v", n.Labels)
	}
	np, err := f.kube.NetworkingV1().NetworkPolicies(unitNS).Get(f.ctx, NetworkPolicyName, metav1.GetOptions{})
	if err != nil || len(np.Spec.PolicyTypes) != 1 || len(np.Spec.Ingress) != 1 {
		t.Errorf("NetworkPolicy %+v %v", np, err)
	}

	s := f.secret()
	if s == nil || s.Type != managedv1alpha1.ManagedEnvironmentSecretType {
		t.Fatalf("Secret %+v", s)
	}
	kc, err := clientcmd.Load(s.Data["kubeconfig"])
	if err != nil {
		t.Fatal(err)
	}
	ctx := kc.Contexts[kc.CurrentContext]
	cl, user := kc.Clusters[ctx.Cluster], kc.AuthInfos[ctx.AuthInfo]
	if cl.Server != server || string(cl.CertificateAuthorityData) != string(f.ca) || cl.InsecureSkipTLSVerify || ctx.Namespace != unitNS || user.Token != "token-1" {
		t.Errorf("kubeconfig %+v %+v %+v", cl, ctx, user)
	}
	if got := s.Annotations[annTokenExpires]; got != now.Add(time.Hour).Format(time.RFC3339) {
		t.Errorf("token expires %q", got)
	}

	d := f.target()
	if d == nil || d.Status.Phase != appstudiov1alpha1.DeploymentTargetPhaseAvailable || d.Spec.ClaimRef != "preview" ||
		d.Spec.DeploymentTargetClassName != className || d.Spec.KubernetesClusterCredentials.DefaultNamespace != unitNS ||
		d.Spec.KubernetesClusterCredentials.APIURL != server || d.Spec.KubernetesClusterCredentials.ClusterCredentialsSecret != s.Name ||
		d.Spec.KubernetesClusterCredentials.AllowInsecureSkipTLSVerify ||
		d.Annotations[appstudiov1alpha1.AnnDynamicallyProvisioned] != string(ProvisionerName) || !slices.Contains(d.Finalizers, Finalizer) {
		t.Fatalf("target %+v %+v %+v", d.ObjectMeta, d.Spec, d.Status)
	}
	c := meta.FindStatusCondition(f.claim().Status.Conditions, ConditionProvisioned)
	if c == nil || c.Status != metav1.ConditionTrue || c.Reason != ReasonProvisioned {
		t.Errorf("claim condition %+v", c)
	}

	// Again: nothing to write.
	k, g := f.marks()
	f.mustSync()
	if w := f.writesSince(k, g); w != "" {
		t.Errorf("a provisioned unit's sync wrote: %s", w)
	}
	f.expectEvents()

	// The binder binds it; the provisioner leaves claimRef and phase alone.
	bound := f.target()
	bound.Status.Phase = appstudiov1alpha1.DeploymentTargetPhaseBound
	if _, err := f.gitops.AppStudioV1alpha1().DeploymentTargets(ns).UpdateStatus(f.ctx, bound, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.settle()
	k, g = f.marks()
	f.mustSync()
	if w := f.writesSince(k, g); w != "" {
		t.Errorf("a bound unit's sync wrote: %s", w)
	}
}

func TestCrashBetweenNamespaceAndTargetConverges(t *testing.T) {
	f := newFixture(t, newClass("Delete", ""), newClaim())
	var fail atomic.Bool
	fail.Store(true)
	f.gitops.PrependReactor("create", "deploymenttargets", func(clienttesting.Action) (bool, runtime.Object, error) {
		if fail.Load() {
			return true, nil, fmt.Errorf("connection reset")
		}
		return false, nil, nil
	})
	if err := f.sync(); err == nil {
		t.Fatal("sync succeeded")
	}
	f.settle()
	c := meta.FindStatusCondition(f.claim().Status.Conditions, ConditionProvisioned)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != ReasonProvisioningFailed || !strings.Contains(c.Message, "connection reset") {
		t.Errorf("claim condition %+v", c)
	}
	f.expectEvents("Warning ProvisioningFailed creating DeploymentTarget " + ns + "/" + unitTarget + ": connection reset")
	if f.namespace() == nil || f.secret() == nil || f.target() != nil {
		t.Fatal("want the namespace and Secret without the target")
	}

	fail.Store(false)
	k, g := f.marks()
	f.provision()
	// Only the target is made: the namespace, ServiceAccount, RoleBinding and token are found
	// again; the namespace is updated only to record the target (provision's second sync).
	if w := f.writesSince(k, g); w != "update namespaces, create deploymenttargets, update deploymenttargets/status, update deploymenttargetclaims/status" {
		t.Errorf("writes: %s", w)
	}
	if n := f.tokens.Load(); n != 1 {
		t.Errorf("%d tokens asked for", n)
	}
	if c := meta.FindStatusCondition(f.claim().Status.Conditions, ConditionProvisioned); c.Status != metav1.ConditionTrue {
		t.Errorf("claim condition %+v", c)
	}
}

func TestTokenRenewal(t *testing.T) {
	f := newFixture(t, newClass("Delete", "tokenExpiration: 10h"), newClaim())
	f.provision()

	// Before 80% of its life: kept.
	f.clock = now.Add(7 * time.Hour)
	f.mustSync()
	if n := f.tokens.Load(); n != 1 {
		t.Fatalf("%d tokens", n)
	}
	// At 80%: renewed, in the same Secret.
	f.clock = now.Add(8 * time.Hour)
	k, g := f.marks()
	f.mustSync()
	if w := f.writesSince(k, g); w != "create serviceaccounts/token, update secrets" {
		t.Errorf("writes: %s", w)
	}
	s := f.secret()
	kc, err := clientcmd.Load(s.Data["kubeconfig"])
	if err != nil {
		t.Fatal(err)
	}
	if kc.AuthInfos[kubeconfigName].Token != "token-2" || s.Annotations[annTokenIssued] != f.clock.Format(time.RFC3339) ||
		s.Annotations[annTokenExpires] != f.clock.Add(10*time.Hour).Format(time.RFC3339) {
		t.Errorf("Secret %v", s.Annotations)
	}
	f.expectEvents() // renewals are not news
}

func TestReclaimDelete(t *testing.T) {
	f := newFixture(t, newClass("Delete", ""), newClaim())
	f.provision()

	// The binder deletes the target of a deleted claim; the finalizer holds it.
	if err := f.gitops.AppStudioV1alpha1().DeploymentTargetClaims(ns).Delete(f.ctx, "preview", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	d := f.target()
	d.DeletionTimestamp = &metav1.Time{Time: now}
	d.Spec.ClaimRef = ""
	if _, err := f.gitops.AppStudioV1alpha1().DeploymentTargets(ns).Update(f.ctx, d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.settle()
	f.mustSync()
	if f.secret() != nil || f.namespace() != nil {
		t.Fatal("Secret and namespace remain")
	}
	if !slices.Contains(f.target().Finalizers, Finalizer) {
		t.Fatal("the finalizer went before the namespace was seen gone")
	}
	f.expectEvents(fmt.Sprintf("Normal Deprovisioning Deleting namespace %s and Secret %s of DeploymentTarget %s: reclaimPolicy Delete",
		unitNS, SecretName(unitTarget), unitTarget))

	f.settle()
	f.mustSync()
	if slices.Contains(f.target().Finalizers, Finalizer) {
		t.Error("the finalizer remains")
	}
	f.expectEvents(fmt.Sprintf("Normal Deprovisioned Deleted namespace %s and Secret %s of DeploymentTarget %s", unitNS, SecretName(unitTarget), unitTarget))
}

func TestReclaimRetain(t *testing.T) {
	f := newFixture(t, newClass("Retain", ""), newClaim())
	f.provision()
	if err := f.gitops.AppStudioV1alpha1().DeploymentTargetClaims(ns).Delete(f.ctx, "preview", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	d := f.target()
	d.DeletionTimestamp = &metav1.Time{Time: now}
	if _, err := f.gitops.AppStudioV1alpha1().DeploymentTargets(ns).Update(f.ctx, d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.settle()
	f.mustSync()
	if n, s := f.namespace(), f.secret(); n == nil || s == nil || n.Labels[LabelRetained] != "true" || s.Labels[LabelRetained] != "true" {
		t.Fatalf("namespace %+v Secret %+v", n, s)
	}
	if slices.Contains(f.target().Finalizers, Finalizer) {
		t.Error("the finalizer remains")
	}
	f.expectEvents(fmt.Sprintf("Normal Retained Kept namespace %s and Secret %s of DeploymentTarget %s: reclaimPolicy Retain",
		unitNS, SecretName(unitTarget), unitTarget))

	// The target gone, the retained namespace and Secret are left alone.
	if err := f.gitops.AppStudioV1alpha1().DeploymentTargets(ns).Delete(f.ctx, unitTarget, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.settle()
	k, g := f.marks()
	f.mustSync()
	if w := f.writesSince(k, g); w != "" {
		t.Errorf("writes: %s", w)
	}
}

func TestOrphanOfAStoppedProvisioningIsDeleted(t *testing.T) {
	f := newFixture(t, newClass("Delete", ""), newClaim())
	fail := true
	f.gitops.PrependReactor("create", "deploymenttargets", func(clienttesting.Action) (bool, runtime.Object, error) {
		return fail, nil, fmt.Errorf("connection reset")
	})
	_ = f.sync()
	fail = false
	if err := f.gitops.AppStudioV1alpha1().DeploymentTargetClaims(ns).Delete(f.ctx, "preview", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.settle()
	f.mustSync()
	if f.namespace() != nil || f.secret() != nil || f.target() != nil {
		t.Error("the orphans remain")
	}
}

func TestTTLDeletesTheClaim(t *testing.T) {
	f := newFixture(t, newClass("Delete", "ttl: 2h"), newClaim())
	f.provision()
	// The fake sets no creationTimestamp; the kube-apiserver does.
	d := f.target()
	d.CreationTimestamp = metav1.NewTime(now)
	if _, err := f.gitops.AppStudioV1alpha1().DeploymentTargets(ns).Update(f.ctx, d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.settle()
	f.mustSync()
	if f.claim() == nil {
		t.Fatal("deleted before its time")
	}
	if got := f.target().Annotations[AnnExpires]; got != now.Add(2*time.Hour).Format(time.RFC3339) {
		t.Errorf("expires annotation %q", got)
	}
	f.settle()
	f.clock = now.Add(2 * time.Hour)
	f.mustSync()
	if f.claim() != nil {
		t.Error("the claim remains")
	}
	controllertest.Eventually(t, f.ctx, "the Expired event", func() bool {
		select {
		case e := <-f.events.Events:
			return strings.HasPrefix(e, "Normal Expired Deleting the claim: its DeploymentTargetClass namespace gives it a ttl of 2h0m0s")
		default:
			return false
		}
	})
}

func TestNewRequiresHTTPSAndACA(t *testing.T) {
	ca := testCA(t)
	for _, tc := range []struct {
		server string
		ca     []byte
		ok     bool
	}{
		{server, ca, true},
		{"http://api.example.com", ca, false},
		{"api.example.com:6443", ca, false},
		{server, nil, false},
		{server, []byte("not pem"), false},
	} {
		if err := validateServer(tc.server, tc.ca); (err == nil) != tc.ok {
			t.Errorf("%s %q: %v", tc.server, tc.ca, err)
		}
	}
}

// TestForeignSecretIsReported: an Opaque Secret of the kubeconfig's name, which the cache (of
// managed-environment Secrets) never shows, is reported on the claim, not waited for, and no
// token is minted for it.
func TestForeignSecretIsReported(t *testing.T) {
	f := newFixture(t, newClass("Delete", ""), newClaim())
	if _, err := f.kube.CoreV1().Secrets(ns).Create(f.ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: SecretName(unitTarget), Namespace: ns}, Type: corev1.SecretTypeOpaque,
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := f.sync(); err == nil {
		t.Fatal("sync succeeded")
	}
	c := meta.FindStatusCondition(f.claim().Status.Conditions, ConditionProvisioned)
	if c == nil || c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, "was not made by "+string(ProvisionerName)) {
		t.Errorf("claim condition %+v", c)
	}
	if n := f.tokens.Load(); n != 0 {
		t.Errorf("%d tokens asked for", n)
	}
}
