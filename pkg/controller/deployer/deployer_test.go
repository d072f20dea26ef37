package deployer

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sort"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	kubefake "k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	rbaclisters "k8s.io/client-go/listers/rbac/v1"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"github.com/gitops-service/gitops-service/pkg/controller/argocd"
)

// deployerFixture is a Deployers with a fake clientset holding objs, and deployer listers over
// indexers the test fills (as the labelled informers would).
type deployerFixture struct {
	d            *Deployers
	kube         *kubefake.Clientset
	sas, rbs     cache.Indexer
	ctx          context.Context
	wantLabels   map[string]string
	deployerSubj rbacv1.Subject
	controller   rbacv1.Subject
}

func newDeployerFixture(t *testing.T, objs ...runtime.Object) *deployerFixture {
	t.Helper()
	f := &deployerFixture{
		kube:         kubefake.NewClientset(objs...),
		sas:          cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}),
		rbs:          cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}),
		ctx:          context.Background(),
		wantLabels:   map[string]string{LabelDeployer: "true", argocd.LabelTenantNamespace: "jane"},
		deployerSubj: rbacv1.Subject{Kind: "ServiceAccount", Name: "gitops-deployer", Namespace: "jane"},
		controller:   rbacv1.Subject{Kind: "ServiceAccount", Name: "argocd-application-controller", Namespace: "argocd"},
	}
	f.d = &Deployers{
		kube: f.kube, argoKube: f.kube, argoNamespace: "argocd", controllerServiceAccount: DefaultControllerServiceAccount,
		serviceAccounts: corelisters.NewServiceAccountLister(f.sas),
		roleBindings:    rbaclisters.NewRoleBindingLister(f.rbs),
	}
	return f
}

