package deploymenttargetclass

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/structured-merge-diff/v4/fieldpath"

	"github.com/gitops-service/gitops-service/pkg/apis/apitesting"
	"github.com/gitops-service/gitops-service/pkg/apis/appstudio"
	"github.com/gitops-service/gitops-service/pkg/apis/appstudio/install"
	"github.com/gitops-service/gitops-service/pkg/registry/registrytest"
	"github.com/gitops-service/gitops-service/pkg/registry/strategy"
)

var scheme = func() *runtime.Scheme { s := runtime.NewScheme(); install.Install(s); return s }()

// newStrategy is built as the storage builds it; the kind has no /status.
func newStrategy() strategy.Strategy {
	k := kind(scheme)
	return strategy.New(&k)
}

// testKind is what the shared table runners need to know of the kind. It has no
// status, so the runners leave status alone and /status is never asked for.
var testKind = registrytest.Kind[object, struct{}]{
	Stored: stored,
	Kind:   func() strategy.Kind { return kind(scheme) },
}

// stored is a valid DeploymentTargetClass as stored, at generation 3. It is cluster-scoped.
func stored() *appstudio.DeploymentTargetClass {
	return &appstudio.DeploymentTargetClass{
		ObjectMeta: metav1.ObjectMeta{Name: "isolation-level-namespace", ResourceVersion: "1", Generation: 3,
			Labels: map[string]string{"team": "a"}},
		Spec: appstudio.DeploymentTargetClassSpec{
			Provisioner:   appstudio.ProvisionerDevSandbox,
			ReclaimPolicy: appstudio.ReclaimPolicyDelete,
		},
	}
}

func TestKind(t *testing.T) {
	s := newStrategy()
	cases := []struct {
		name      string
		got, want bool
	}{
		// Classes are shared by every namespace, like StorageClasses.
		{"cluster-scoped", s.NamespaceScoped(), false},
		{"no status", s.HasStatus(), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Errorf("got %v, want %v", tc.got, tc.want)
			}
		})
	}
}

func TestPrepareForCreate(t *testing.T) {
	cases := []registrytest.Mutation[*appstudio.DeploymentTargetClass]{
		{Name: "no generation sent", Mutate: func(c *appstudio.DeploymentTargetClass) { c.Generation = 0 }},
		{Name: "generation sent", Mutate: func(c *appstudio.DeploymentTargetClass) { c.Generation = 9 }},
	}
	registrytest.RunPrepareForCreate(t, testKind, cases)
}

func TestPrepareForUpdate(t *testing.T) {
	cases := []registrytest.GenerationCase[*appstudio.DeploymentTargetClass]{
		{Name: "unchanged", Mutate: func(*appstudio.DeploymentTargetClass) {}, Want: 3},
		{Name: "label added", Mutate: func(c *appstudio.DeploymentTargetClass) { c.Labels["tier"] = "gold" }, Want: 3},
		{Name: "generation sent", Mutate: func(c *appstudio.DeploymentTargetClass) { c.Generation = 1 }, Want: 3},
		{Name: "reclaim policy", Mutate: func(c *appstudio.DeploymentTargetClass) { c.Spec.ReclaimPolicy = appstudio.ReclaimPolicyRetain }, Want: 4},
		{Name: "provisioner", Mutate: func(c *appstudio.DeploymentTargetClass) { c.Spec.Provisioner = "example.com/other" }, Want: 4},
		{Name: "parameters", Mutate: namespaceClass, Want: 4},
	}
	registrytest.RunPrepareForUpdate(t, testKind, cases)
}

func TestValidate(t *testing.T) {
	cases := []registrytest.ErrorsCase[*appstudio.DeploymentTargetClass]{
		{Name: "valid", Mutate: func(*appstudio.DeploymentTargetClass) {}},
		{Name: "retain", Mutate: func(c *appstudio.DeploymentTargetClass) { c.Spec.ReclaimPolicy = appstudio.ReclaimPolicyRetain }},
		{Name: "namespaced", Mutate: func(c *appstudio.DeploymentTargetClass) { c.Namespace = "jane" }, Want: []apitesting.Want{apitesting.Forbidden("metadata.namespace")}},
		{Name: "no provisioner", Mutate: func(c *appstudio.DeploymentTargetClass) { c.Spec.Provisioner = "" }, Want: []apitesting.Want{apitesting.Required("spec.provisioner")}},
		{Name: "invalid provisioner", Mutate: func(c *appstudio.DeploymentTargetClass) { c.Spec.Provisioner = "example.com/a/b" },
			Want: []apitesting.Want{apitesting.Invalid("spec.provisioner")}},
		{Name: "unknown reclaim policy", Mutate: func(c *appstudio.DeploymentTargetClass) { c.Spec.ReclaimPolicy = "Recycle" },
			Want: []apitesting.Want{apitesting.NotSupported("spec.reclaimPolicy")}},
		// The namespace provisioner's parameters; the validation package's table has every rule.
		{Name: "namespace parameters", Mutate: namespaceClass},
		{Name: "namespace parameters of another provisioner", Mutate: func(c *appstudio.DeploymentTargetClass) {
			namespaceClass(c)
			c.Spec.Provisioner = appstudio.ProvisionerDevSandbox
		}, Want: []apitesting.Want{apitesting.Forbidden("spec.parameters.namespace")}},
		{Name: "short token expiration", Mutate: func(c *appstudio.DeploymentTargetClass) {
			namespaceClass(c)
			c.Spec.Parameters.Namespace.TokenExpiration = &metav1.Duration{Duration: time.Minute}
		}, Want: []apitesting.Want{apitesting.Invalid("spec.parameters.namespace.tokenExpiration")}},
		{Name: "min above max", Mutate: func(c *appstudio.DeploymentTargetClass) {
			namespaceClass(c)
			c.Spec.Parameters.Namespace.ContainerLimits.Default = nil
			c.Spec.Parameters.Namespace.ContainerLimits.Min = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}
		}, Want: []apitesting.Want{apitesting.Invalid("spec.parameters.namespace.containerLimits.min[cpu]")}},
	}
	registrytest.RunValidate(t, testKind, cases)
}