// syncCache makes the listers show what the fake server holds in namespace, as the
// informers would once they caught up.
func (f *deployerFixture) syncCache(t *testing.T, namespace string) {
	t.Helper()
	sas, err := f.kube.CoreV1().ServiceAccounts(namespace).List(f.ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rbs, err := f.kube.RbacV1().RoleBindings(namespace).List(f.ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var sasObjs, rbsObjs []interface{}
	for i := range sas.Items {
		sasObjs = append(sasObjs, &sas.Items[i])
	}
	for i := range rbs.Items {
		rbsObjs = append(rbsObjs, &rbs.Items[i])
	}
	if err := f.sas.Replace(sasObjs, ""); err != nil {
		t.Fatal(err)
	}
	if err := f.rbs.Replace(rbsObjs, ""); err != nil {
		t.Fatal(err)
	}
	f.kube.ClearActions()
}

func (f *deployerFixture) wantBinding(t *testing.T, name, role string, subject rbacv1.Subject) {
	t.Helper()
	rb, err := f.kube.RbacV1().RoleBindings("jane").Get(f.ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("RoleBinding %s: %v", name, err)
	}
	if want := (rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role}); rb.RoleRef != want {
		t.Errorf("RoleBinding %s roleRef = %+v, want %+v", name, rb.RoleRef, want)
	}
	if len(rb.Subjects) != 1 || rb.Subjects[0] != subject {
		t.Errorf("RoleBinding %s subjects = %+v, want only %+v", name, rb.Subjects, subject)
	}
	if !maps.Equal(rb.Labels, f.wantLabels) {
		t.Errorf("RoleBinding %s labels = %v, want %v", name, rb.Labels, f.wantLabels)
	}
}

func TestEnsureDeployerCreates(t *testing.T) {
	f := newDeployerFixture(t)
	if err := f.d.Ensure(f.ctx, "jane"); err != nil {
		t.Fatal(err)
	}
	var applied []string
	for _, act := range f.kube.Actions() {
		p, ok := act.(clienttesting.PatchAction)
		if !ok || p.GetPatchType() != types.ApplyPatchType {
			t.Errorf("unexpected request %v: the deployer is written by server-side apply alone", act)
			continue
		}
		opts := act.(clienttesting.PatchActionImpl).PatchOptions
		if opts.FieldManager != fieldManager || opts.Force == nil || !*opts.Force {
			t.Errorf("apply of %s %s with options %+v, want field manager %s, forced", p.GetResource().Resource, p.GetName(), opts, fieldManager)
		}
		applied = append(applied, p.GetResource().Resource+"/"+p.GetName())
	}
	sort.Strings(applied)
	if want := []string{"rolebindings/gitops-service-deployer", "rolebindings/gitops-service-deployer-impersonator", "serviceaccounts/gitops-deployer"}; !slices.Equal(applied, want) {
		t.Errorf("applied %v, want %v", applied, want)
	}

	sa, err := f.kube.CoreV1().ServiceAccounts("jane").Get(f.ctx, DeployerName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sa.AutomountServiceAccountToken == nil || *sa.AutomountServiceAccountToken {
		t.Errorf("automountServiceAccountToken = %v, want false", sa.AutomountServiceAccountToken)
	}
	if !maps.Equal(sa.Labels, f.wantLabels) {
		t.Errorf("ServiceAccount labels = %v, want %v", sa.Labels, f.wantLabels)
	}
	f.wantBinding(t, "gitops-service-deployer", "gitops-service-deployer", f.deployerSubj)
	f.wantBinding(t, "gitops-service-deployer-impersonator", "gitops-service-deployer-impersonator", f.controller)
	if rbs, _ := f.kube.RbacV1().RoleBindings("jane").List(f.ctx, metav1.ListOptions{}); len(rbs.Items) != 2 {
		t.Errorf("RoleBindings = %d, want 2", len(rbs.Items))
	}

	// What was applied is what Ready expects: the next reconcile costs nothing.
	f.syncCache(t, "jane")
	if !f.d.Ready("jane") {
		t.Fatal("the deployer just applied is not ready")
	}
	if err := f.d.Ensure(f.ctx, "jane"); err != nil {
		t.Fatal(err)
	}
	if acts := f.kube.Actions(); len(acts) != 0 {
		t.Errorf("Ensure on a ready deployer made requests: %v", acts)
	}
}

func TestEnsureDeployerRepairs(t *testing.T) {
	// Someone pointed the deployer's binding at themselves and gave it another role.
	tampered := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: deployerRole, Namespace: "jane", Labels: map[string]string{LabelDeployer: "true"}},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: deployerRole},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "gitops-deployer", Namespace: "jane"},
			{Kind: "User", APIGroup: rbacv1.GroupName, Name: "mallory"}},
	}
	f := newDeployerFixture(t, tampered)
	if err := f.d.Ensure(f.ctx, "jane"); err != nil {
		t.Fatal(err)
	}
	f.wantBinding(t, "gitops-service-deployer", "gitops-service-deployer", f.deployerSubj)
	f.syncCache(t, "jane")
	if !f.d.Ready("jane") {
		t.Error("the repaired deployer is not ready")
	}
}

func TestDeployerReady(t *testing.T) {
	f := newDeployerFixture(t)
	if err := f.d.Ensure(f.ctx, "jane"); err != nil {
		t.Fatal(err)
	}
	f.syncCache(t, "jane")
	good := map[string]*rbacv1.RoleBinding{}
	for _, name := range []string{deployerRole, impersonatorRole} {
		obj, _, _ := f.rbs.GetByKey("jane/" + name)
		good[name] = obj.(*rbacv1.RoleBinding)
	}
	sa, _, _ := f.sas.GetByKey("jane/" + DeployerName)

	for _, tc := range []struct {
		name   string
		mutate func(t *testing.T)
		want   bool
	}{
		{name: "as applied", want: true, mutate: func(*testing.T) {}},
		{name: "no ServiceAccount", mutate: func(t *testing.T) { must(t, f.sas.Delete(sa)) }},
		{name: "no deployer binding", mutate: func(t *testing.T) { must(t, f.rbs.Delete(good[deployerRole])) }},
		{name: "no impersonator binding", mutate: func(t *testing.T) { must(t, f.rbs.Delete(good[impersonatorRole])) }},
		{name: "deployer subject changed", mutate: func(t *testing.T) {
			rb := good[deployerRole].DeepCopy()
			rb.Subjects[0].Name = "someone-else"
			must(t, f.rbs.Update(rb))
		}},
		{name: "deployer subject in another namespace", mutate: func(t *testing.T) {
			rb := good[deployerRole].DeepCopy()
			rb.Subjects[0].Namespace = "other"
			must(t, f.rbs.Update(rb))
		}},
		{name: "impersonator subject changed", mutate: func(t *testing.T) {
			rb := good[impersonatorRole].DeepCopy()
			rb.Subjects[0] = rbacv1.Subject{Kind: "Group", APIGroup: rbacv1.GroupName, Name: "system:authenticated"}
			must(t, f.rbs.Update(rb))
		}},
		{name: "subject added", mutate: func(t *testing.T) {
			rb := good[deployerRole].DeepCopy()
			rb.Subjects = append(rb.Subjects, rbacv1.Subject{Kind: "User", APIGroup: rbacv1.GroupName, Name: "mallory"})
			must(t, f.rbs.Update(rb))
		}},
		{name: "role changed", mutate: func(t *testing.T) {
			rb := good[deployerRole].DeepCopy()
			rb.RoleRef.Name = "admin"
			must(t, f.rbs.Update(rb))
		}},
		{name: "another application-controller", mutate: func(*testing.T) { f.d.controllerServiceAccount = "other-controller" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f.syncCache(t, "jane")
			f.d.controllerServiceAccount = DefaultControllerServiceAccount
			tc.mutate(t)
			if got := f.d.Ready("jane"); got != tc.want {
				t.Errorf("Ready = %v, want %v", got, tc.want)
			}
			if got := f.d.Ready("other"); got {
				t.Error("another namespace's deployer is ready")
			}
		})
	}
}

func TestRemoveDeployer(t *testing.T) {
	f := newDeployerFixture(t, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "unrelated", Namespace: "jane"}})
	if err := f.d.Ensure(f.ctx, "jane"); err != nil {
		t.Fatal(err)
	}
	f.syncCache(t, "jane")
	if !f.d.Exists("jane") {
		t.Fatal("Exists is false with the deployer in place")
	}
	if err := f.d.Remove(f.ctx, "jane"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.kube.CoreV1().ServiceAccounts("jane").Get(f.ctx, DeployerName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("ServiceAccount still there: %v", err)
	}
	if _, err := f.kube.CoreV1().ServiceAccounts("jane").Get(f.ctx, "unrelated", metav1.GetOptions{}); err != nil {
		t.Errorf("another ServiceAccount went too: %v", err)
	}
	if rbs, _ := f.kube.RbacV1().RoleBindings("jane").List(f.ctx, metav1.ListOptions{}); len(rbs.Items) != 0 {
		t.Errorf("RoleBindings left: %+v", rbs.Items)
	}
	f.syncCache(t, "jane")
	if f.d.Exists("jane") {
		t.Error("Exists is true once the deployer is gone")
	}

	// Nothing left: every delete is still issued, and a 404 is not an error.
	if err := f.d.Remove(f.ctx, "jane"); err != nil {
		t.Fatalf("removing a missing deployer: %v", err)
	}
	var deleted []string
	for _, act := range f.kube.Actions() {
		if act.GetVerb() == "delete" {
			deleted = append(deleted, act.GetResource().Resource+"/"+act.(clienttesting.DeleteAction).GetName())
		}
	}
	sort.Strings(deleted)
	if want := []string{"rolebindings/gitops-service-deployer", "rolebindings/gitops-service-deployer-impersonator", "serviceaccounts/gitops-deployer"}; !slices.Equal(deleted, want) {
		t.Errorf("deleted %v, want %v", deleted, want)
	}

	// Any other failure is reported.
	f.kube.PrependReactor("delete", "rolebindings", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(rbacv1.Resource("rolebindings"), "x", nil)
	})
	if err := f.d.Remove(f.ctx, "jane"); !apierrors.IsForbidden(err) {
		t.Errorf("Remove with a forbidden delete = %v, want the error", err)
	}
}