func TestValidateUpdate(t *testing.T) {
	cases := []registrytest.ErrorsCase[*appstudio.DeploymentTargetClass]{
		{Name: "unchanged", Mutate: func(*appstudio.DeploymentTargetClass) {}},
		{Name: "reclaim policy and provisioner", Mutate: func(c *appstudio.DeploymentTargetClass) {
			c.Spec.ReclaimPolicy = appstudio.ReclaimPolicyRetain
			c.Spec.Provisioner = "example.com/other"
		}},
		{Name: "no reclaim policy", Mutate: func(c *appstudio.DeploymentTargetClass) { c.Spec.ReclaimPolicy = "" },
			Want: []apitesting.Want{apitesting.Required("spec.reclaimPolicy")}},
		{Name: "renamed", Mutate: func(c *appstudio.DeploymentTargetClass) { c.Name = "other" }, Want: []apitesting.Want{apitesting.Invalid("metadata.name")}},
		{Name: "namespace parameters", Mutate: namespaceClass},
		{Name: "negative quota", Mutate: func(c *appstudio.DeploymentTargetClass) {
			namespaceClass(c)
			c.Spec.Parameters.Namespace.ResourceQuota["count/pods"] = resource.MustParse("-1")
		}, Want: []apitesting.Want{apitesting.Invalid("spec.parameters.namespace.resourceQuota[count/pods]")}},
	}
	registrytest.RunValidateUpdate(t, testKind, cases)
}

// namespaceClass makes a class one of the namespace provisioner, with parameters.
func namespaceClass(c *appstudio.DeploymentTargetClass) {
	c.Spec.Provisioner = appstudio.ProvisionerNamespace
	c.Spec.Parameters.Namespace = &appstudio.NamespaceProvisionerParameters{
		TTL:           &metav1.Duration{Duration: 168 * time.Hour},
		ResourceQuota: corev1.ResourceList{"count/pods": resource.MustParse("20")},
		ContainerLimits: &appstudio.ContainerLimits{
			Default: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")},
			Max:     corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
		},
	}
}

func TestSelectableFields(t *testing.T) {
	cases := []registrytest.FieldsCase[*appstudio.DeploymentTargetClass]{
		{Name: "full", Obj: stored(), Want: fields.Set{"spec.provisioner": "appstudio.redhat.com/devsandbox"}},
		{Name: "empty", Obj: &appstudio.DeploymentTargetClass{}, Want: fields.Set{"spec.provisioner": ""}},
	}
	registrytest.RunSelectableFields(t, selectableFields, cases)
}

func TestColumns(t *testing.T) {
	cases := []registrytest.CellsCase[*appstudio.DeploymentTargetClass]{
		{Name: "delete", Mutate: func(*appstudio.DeploymentTargetClass) {},
			Want: []interface{}{"isolation-level-namespace", "appstudio.redhat.com/devsandbox", "Delete", "<unknown>"}},
		{Name: "retain", Mutate: func(c *appstudio.DeploymentTargetClass) { c.Spec.ReclaimPolicy = appstudio.ReclaimPolicyRetain },
			Want: []interface{}{"isolation-level-namespace", "appstudio.redhat.com/devsandbox", "Retain", "<unknown>"}},
	}
	registrytest.RunColumns(t, stored, columns, cases)
}

func TestNewREST(t *testing.T) {
	r, status, err := NewREST(scheme, registrytest.NoStorage{})
	if err != nil {
		t.Fatal(err)
	}
	registrytest.CheckREST(t, r, status, registrytest.REST{
		Resource:   appstudio.Resource("deploymenttargetclasses"),
		Singular:   appstudio.Resource("deploymenttargetclass"),
		New:        "*appstudio.DeploymentTargetClass",
		NewList:    "*appstudio.DeploymentTargetClassList",
		Categories: []string{"gitops"},
		// Cluster-scoped: no metadata.namespace to select on.
		FieldSelectors: fields.Set{"metadata.name": "isolation-level-namespace", "spec.provisioner": "appstudio.redhat.com/devsandbox"},
		Columns:        []string{"Name", "Provisioner", "Reclaim Policy", "Age"},
		Sample:         stored(),
		APIVersion:     fieldpath.APIVersion("appstudio.redhat.com/v1alpha1"),
	})
}