func TestDeployerExists(t *testing.T) {
	for _, tc := range []struct {
		name string
		objs []interface{}
		want bool
	}{
		{name: "nothing"},
		{name: "ServiceAccount only", want: true,
			objs: []interface{}{&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: DeployerName, Namespace: "jane"}}}},
		{name: "a binding only", want: true,
			objs: []interface{}{&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: impersonatorRole, Namespace: "jane"}}}},
		{name: "another namespace's",
			objs: []interface{}{&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: DeployerName, Namespace: "other"}},
				&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: deployerRole, Namespace: "other"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newDeployerFixture(t)
			for _, o := range tc.objs {
				idx := f.sas
				if _, ok := o.(*rbacv1.RoleBinding); ok {
					idx = f.rbs
				}
				must(t, idx.Add(o))
			}
			if got := f.d.Exists("jane"); got != tc.want {
				t.Errorf("Exists = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestDeployerIdentity(t *testing.T) {
	// Argo CD prefixes "system:serviceaccount:" to a "namespace:name" defaultServiceAccount.
	if got := Identity("jane"); got != "jane:gitops-deployer" {
		t.Errorf("Identity = %q", got)
	}
}

func testSecretLister(t *testing.T, secrets ...*corev1.Secret) corelisters.SecretLister {
	t.Helper()
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, s := range secrets {
		if err := idx.Add(s); err != nil {
			t.Fatal(err)
		}
	}
	return corelisters.NewSecretLister(idx)
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// In a namespace being deleted the apply is refused; the GitOpsDeployment controller's
// syncProject (pkg/controller/gitopsdeployment) tells that apart from a failure
// (apierrors.HasStatusCause), which Ensure's wrapping must keep visible.
func TestEnsureDeployerInTerminatingNamespace(t *testing.T) {
	f := newDeployerFixture(t)
	f.kube.PrependReactor("patch", "*", func(clienttesting.Action) (bool, runtime.Object, error) {
		err := apierrors.NewForbidden(corev1.Resource("serviceaccounts"), DeployerName, errors.New("namespace jane is being terminated"))
		err.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause, Field: "jane"}}
		return true, nil, err
	})
	err := f.d.Ensure(f.ctx, "jane")
	if err == nil || !apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
		t.Errorf("Ensure = %v, want an error with the NamespaceTerminating cause", err)
	}
}

// An earlier agent's cluster Secret for a namespace's deployer holds a token with admin rights
// there: it goes; anything else of that name, or another namespace's, stays.
func TestRemoveLegacyDeployer(t *testing.T) {
	legacy := func(name, tenant string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "argocd",
			Labels: map[string]string{argocd.LabelTenantNamespace: tenant}}}
	}
	for _, tc := range []struct {
		name       string
		secret     *corev1.Secret
		wantDelete bool
	}{
		{name: "the namespace's legacy cluster Secret", secret: legacy("gitops-local-jane", "jane"), wantDelete: true},
		{name: "same name, another tenant's label", secret: legacy("gitops-local-jane", "john")},
		{name: "another namespace's", secret: legacy("gitops-local-john", "john")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newDeployerFixture(t, tc.secret)
			f.d.argoSecrets = testSecretLister(t, tc.secret)
			must(t, f.d.RemoveLegacy(f.ctx, "jane"))
			_, err := f.kube.CoreV1().Secrets("argocd").Get(f.ctx, tc.secret.Name, metav1.GetOptions{})
			if deleted := apierrors.IsNotFound(err); deleted != tc.wantDelete {
				t.Errorf("deleted = %v, want %v (err %v)", deleted, tc.wantDelete, err)
			}
		})
	}
}
