package validation

import (
	"fmt"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/gitops-service/gitops-service/pkg/apis/apitesting"
	"github.com/gitops-service/gitops-service/pkg/apis/appstudio"
)

// tc is a case of a table: a change to a valid object and the errors it must cause.
type tc[T any] struct {
	name   string
	mutate func(*T)
	want   []apitesting.Want
}

// run validates a mutated copy of a valid object with each table case.
func run[T any](t *testing.T, valid func() *T, validate func(*T) field.ErrorList, cases []tc[T]) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			obj := valid()
			c.mutate(obj)
			apitesting.ExpectErrors(t, validate(obj), c.want...)
		})
	}
}

// runUpdate validates the change of a valid object by each table case.
func runUpdate[T any](t *testing.T, valid func() *T, validate func(obj, old *T) field.ErrorList, cases []tc[T]) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			old := valid()
			obj := valid()
			c.mutate(obj)
			apitesting.ExpectErrors(t, validate(obj, old), c.want...)
		})
	}
}

func meta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: "jane", ResourceVersion: "1"}
}

// metaCases are the metadata rules of namespaced kinds named by DNS subdomains.
func metaCases[T any](set func(*T, metav1.ObjectMeta)) []tc[T] {
	return []tc[T]{
		{"no name", func(o *T) { set(o, metav1.ObjectMeta{Namespace: "jane"}) }, []apitesting.Want{apitesting.Required("metadata.name")}},
		{"no namespace", func(o *T) { set(o, metav1.ObjectMeta{Name: "x"}) }, []apitesting.Want{apitesting.Required("metadata.namespace")}},
		{"name not a subdomain", func(o *T) { set(o, metav1.ObjectMeta{Name: "Bad_Name", Namespace: "jane"}) }, []apitesting.Want{apitesting.Invalid("metadata.name")}},
		{"dotted name", func(o *T) { set(o, metav1.ObjectMeta{Name: "a.b", Namespace: "jane"}) }, nil},
	}
}

// nameImmutable is the metadata rule every update shares.
func nameImmutable[T any](set func(*T, string)) tc[T] {
	return tc[T]{"name is immutable", func(o *T) { set(o, "renamed") }, []apitesting.Want{apitesting.Invalid("metadata.name")}}
}

var now = metav1.Now()

// conditionCases are the status cases of metav1.Condition lists; the rules are apimachinery's,
// so these only prove that they are applied, at the right path.
func conditionCases[T any](path string, set func(*T, []metav1.Condition)) []tc[T] {
	good := metav1.Condition{Type: "ErrorOccurred", Status: metav1.ConditionFalse, Reason: "Success", LastTransitionTime: now}
	return []tc[T]{
		{path + " valid", func(o *T) {
			set(o, []metav1.Condition{good, {Type: "Reconciled", Status: metav1.ConditionTrue, Reason: "Reconciled", LastTransitionTime: now}})
		}, nil},
		{path + " repeated type", func(o *T) { set(o, []metav1.Condition{good, good}) }, []apitesting.Want{apitesting.Duplicate(path + "[1].type")}},
		{path + " no reason", func(o *T) {
			set(o, []metav1.Condition{{Type: "Reconciled", Status: metav1.ConditionTrue, LastTransitionTime: now}})
		}, []apitesting.Want{apitesting.Required(path + "[0].reason")}},
		{path + " unknown status", func(o *T) {
			set(o, []metav1.Condition{{Type: "Reconciled", Status: "Yes", Reason: "Reconciled", LastTransitionTime: now}})
		}, []apitesting.Want{apitesting.NotSupported(path + "[0].status")}},
		{path + " no transition time", func(o *T) {
			set(o, []metav1.Condition{{Type: "Reconciled", Status: metav1.ConditionTrue, Reason: "Reconciled"}})
		}, []apitesting.Want{apitesting.Required(path + "[0].lastTransitionTime")}},
	}
}

// Environment

func validEnvironment() *appstudio.Environment {
	return &appstudio.Environment{
		ObjectMeta: meta("staging"),
		Spec: appstudio.EnvironmentSpec{
			DisplayName:        "Staging for Team A",
			DeploymentStrategy: appstudio.DeploymentStrategyAppStudioAutomated,
		},
	}
}

func withCredentials(o *appstudio.Environment) *appstudio.KubernetesClusterCredentials {
	o.Spec.UnstableConfigurationFields = &appstudio.UnstableEnvironmentConfiguration{
		KubernetesClusterCredentials: appstudio.KubernetesClusterCredentials{
			TargetNamespace:          "my-namespace",
			APIURL:                   "https://api.ci-ln-a1b2c3d4e5-76543.origin-ci-int-gce.dev.rhcloud.com:6443",
			ClusterCredentialsSecret: "secret-containing-cluster-credential",
		},
	}
	return &o.Spec.UnstableConfigurationFields.KubernetesClusterCredentials
}

const credsPath = "spec.unstableConfigurationFields.kubernetesCredentials."

func environmentSpecCases() []tc[appstudio.Environment] {
	type E = appstudio.Environment
	return []tc[E]{
		{"valid", func(*E) {}, nil},
		{"manual", func(o *E) { o.Spec.DeploymentStrategy = appstudio.DeploymentStrategyManual }, nil},
		{"deprecated type", func(o *E) { o.Spec.Type = appstudio.EnvironmentTypeNonPOC }, nil},
		{"unknown type", func(o *E) { o.Spec.Type = "Production" }, []apitesting.Want{apitesting.NotSupported("spec.type")}},
		{"no display name", func(o *E) { o.Spec.DisplayName = "" }, []apitesting.Want{apitesting.Required("spec.displayName")}},
		{"no deployment strategy", func(o *E) { o.Spec.DeploymentStrategy = "" }, []apitesting.Want{apitesting.Required("spec.deploymentStrategy")}},
		{"unknown deployment strategy", func(o *E) { o.Spec.DeploymentStrategy = "Automated" }, []apitesting.Want{apitesting.NotSupported("spec.deploymentStrategy")}},
		{"parent", func(o *E) { o.Spec.ParentEnvironment = "dev"; o.Spec.Tags = []string{"staging"} }, nil},
		{"invalid parent", func(o *E) { o.Spec.ParentEnvironment = "Dev" }, []apitesting.Want{apitesting.Invalid("spec.parentEnvironment")}},
		{"env vars", func(o *E) {
			o.Spec.Configuration.Env = []appstudio.EnvVarPair{{Name: "My_STG_ENV", Value: "100"}, {Name: "other.var-1", Value: ""}}
		}, nil},
		{"env var without name", func(o *E) { o.Spec.Configuration.Env = []appstudio.EnvVarPair{{Value: "1"}} },
			[]apitesting.Want{apitesting.Required("spec.configuration.env[0].name")}},
		{"invalid env var name", func(o *E) { o.Spec.Configuration.Env = []appstudio.EnvVarPair{{Name: "A"}, {Name: "1ABC"}} },
			[]apitesting.Want{apitesting.Invalid("spec.configuration.env[1].name")}},
		{"repeated env var", func(o *E) { o.Spec.Configuration.Env = []appstudio.EnvVarPair{{Name: "A"}, {Name: "A"}} },
			[]apitesting.Want{apitesting.Duplicate("spec.configuration.env[1].name")}},
		{"claim", func(o *E) { o.Spec.Configuration.Target.DeploymentTargetClaim.ClaimName = "staging-dtc" }, nil},
		{"invalid claim", func(o *E) { o.Spec.Configuration.Target.DeploymentTargetClaim.ClaimName = "Staging DTC" },
			[]apitesting.Want{apitesting.Invalid("spec.configuration.target.deploymentTargetClaim.claimName")}},
		{"credentials", func(o *E) {
			c := withCredentials(o)
			c.AllowInsecureSkipTLSVerify = true
			c.Namespaces = []string{"a", "b"}
			c.ClusterResources = true
		}, nil},
		{"claim and credentials", func(o *E) {
			withCredentials(o)
			o.Spec.Configuration.Target.DeploymentTargetClaim.ClaimName = "staging-dtc"
		}, []apitesting.Want{apitesting.Forbidden("spec.unstableConfigurationFields")}},
		{"OpenShift without ingress domain", func(o *E) {
			withCredentials(o)
			o.Spec.UnstableConfigurationFields.ClusterType = appstudio.ConfigurationClusterTypeOpenShift
		}, nil},
		{"Kubernetes with ingress domain", func(o *E) {
			withCredentials(o).IngressDomain = "apps.example.com"
			o.Spec.UnstableConfigurationFields.ClusterType = appstudio.ConfigurationClusterTypeKubernetes
		}, nil},
		{"Kubernetes without ingress domain", func(o *E) {
			withCredentials(o)
			o.Spec.UnstableConfigurationFields.ClusterType = appstudio.ConfigurationClusterTypeKubernetes
		}, []apitesting.Want{apitesting.Required(credsPath + "ingressDomain")}},
		{"invalid ingress domain", func(o *E) { withCredentials(o).IngressDomain = "Apps_Example" },
			[]apitesting.Want{apitesting.Invalid(credsPath + "ingressDomain")}},
		{"unknown cluster type", func(o *E) {
			withCredentials(o)
			o.Spec.UnstableConfigurationFields.ClusterType = "EKS"
		}, []apitesting.Want{apitesting.NotSupported("spec.unstableConfigurationFields.clusterType")}},
		{"no target namespace", func(o *E) { withCredentials(o).TargetNamespace = "" },
			[]apitesting.Want{apitesting.Required(credsPath + "targetNamespace")}},
		{"invalid target namespace", func(o *E) { withCredentials(o).TargetNamespace = "My-Namespace" },
			[]apitesting.Want{apitesting.Invalid(credsPath + "targetNamespace")}},
		{"no API URL", func(o *E) { withCredentials(o).APIURL = "" },
			[]apitesting.Want{apitesting.Required(credsPath + "apiURL")}},
		{"http API URL", func(o *E) { withCredentials(o).APIURL = "http://api.example.com:6443" },
			[]apitesting.Want{apitesting.Invalid(credsPath + "apiURL")}},
		{"API URL with query", func(o *E) { withCredentials(o).APIURL = "https://api.example.com:6443?a=b" },
			[]apitesting.Want{apitesting.Invalid(credsPath + "apiURL")}},
		{"no credentials secret", func(o *E) { withCredentials(o).ClusterCredentialsSecret = "" },
			[]apitesting.Want{apitesting.Required(credsPath + "clusterCredentialsSecret")}},
		{"invalid credentials secret", func(o *E) { withCredentials(o).ClusterCredentialsSecret = "Secret" },
			[]apitesting.Want{apitesting.Invalid(credsPath + "clusterCredentialsSecret")}},
		{"invalid namespace", func(o *E) { withCredentials(o).Namespaces = []string{"ok", "not_ok"} },
			[]apitesting.Want{apitesting.Invalid(credsPath + "namespaces[1]")}},
		{"repeated namespace", func(o *E) { withCredentials(o).Namespaces = []string{"ok", "ok"} },
			[]apitesting.Want{apitesting.Duplicate(credsPath + "namespaces[1]")}},
		{"empty credentials", func(o *E) {
			o.Spec.UnstableConfigurationFields = &appstudio.UnstableEnvironmentConfiguration{}
		}, []apitesting.Want{apitesting.Required(credsPath + "targetNamespace"), apitesting.Required(credsPath + "apiURL"), apitesting.Required(credsPath + "clusterCredentialsSecret")}},
	}
}

func TestValidateEnvironment(t *testing.T) {
	type E = appstudio.Environment
	set := func(o *E, m metav1.ObjectMeta) { o.ObjectMeta = m }
	cases := append(environmentSpecCases(),
		tc[E]{"no name", func(o *E) { set(o, metav1.ObjectMeta{Namespace: "jane"}) }, []apitesting.Want{apitesting.Required("metadata.name")}},
		tc[E]{"no namespace", func(o *E) { set(o, metav1.ObjectMeta{Name: "x"}) }, []apitesting.Want{apitesting.Required("metadata.namespace")}},
		// The name goes into generated names and labels, so it must be a DNS-1123 label.
		tc[E]{"dotted name", func(o *E) { set(o, metav1.ObjectMeta{Name: "a.b", Namespace: "jane"}) }, []apitesting.Want{apitesting.Invalid("metadata.name")}},
		tc[E]{"upper-case name", func(o *E) { set(o, metav1.ObjectMeta{Name: "Staging", Namespace: "jane"}) }, []apitesting.Want{apitesting.Invalid("metadata.name")}},
	)
	run(t, validEnvironment, ValidateEnvironment, cases)
}

func TestValidateEnvironmentUpdate(t *testing.T) {
	type E = appstudio.Environment
	cases := append(environmentSpecCases(),
		nameImmutable(func(o *E, n string) { o.Name = n }),
		tc[E]{"strategy and target may change", func(o *E) {
			o.Spec.DeploymentStrategy = appstudio.DeploymentStrategyManual
			o.Spec.Configuration.Target.DeploymentTargetClaim.ClaimName = "prod-dtc"
		}, nil},
	)
	runUpdate(t, validEnvironment, ValidateEnvironmentUpdate, cases)
}

func TestValidateEnvironmentStatusUpdate(t *testing.T) {
	type E = appstudio.Environment
	cases := append(conditionCases("status.conditions", func(o *E, c []metav1.Condition) { o.Status.Conditions = c }),
		tc[E]{"invalid spec is not checked", func(o *E) { o.Spec.DisplayName = "" }, nil},
		nameImmutable(func(o *E, n string) { o.Name = n }),
	)
	runUpdate(t, validEnvironment, ValidateEnvironmentStatusUpdate, cases)
}

// Snapshot

func validSnapshot() *appstudio.Snapshot {
	return &appstudio.Snapshot{
		ObjectMeta: meta("my-snapshot"),
		Spec: appstudio.SnapshotSpec{
			Application: "new-demo-app",
			Components: []appstudio.SnapshotComponent{
				{Name: "component-a", ContainerImage: "quay.io/jgwest-redhat/sample-workload:latest"},
				{Name: "component-b", ContainerImage: "quay.io/jgwest-redhat/sample-workload:v2",
					Source: appstudio.ComponentSource{GitSource: &appstudio.GitSource{URL: "https://github.com/org/b", Revision: "main"}}},
			},
		},
	}
}

func TestValidateSnapshot(t *testing.T) {
	type S = appstudio.Snapshot
	cases := append([]tc[S]{
		{"valid", func(*S) {}, nil},
		{"no components", func(o *S) { o.Spec.Components = nil }, nil},
		{"artifacts", func(o *S) {
			o.Spec.Artifacts.UnstableFields = &runtime.RawExtension{Raw: []byte(`{"sbom":["a"]}`)}
			o.Spec.DisplayName = "My known good staging snapshot"
		}, nil},
		{"no application", func(o *S) { o.Spec.Application = "" }, []apitesting.Want{apitesting.Required("spec.application")}},
		{"invalid application", func(o *S) { o.Spec.Application = "New Demo App" }, []apitesting.Want{apitesting.Invalid("spec.application")}},
		{"component without name", func(o *S) { o.Spec.Components[1].Name = "" }, []apitesting.Want{apitesting.Required("spec.components[1].name")}},
		{"invalid component name", func(o *S) { o.Spec.Components[0].Name = "component.a" }, []apitesting.Want{apitesting.Invalid("spec.components[0].name")}},
		{"repeated component", func(o *S) { o.Spec.Components[1].Name = "component-a" }, []apitesting.Want{apitesting.Duplicate("spec.components[1].name")}},
		{"component without image", func(o *S) { o.Spec.Components[0].ContainerImage = "" }, []apitesting.Want{apitesting.Required("spec.components[0].containerImage")}},
		{"git source without URL", func(o *S) { o.Spec.Components[1].Source.GitSource.URL = "" }, []apitesting.Want{apitesting.Required("spec.components[1].source.git.url")}},
	}, metaCases(func(o *S, m metav1.ObjectMeta) { o.ObjectMeta = m })...)
	run(t, validSnapshot, ValidateSnapshot, cases)
}

func TestValidateSnapshotUpdate(t *testing.T) {
	type S = appstudio.Snapshot
	cases := []tc[S]{
		{"unchanged", func(*S) {}, nil},
		{"display fields and artifacts may change", func(o *S) {
			o.Spec.DisplayName = "renamed"
			o.Spec.DisplayDescription = "better"
			o.Spec.Artifacts.UnstableFields = &runtime.RawExtension{Raw: []byte(`{}`)}
		}, nil},
		{"application changes", func(o *S) { o.Spec.Application = "other-app" }, []apitesting.Want{apitesting.Invalid("spec.application")}},
		{"image changes", func(o *S) { o.Spec.Components[0].ContainerImage = "quay.io/x/y:z" }, []apitesting.Want{apitesting.Forbidden("spec.components")}},
		{"git revision changes", func(o *S) { o.Spec.Components[1].Source.GitSource.Revision = "dev" }, []apitesting.Want{apitesting.Forbidden("spec.components")}},
		{"component added", func(o *S) {
			o.Spec.Components = append(o.Spec.Components, appstudio.SnapshotComponent{Name: "c", ContainerImage: "i"})
		}, []apitesting.Want{apitesting.Forbidden("spec.components")}},
		{"components removed", func(o *S) { o.Spec.Components = nil }, []apitesting.Want{apitesting.Forbidden("spec.components")}},
		{"both change", func(o *S) { o.Spec.Application = "other-app"; o.Spec.Components = nil },
			[]apitesting.Want{apitesting.Invalid("spec.application"), apitesting.Forbidden("spec.components")}},
		nameImmutable(func(o *S, n string) { o.Name = n }),
	}
	runUpdate(t, validSnapshot, ValidateSnapshotUpdate, cases)
}

func TestValidateSnapshotStatusUpdate(t *testing.T) {
	type S = appstudio.Snapshot
	cases := append(conditionCases("status.conditions", func(o *S, c []metav1.Condition) { o.Status.Conditions = c }),
		nameImmutable(func(o *S, n string) { o.Name = n }))
	runUpdate(t, validSnapshot, ValidateSnapshotStatusUpdate, cases)
}

// SnapshotEnvironmentBinding

func validBinding() *appstudio.SnapshotEnvironmentBinding {
	return &appstudio.SnapshotEnvironmentBinding{
		ObjectMeta: meta("appa-staging-binding"),
		Spec: appstudio.SnapshotEnvironmentBindingSpec{
			Application: "new-demo-app",
			Environment: "staging",
			Snapshot:    "my-snapshot",
			Components: []appstudio.BindingComponent{
				{Name: "component-a", Configuration: appstudio.BindingComponentConfiguration{
					Env:      []appstudio.EnvVarPair{{Name: "My_STG_ENV", Value: "200"}},
					Replicas: ptr.To[int32](3),
				}},
				{Name: "component-b"},
			},
		},
	}
}

func resources(limitCPU, requestCPU string) *corev1.ResourceRequirements {
	r := &corev1.ResourceRequirements{Limits: corev1.ResourceList{}, Requests: corev1.ResourceList{}}
	if limitCPU != "" {
		r.Limits[corev1.ResourceCPU] = resource.MustParse(limitCPU)
	}
	if requestCPU != "" {
		r.Requests[corev1.ResourceCPU] = resource.MustParse(requestCPU)
	}
	return r
}

const comp0 = "spec.components[0].configuration."

func bindingSpecCases() []tc[appstudio.SnapshotEnvironmentBinding] {
	type B = appstudio.SnapshotEnvironmentBinding
	return []tc[B]{
		{"valid", func(*B) {}, nil},
		{"no components", func(o *B) { o.Spec.Components = nil }, nil},
		{"no application", func(o *B) { o.Spec.Application = "" }, []apitesting.Want{apitesting.Required("spec.application")}},
		{"invalid application", func(o *B) { o.Spec.Application = "App_A" }, []apitesting.Want{apitesting.Invalid("spec.application")}},
		{"no environment", func(o *B) { o.Spec.Environment = "" }, []apitesting.Want{apitesting.Required("spec.environment")}},
		// Environment names are DNS-1123 labels.
		{"dotted environment", func(o *B) { o.Spec.Environment = "stag.ing" }, []apitesting.Want{apitesting.Invalid("spec.environment")}},
		{"no snapshot", func(o *B) { o.Spec.Snapshot = "" }, []apitesting.Want{apitesting.Required("spec.snapshot")}},
		{"invalid snapshot", func(o *B) { o.Spec.Snapshot = "My Snapshot" }, []apitesting.Want{apitesting.Invalid("spec.snapshot")}},
		{"component without name", func(o *B) { o.Spec.Components[1].Name = "" }, []apitesting.Want{apitesting.Required("spec.components[1].name")}},
		{"invalid component name", func(o *B) { o.Spec.Components[1].Name = "Component-B" }, []apitesting.Want{apitesting.Invalid("spec.components[1].name")}},
		{"repeated component", func(o *B) { o.Spec.Components[1].Name = "component-a" }, []apitesting.Want{apitesting.Duplicate("spec.components[1].name")}},
		{"zero replicas", func(o *B) { o.Spec.Components[0].Configuration.Replicas = ptr.To[int32](0) }, nil},
		{"negative replicas", func(o *B) { o.Spec.Components[0].Configuration.Replicas = ptr.To[int32](-1) }, []apitesting.Want{apitesting.Invalid(comp0 + "replicas")}},
		{"env var without name", func(o *B) { o.Spec.Components[0].Configuration.Env[0].Name = "" }, []apitesting.Want{apitesting.Required(comp0 + "env[0].name")}},
		{"invalid env var", func(o *B) { o.Spec.Components[0].Configuration.Env[0].Name = "A=B" }, []apitesting.Want{apitesting.Invalid(comp0 + "env[0].name")}},
		{"repeated env var", func(o *B) {
			o.Spec.Components[0].Configuration.Env = append(o.Spec.Components[0].Configuration.Env, appstudio.EnvVarPair{Name: "My_STG_ENV"})
		}, []apitesting.Want{apitesting.Duplicate(comp0 + "env[1].name")}},
		{"resources", func(o *B) { o.Spec.Components[0].Configuration.Resources = resources("500m", "250m") }, nil},
		{"request equal to limit", func(o *B) { o.Spec.Components[0].Configuration.Resources = resources("1", "1000m") }, nil},
		{"request without limit", func(o *B) { o.Spec.Components[0].Configuration.Resources = resources("", "2") }, nil},
		{"negative limit", func(o *B) { o.Spec.Components[0].Configuration.Resources = resources("-1", "") },
			[]apitesting.Want{apitesting.Invalid(comp0 + "resources.limits[cpu]")}},
		{"negative request", func(o *B) { o.Spec.Components[0].Configuration.Resources = resources("", "-100m") },
			[]apitesting.Want{apitesting.Invalid(comp0 + "resources.requests[cpu]")}},
		{"request above limit", func(o *B) { o.Spec.Components[0].Configuration.Resources = resources("500m", "1") },
			[]apitesting.Want{apitesting.Invalid(comp0 + "resources.requests[cpu]")}},
		{"request above limit of another resource only", func(o *B) {
			r := resources("500m", "")
			r.Requests[corev1.ResourceMemory] = resource.MustParse("1Gi")
			o.Spec.Components[0].Configuration.Resources = r
		}, nil},
	}
}

func TestValidateSnapshotEnvironmentBinding(t *testing.T) {
	type B = appstudio.SnapshotEnvironmentBinding
	cases := append(bindingSpecCases(), metaCases(func(o *B, m metav1.ObjectMeta) { o.ObjectMeta = m })...)
	run(t, validBinding, ValidateSnapshotEnvironmentBinding, cases)
}

func TestValidateSnapshotEnvironmentBindingUpdate(t *testing.T) {
	type B = appstudio.SnapshotEnvironmentBinding
	cases := append(bindingSpecCases(),
		tc[B]{"snapshot and components may change", func(o *B) {
			o.Spec.Snapshot = "newer-snapshot"
			o.Spec.Components = o.Spec.Components[:1]
		}, nil},
		tc[B]{"application changes", func(o *B) { o.Spec.Application = "other-app" }, []apitesting.Want{apitesting.Invalid("spec.application")}},
		tc[B]{"environment changes", func(o *B) { o.Spec.Environment = "prod" }, []apitesting.Want{apitesting.Invalid("spec.environment")}},
		tc[B]{"application cleared", func(o *B) { o.Spec.Application = "" },
			[]apitesting.Want{apitesting.Required("spec.application"), apitesting.Invalid("spec.application")}},
		nameImmutable(func(o *B, n string) { o.Name = n }),
	)
	// bindingSpecCases' "no application"/"no environment" change immutable fields as well.
	for i := range cases {
		switch cases[i].name {
		case "no application", "invalid application":
			cases[i].want = append(cases[i].want, apitesting.Invalid("spec.application"))
		case "no environment", "dotted environment":
			cases[i].want = append(cases[i].want, apitesting.Invalid("spec.environment"))
		}
	}
	runUpdate(t, validBinding, ValidateSnapshotEnvironmentBindingUpdate, cases)
}

func TestValidateSnapshotEnvironmentBindingStatusUpdate(t *testing.T) {
	type B = appstudio.SnapshotEnvironmentBinding
	var cases []tc[B]
	cases = append(cases, conditionCases("status.gitopsRepoConditions", func(o *B, c []metav1.Condition) { o.Status.GitOpsRepoConditions = c })...)
	cases = append(cases, conditionCases("status.componentDeploymentConditions", func(o *B, c []metav1.Condition) { o.Status.ComponentDeploymentConditions = c })...)
	cases = append(cases, conditionCases("status.bindingConditions", func(o *B, c []metav1.Condition) { o.Status.BindingConditions = c })...)
	cases = append(cases,
		tc[B]{"deployments", func(o *B) {
			o.Status.GitOpsDeployments = []appstudio.BindingStatusGitOpsDeployment{
				{ComponentName: "component-a", GitOpsDeployment: "appa-staging-binding-new-demo-app-staging-component-a", SyncStatus: "Synced", Health: "Healthy", CommitID: "abc"},
				{ComponentName: "component-b"},
			}
			o.Status.Components = []appstudio.BindingComponentStatus{{Name: "component-a"}}
		}, nil},
		tc[B]{"deployment without component", func(o *B) {
			o.Status.GitOpsDeployments = []appstudio.BindingStatusGitOpsDeployment{{ComponentName: "a"}, {GitOpsDeployment: "x"}}
		}, []apitesting.Want{apitesting.Required("status.gitopsDeployments[1].componentName")}},
		tc[B]{"repeated deployment component", func(o *B) {
			o.Status.GitOpsDeployments = []appstudio.BindingStatusGitOpsDeployment{{ComponentName: "a"}, {ComponentName: "a"}}
		}, []apitesting.Want{apitesting.Duplicate("status.gitopsDeployments[1].componentName")}},
		tc[B]{"invalid spec is not checked", func(o *B) { o.Spec.Snapshot = "" }, nil},
		nameImmutable(func(o *B, n string) { o.Name = n }),
	)
	runUpdate(t, validBinding, ValidateSnapshotEnvironmentBindingStatusUpdate, cases)
}

// PromotionRun

func validPromotionRun() *appstudio.PromotionRun {
	return &appstudio.PromotionRun{
		ObjectMeta: meta("appa-manual-promotion"),
		Spec: appstudio.PromotionRunSpec{
			Snapshot:        "my-snapshot",
			Application:     "appa",
			ManualPromotion: appstudio.ManualPromotionConfiguration{TargetEnvironment: "staging"},
		},
	}
}

func TestValidatePromotionRun(t *testing.T) {
	type P = appstudio.PromotionRun
	cases := append([]tc[P]{
		{"valid", func(*P) {}, nil},
		{"no snapshot", func(o *P) { o.Spec.Snapshot = "" }, []apitesting.Want{apitesting.Required("spec.snapshot")}},
		{"invalid snapshot", func(o *P) { o.Spec.Snapshot = "My Snapshot" }, []apitesting.Want{apitesting.Invalid("spec.snapshot")}},
		{"no application", func(o *P) { o.Spec.Application = "" }, []apitesting.Want{apitesting.Required("spec.application")}},
		{"invalid application", func(o *P) { o.Spec.Application = "appA" }, []apitesting.Want{apitesting.Invalid("spec.application")}},
		{"no target", func(o *P) { o.Spec.ManualPromotion.TargetEnvironment = "" },
			[]apitesting.Want{apitesting.Required("spec.manualPromotion.targetEnvironment")}},
		{"invalid target", func(o *P) { o.Spec.ManualPromotion.TargetEnvironment = "stag.ing" },
			[]apitesting.Want{apitesting.Invalid("spec.manualPromotion.targetEnvironment")}},
		{"automated", func(o *P) {
			o.Spec.ManualPromotion.TargetEnvironment = ""
			o.Spec.AutomatedPromotion.InitialEnvironment = "staging"
		}, nil},
		{"invalid initial Environment", func(o *P) {
			o.Spec.ManualPromotion.TargetEnvironment = ""
			o.Spec.AutomatedPromotion.InitialEnvironment = "Staging"
		}, []apitesting.Want{apitesting.Invalid("spec.automatedPromotion.initialEnvironment")}},
		{"manual and automated", func(o *P) { o.Spec.AutomatedPromotion.InitialEnvironment = "staging" },
			[]apitesting.Want{apitesting.Forbidden("spec.automatedPromotion.initialEnvironment")}},
	}, metaCases(func(o *P, m metav1.ObjectMeta) { o.ObjectMeta = m })...)
	run(t, validPromotionRun, ValidatePromotionRun, cases)
}

func TestValidatePromotionRunUpdate(t *testing.T) {
	type P = appstudio.PromotionRun
	cases := []tc[P]{
		{"unchanged", func(*P) {}, nil},
		{"labels may change", func(o *P) { o.Labels = map[string]string{"appstudio.application": "appa"} }, nil},
		{"snapshot changes", func(o *P) { o.Spec.Snapshot = "other" }, []apitesting.Want{apitesting.Forbidden("spec")}},
		{"application changes", func(o *P) { o.Spec.Application = "other" }, []apitesting.Want{apitesting.Forbidden("spec")}},
		{"target changes", func(o *P) { o.Spec.ManualPromotion.TargetEnvironment = "prod" }, []apitesting.Want{apitesting.Forbidden("spec")}},
		{"automated added", func(o *P) { o.Spec.AutomatedPromotion.InitialEnvironment = "dev" }, []apitesting.Want{apitesting.Forbidden("spec")}},
		nameImmutable(func(o *P, n string) { o.Name = n }),
	}
	runUpdate(t, validPromotionRun, ValidatePromotionRunUpdate, cases)
}

func TestValidatePromotionRunStatusUpdate(t *testing.T) {
	type P = appstudio.PromotionRun
	errorCond := appstudio.PromotionRunCondition{Type: appstudio.PromotionRunConditionErrorOccurred, Status: appstudio.PromotionRunConditionStatusFalse, LastTransitionTime: &now}
	earlier := metav1.NewTime(now.Add(-time.Minute))
	cases := []tc[P]{
		{"empty", func(*P) {}, nil},
		{"active", func(o *P) {
			o.Status = appstudio.PromotionRunStatus{
				State:              appstudio.PromotionRunStateActive,
				ActiveBindings:     []string{"appa-staging-binding"},
				PromotionStartTime: now,
				EnvironmentStatus: []appstudio.PromotionRunEnvironmentStatus{
					{Step: 1, EnvironmentName: "staging", Status: appstudio.PromotionRunEnvironmentStatusInProgress, DisplayStatus: "Waiting"},
				},
				Conditions: []appstudio.PromotionRunCondition{errorCond},
			}
		}, nil},
		{"complete", func(o *P) {
			o.Status.State = appstudio.PromotionRunStateComplete
			o.Status.CompletionResult = appstudio.PromotionRunCompleteResultFailure
		}, nil},
		{"unknown state", func(o *P) { o.Status.State = "Completed" }, []apitesting.Want{apitesting.NotSupported("status.state")}},
		{"unknown result", func(o *P) {
			o.Status.State = appstudio.PromotionRunStateComplete
			o.Status.CompletionResult = "Partial"
		}, []apitesting.Want{apitesting.NotSupported("status.completionResult")}},
		{"result before completion", func(o *P) {
			o.Status.State = appstudio.PromotionRunStateWaiting
			o.Status.CompletionResult = appstudio.PromotionRunCompleteResultSuccess
		}, []apitesting.Want{apitesting.Invalid("status.completionResult")}},
		{"environment without status", func(o *P) {
			o.Status.EnvironmentStatus = []appstudio.PromotionRunEnvironmentStatus{{Step: 1, EnvironmentName: "staging"}}
		}, []apitesting.Want{apitesting.Required("status.environmentStatus[0].status")}},
		// The API document spells these in lower case; the real values are capitalised.
		{"environment with unknown status", func(o *P) {
			o.Status.EnvironmentStatus = []appstudio.PromotionRunEnvironmentStatus{
				{Step: 1, EnvironmentName: "dev", Status: appstudio.PromotionRunEnvironmentStatusSuccess},
				{Step: 2, EnvironmentName: "staging", Status: "success"},
			}
		}, []apitesting.Want{apitesting.NotSupported("status.environmentStatus[1].status")}},
		{"step with start and completion times", func(o *P) {
			o.Status.EnvironmentStatus = []appstudio.PromotionRunEnvironmentStatus{
				{Step: 1, EnvironmentName: "staging", Status: appstudio.PromotionRunEnvironmentStatusSuccess, StartTime: &earlier, CompletionTime: &now},
			}
		}, nil},
		{"step completed the second it started", func(o *P) {
			o.Status.EnvironmentStatus = []appstudio.PromotionRunEnvironmentStatus{
				{Step: 1, EnvironmentName: "staging", Status: appstudio.PromotionRunEnvironmentStatusFailed, StartTime: &now, CompletionTime: now.DeepCopy()},
			}
		}, nil},
		// Steps written before the fields existed have neither; one alone cannot be out of order.
		{"step with only one of the times", func(o *P) {
			o.Status.EnvironmentStatus = []appstudio.PromotionRunEnvironmentStatus{
				{Step: 1, EnvironmentName: "dev", Status: appstudio.PromotionRunEnvironmentStatusInProgress, StartTime: &now},
				{Step: 2, EnvironmentName: "staging", Status: appstudio.PromotionRunEnvironmentStatusSuccess, CompletionTime: &now},
			}
		}, nil},
		{"step completed before it started", func(o *P) {
			o.Status.EnvironmentStatus = []appstudio.PromotionRunEnvironmentStatus{
				{Step: 1, EnvironmentName: "dev", Status: appstudio.PromotionRunEnvironmentStatusSuccess, StartTime: &earlier, CompletionTime: &now},
				{Step: 2, EnvironmentName: "staging", Status: appstudio.PromotionRunEnvironmentStatusSuccess, StartTime: &now, CompletionTime: &earlier},
			}
		}, []apitesting.Want{apitesting.Invalid("status.environmentStatus[1].completionTime")}},
		{"condition without type", func(o *P) {
			o.Status.Conditions = []appstudio.PromotionRunCondition{{Status: appstudio.PromotionRunConditionStatusTrue}}
		}, []apitesting.Want{apitesting.Required("status.conditions[0].type")}},
		{"condition with unknown type", func(o *P) {
			o.Status.Conditions = []appstudio.PromotionRunCondition{{Type: "Failed", Status: appstudio.PromotionRunConditionStatusTrue}}
		}, []apitesting.Want{apitesting.NotSupported("status.conditions[0].type")}},
		{"repeated condition", func(o *P) { o.Status.Conditions = []appstudio.PromotionRunCondition{errorCond, errorCond} },
			[]apitesting.Want{apitesting.Duplicate("status.conditions[1].type")}},
		{"condition without status", func(o *P) {
			o.Status.Conditions = []appstudio.PromotionRunCondition{{Type: appstudio.PromotionRunConditionErrorOccurred}}
		}, []apitesting.Want{apitesting.Required("status.conditions[0].status")}},
		{"condition with unknown status", func(o *P) {
			o.Status.Conditions = []appstudio.PromotionRunCondition{{Type: appstudio.PromotionRunConditionErrorOccurred, Status: "true"}}
		}, []apitesting.Want{apitesting.NotSupported("status.conditions[0].status")}},
		nameImmutable(func(o *P, n string) { o.Name = n }),
	}
	runUpdate(t, validPromotionRun, ValidatePromotionRunStatusUpdate, cases)
}

// DeploymentTarget

func validDeploymentTarget() *appstudio.DeploymentTarget {
	return &appstudio.DeploymentTarget{
		ObjectMeta: meta("prod-dt"),
		Spec: appstudio.DeploymentTargetSpec{
			DeploymentTargetClassName: "isolation-level-namespace",
			KubernetesClusterCredentials: appstudio.DeploymentTargetKubernetesClusterCredentials{
				DefaultNamespace:         "jgwest-jk9881c-env",
				APIURL:                   "https://api.stone-stg-m01.7ayg.p1.openshiftapps.com:6443",
				ClusterCredentialsSecret: "dtc-1abc2-de3f4-gh5ij",
			},
			ClaimRef: "prod-dtc",
		},
	}
}

func deploymentTargetSpecCases() []tc[appstudio.DeploymentTarget] {
	type D = appstudio.DeploymentTarget
	const creds = "spec.kubernetesCredentials."
	return []tc[D]{
		{"valid", func(*D) {}, nil},
		{"unbound, any namespace", func(o *D) { o.Spec.ClaimRef = ""; o.Spec.KubernetesClusterCredentials.DefaultNamespace = "" }, nil},
		{"no class", func(o *D) { o.Spec.DeploymentTargetClassName = "" }, []apitesting.Want{apitesting.Required("spec.deploymentTargetClassName")}},
		{"invalid class", func(o *D) { o.Spec.DeploymentTargetClassName = "Isolation Level" }, []apitesting.Want{apitesting.Invalid("spec.deploymentTargetClassName")}},
		{"invalid namespace", func(o *D) { o.Spec.KubernetesClusterCredentials.DefaultNamespace = "a.b" }, []apitesting.Want{apitesting.Invalid(creds + "defaultNamespace")}},
		{"no API URL", func(o *D) { o.Spec.KubernetesClusterCredentials.APIURL = "" }, []apitesting.Want{apitesting.Required(creds + "apiURL")}},
		{"http API URL", func(o *D) { o.Spec.KubernetesClusterCredentials.APIURL = "http://api.example.com" }, []apitesting.Want{apitesting.Invalid(creds + "apiURL")}},
		{"API URL with query", func(o *D) { o.Spec.KubernetesClusterCredentials.APIURL = "https://api.example.com?x" }, []apitesting.Want{apitesting.Invalid(creds + "apiURL")}},
		{"no secret", func(o *D) { o.Spec.KubernetesClusterCredentials.ClusterCredentialsSecret = "" }, []apitesting.Want{apitesting.Required(creds + "clusterCredentialsSecret")}},
		{"invalid secret", func(o *D) { o.Spec.KubernetesClusterCredentials.ClusterCredentialsSecret = "S" }, []apitesting.Want{apitesting.Invalid(creds + "clusterCredentialsSecret")}},
		{"invalid claim", func(o *D) { o.Spec.ClaimRef = "prod_dtc" }, []apitesting.Want{apitesting.Invalid("spec.claimRef")}},
	}
}

func TestValidateDeploymentTarget(t *testing.T) {
	type D = appstudio.DeploymentTarget
	run(t, validDeploymentTarget, ValidateDeploymentTarget,
		append(deploymentTargetSpecCases(), metaCases(func(o *D, m metav1.ObjectMeta) { o.ObjectMeta = m })...))
}

func TestValidateDeploymentTargetUpdate(t *testing.T) {
	type D = appstudio.DeploymentTarget
	runUpdate(t, validDeploymentTarget, ValidateDeploymentTargetUpdate,
		append(deploymentTargetSpecCases(), nameImmutable(func(o *D, n string) { o.Name = n })))
}

func TestValidateDeploymentTargetStatusUpdate(t *testing.T) {
	type D = appstudio.DeploymentTarget
	cases := append(conditionCases("status.conditions", func(o *D, c []metav1.Condition) { o.Status.Conditions = c }),
		tc[D]{"released", func(o *D) { o.Status.Phase = appstudio.DeploymentTargetPhaseReleased }, nil},
		tc[D]{"unknown phase", func(o *D) { o.Status.Phase = "Lost" }, []apitesting.Want{apitesting.NotSupported("status.phase")}},
		nameImmutable(func(o *D, n string) { o.Name = n }),
	)
	runUpdate(t, validDeploymentTarget, ValidateDeploymentTargetStatusUpdate, cases)
}

// DeploymentTargetClaim

func validDeploymentTargetClaim() *appstudio.DeploymentTargetClaim {
	return &appstudio.DeploymentTargetClaim{
		ObjectMeta: meta("prod-dtc"),
		Spec: appstudio.DeploymentTargetClaimSpec{
			DeploymentTargetClassName: "isolation-level-namespace",
			TargetName:                "prod-dt",
		},
	}
}

func deploymentTargetClaimSpecCases() []tc[appstudio.DeploymentTargetClaim] {
	type C = appstudio.DeploymentTargetClaim
	return []tc[C]{
		{"valid", func(*C) {}, nil},
		{"class only", func(o *C) { o.Spec.TargetName = "" }, nil},
		// A claim may name its target without a class.
		{"target only", func(o *C) { o.Spec.DeploymentTargetClassName = "" }, nil},
		{"invalid class", func(o *C) { o.Spec.DeploymentTargetClassName = "Bad Class" }, []apitesting.Want{apitesting.Invalid("spec.deploymentTargetClassName")}},
		{"invalid target", func(o *C) { o.Spec.TargetName = "prod_dt" }, []apitesting.Want{apitesting.Invalid("spec.targetName")}},
	}
}

func TestValidateDeploymentTargetClaim(t *testing.T) {
	type C = appstudio.DeploymentTargetClaim
	run(t, validDeploymentTargetClaim, ValidateDeploymentTargetClaim,
		append(deploymentTargetClaimSpecCases(), metaCases(func(o *C, m metav1.ObjectMeta) { o.ObjectMeta = m })...))
}

func TestValidateDeploymentTargetClaimUpdate(t *testing.T) {
	type C = appstudio.DeploymentTargetClaim
	// From a claim with neither class nor target, the rules of create hold for the rest.
	unset := func() *C {
		o := validDeploymentTargetClaim()
		o.Spec.DeploymentTargetClassName, o.Spec.TargetName = "", ""
		return o
	}
	var fromUnset []tc[C]
	for _, c := range deploymentTargetClaimSpecCases() {
		if c.name != "invalid class" { // a class set later is refused as such, below
			fromUnset = append(fromUnset, c)
		}
	}
	runUpdate(t, unset, ValidateDeploymentTargetClaimUpdate, append(fromUnset, nameImmutable(func(o *C, n string) { o.Name = n })))
	// Once set, neither changes.
	runUpdate(t, validDeploymentTargetClaim, ValidateDeploymentTargetClaimUpdate, []tc[C]{
		{"unchanged", func(*C) {}, nil},
		{"another target", func(o *C) { o.Spec.TargetName = "other" }, []apitesting.Want{apitesting.Invalid("spec.targetName")}},
		{"target cleared", func(o *C) { o.Spec.TargetName = "" }, []apitesting.Want{apitesting.Invalid("spec.targetName")}},
		{"another class", func(o *C) { o.Spec.DeploymentTargetClassName = "other" }, []apitesting.Want{apitesting.Invalid("spec.deploymentTargetClassName")}},
	})
	// Nor is a class set later: the claim limit is counted at creation.
	runUpdate(t, unset, ValidateDeploymentTargetClaimUpdate, []tc[C]{
		{"class set later", func(o *C) { o.Spec.DeploymentTargetClassName = "isolation-level-namespace" },
			[]apitesting.Want{apitesting.Invalid("spec.deploymentTargetClassName")}},
		{"target set later", func(o *C) { o.Spec.TargetName = "t" }, nil},
	})
}

func TestValidateDeploymentTargetClaimStatusUpdate(t *testing.T) {
	type C = appstudio.DeploymentTargetClaim
	cases := append(conditionCases("status.conditions", func(o *C, c []metav1.Condition) { o.Status.Conditions = c }),
		tc[C]{"lost", func(o *C) { o.Status.Phase = appstudio.DeploymentTargetClaimPhaseLost }, nil},
		tc[C]{"unknown phase", func(o *C) { o.Status.Phase = "Released" }, []apitesting.Want{apitesting.NotSupported("status.phase")}},
		nameImmutable(func(o *C, n string) { o.Name = n }),
	)
	runUpdate(t, validDeploymentTargetClaim, ValidateDeploymentTargetClaimStatusUpdate, cases)
}

// DeploymentTargetClass

func validDeploymentTargetClass() *appstudio.DeploymentTargetClass {
	return &appstudio.DeploymentTargetClass{
		ObjectMeta: metav1.ObjectMeta{Name: "isolation-level-namespace", ResourceVersion: "1"},
		Spec: appstudio.DeploymentTargetClassSpec{
			Provisioner:   appstudio.ProvisionerDevSandbox,
			ReclaimPolicy: appstudio.ReclaimPolicyDelete,
		},
	}
}

func deploymentTargetClassSpecCases() []tc[appstudio.DeploymentTargetClass] {
	type K = appstudio.DeploymentTargetClass
	return []tc[K]{
		{"valid", func(*K) {}, nil},
		{"retain", func(o *K) { o.Spec.ReclaimPolicy = appstudio.ReclaimPolicyRetain }, nil},
		{"other provisioner", func(o *K) { o.Spec.Provisioner = "example.com/my-provisioner" }, nil},
		{"no provisioner", func(o *K) { o.Spec.Provisioner = "" }, []apitesting.Want{apitesting.Required("spec.provisioner")}},
		{"invalid provisioner", func(o *K) { o.Spec.Provisioner = "example.com/a/b" }, []apitesting.Want{apitesting.Invalid("spec.provisioner")}},
		{"no reclaim policy", func(o *K) { o.Spec.ReclaimPolicy = "" }, []apitesting.Want{apitesting.Required("spec.reclaimPolicy")}},
		{"unknown reclaim policy", func(o *K) { o.Spec.ReclaimPolicy = "Recycle" }, []apitesting.Want{apitesting.NotSupported("spec.reclaimPolicy")}},
	}
}

// validNamespaceClass is a class of the namespace provisioner with every parameter set.
func validNamespaceClass() *appstudio.DeploymentTargetClass {
	return &appstudio.DeploymentTargetClass{
		ObjectMeta: metav1.ObjectMeta{Name: "namespace-preview", ResourceVersion: "1"},
		Spec: appstudio.DeploymentTargetClassSpec{
			Provisioner:   appstudio.ProvisionerNamespace,
			ReclaimPolicy: appstudio.ReclaimPolicyDelete,
			Parameters: appstudio.DeploymentTargetParameters{Namespace: &appstudio.NamespaceProvisionerParameters{
				TTL:             &metav1.Duration{Duration: 168 * time.Hour},
				TokenExpiration: &metav1.Duration{Duration: 24 * time.Hour},
				ResourceQuota: corev1.ResourceList{
					"requests.cpu": resource.MustParse("2"), "requests.memory": resource.MustParse("4Gi"), "count/pods": resource.MustParse("20"),
				},
				ContainerLimits: &appstudio.ContainerLimits{
					Default:              corev1.ResourceList{"cpu": resource.MustParse("500m"), "memory": resource.MustParse("512Mi")},
					DefaultRequest:       corev1.ResourceList{"cpu": resource.MustParse("100m"), "memory": resource.MustParse("256Mi")},
					Max:                  corev1.ResourceList{"cpu": resource.MustParse("2"), "memory": resource.MustParse("2Gi")},
					Min:                  corev1.ResourceList{"cpu": resource.MustParse("10m"), "memory": resource.MustParse("16Mi")},
					MaxLimitRequestRatio: corev1.ResourceList{"cpu": resource.MustParse("10")},
				},
			}},
		},
	}
}

// namespaceParameterCases are the rules of spec.parameters.namespace, on validNamespaceClass.
func namespaceParameterCases() []tc[appstudio.DeploymentTargetClass] {
	type K = appstudio.DeploymentTargetClass
	const p = "spec.parameters.namespace"
	ns := func(o *K) *appstudio.NamespaceProvisionerParameters { return o.Spec.Parameters.Namespace }
	lim := func(o *K) *appstudio.ContainerLimits { return o.Spec.Parameters.Namespace.ContainerLimits }
	d := func(s string) *metav1.Duration {
		v, err := time.ParseDuration(s)
		if err != nil {
			panic(err)
		}
		return &metav1.Duration{Duration: v}
	}
	q := resource.MustParse
	return []tc[K]{
		{"namespace: all set", func(*K) {}, nil},
		{"namespace: empty", func(o *K) { o.Spec.Parameters.Namespace = &appstudio.NamespaceProvisionerParameters{} }, nil},
		{"namespace: empty parameters", func(o *K) { o.Spec.Parameters = appstudio.DeploymentTargetParameters{} }, nil},
		{"namespace: empty container limits", func(o *K) { ns(o).ContainerLimits = &appstudio.ContainerLimits{} }, nil},
		{"namespace: other provisioner", func(o *K) { o.Spec.Provisioner = appstudio.ProvisionerDevSandbox },
			[]apitesting.Want{apitesting.Forbidden(p)}},
		{"namespace: other provisioner, empty", func(o *K) {
			o.Spec.Provisioner = "example.com/other"
			o.Spec.Parameters.Namespace = &appstudio.NamespaceProvisionerParameters{}
		}, []apitesting.Want{apitesting.Forbidden(p)}},
		{"ttl 1m", func(o *K) { ns(o).TTL = d("1m") }, nil},
		{"ttl below 1m", func(o *K) { ns(o).TTL = d("59s") }, []apitesting.Want{apitesting.Invalid(p + ".ttl")}},
		{"ttl zero", func(o *K) { ns(o).TTL = d("0s") }, []apitesting.Want{apitesting.Invalid(p + ".ttl")}},
		{"ttl negative", func(o *K) { ns(o).TTL = d("-1h") }, []apitesting.Want{apitesting.Invalid(p + ".ttl")}},
		{"tokenExpiration 10m", func(o *K) { ns(o).TokenExpiration = d("10m") }, nil},
		{"tokenExpiration 8760h", func(o *K) { ns(o).TokenExpiration = d("8760h") }, nil},
		{"tokenExpiration below 10m", func(o *K) { ns(o).TokenExpiration = d("9m59s") }, []apitesting.Want{apitesting.Invalid(p + ".tokenExpiration")}},
		{"tokenExpiration zero", func(o *K) { ns(o).TokenExpiration = d("0s") }, []apitesting.Want{apitesting.Invalid(p + ".tokenExpiration")}},
		{"tokenExpiration above 8760h", func(o *K) { ns(o).TokenExpiration = d("8761h") }, []apitesting.Want{apitesting.Invalid(p + ".tokenExpiration")}},
		{"resourceQuota extended resource", func(o *K) { ns(o).ResourceQuota["requests.example.com/gpu"] = q("1") }, nil},
		{"resourceQuota count of a group's resource", func(o *K) { ns(o).ResourceQuota["count/deployments.apps"] = q("5") }, nil},
		{"resourceQuota zero", func(o *K) { ns(o).ResourceQuota["count/pods"] = q("0") }, nil},
		{"resourceQuota invalid name", func(o *K) { ns(o).ResourceQuota["requests cpu"] = q("1") },
			[]apitesting.Want{apitesting.Invalid(p + ".resourceQuota[requests cpu]")}},
		{"resourceQuota empty name", func(o *K) { ns(o).ResourceQuota[""] = q("1") },
			[]apitesting.Want{apitesting.Invalid(p + ".resourceQuota[]")}},
		{"resourceQuota negative", func(o *K) { ns(o).ResourceQuota["requests.cpu"] = q("-1") },
			[]apitesting.Want{apitesting.Invalid(p + ".resourceQuota[requests.cpu]")}},
		{"containerLimits invalid name", func(o *K) { lim(o).Max["cpu/a/b"] = q("1") },
			[]apitesting.Want{apitesting.Invalid(p + ".containerLimits.max[cpu/a/b]")}},
		{"containerLimits negative max", func(o *K) { lim(o).Max = corev1.ResourceList{"cpu": q("-1")} },
			[]apitesting.Want{apitesting.Invalid(p + ".containerLimits.max[cpu]")}},
		{"containerLimits negative min", func(o *K) { lim(o).Min["ephemeral-storage"] = q("-1Gi") },
			[]apitesting.Want{apitesting.Invalid(p + ".containerLimits.min[ephemeral-storage]")}},
		{"containerLimits negative default", func(o *K) { *lim(o) = appstudio.ContainerLimits{Default: corev1.ResourceList{"memory": q("-1")}} },
			[]apitesting.Want{apitesting.Invalid(p + ".containerLimits.default[memory]")}},
		{"containerLimits negative defaultRequest", func(o *K) {
			*lim(o) = appstudio.ContainerLimits{DefaultRequest: corev1.ResourceList{"memory": q("-1")}}
		}, []apitesting.Want{apitesting.Invalid(p + ".containerLimits.defaultRequest[memory]")}},
		{"maxLimitRequestRatio 1", func(o *K) { lim(o).MaxLimitRequestRatio["cpu"] = q("1") }, nil},
		{"maxLimitRequestRatio below 1", func(o *K) { lim(o).MaxLimitRequestRatio["cpu"] = q("0.5") },
			[]apitesting.Want{apitesting.Invalid(p + ".containerLimits.maxLimitRequestRatio[cpu]")}},
		{"maxLimitRequestRatio negative", func(o *K) { lim(o).MaxLimitRequestRatio["cpu"] = q("-2") },
			[]apitesting.Want{apitesting.Invalid(p + ".containerLimits.maxLimitRequestRatio[cpu]")}},
		{"equal bounds", func(o *K) {
			*lim(o) = appstudio.ContainerLimits{
				Min: corev1.ResourceList{"cpu": q("1")}, DefaultRequest: corev1.ResourceList{"cpu": q("1000m")},
				Default: corev1.ResourceList{"cpu": q("1")}, Max: corev1.ResourceList{"cpu": q("1")},
			}
		}, nil},
		{"bounds of other resources", func(o *K) {
			*lim(o) = appstudio.ContainerLimits{Min: corev1.ResourceList{"cpu": q("2")}, Max: corev1.ResourceList{"memory": q("1")}}
		}, nil},
		{"min above max", func(o *K) { lim(o).Min["cpu"] = q("3") },
			// min[cpu] 3 is also above default and defaultRequest, which are reported there.
			[]apitesting.Want{apitesting.Invalid(p + ".containerLimits.min[cpu]"),
				apitesting.Invalid(p + ".containerLimits.default[cpu]"), apitesting.Invalid(p + ".containerLimits.defaultRequest[cpu]")}},
		{"min above max only", func(o *K) {
			*lim(o) = appstudio.ContainerLimits{Min: corev1.ResourceList{"cpu": q("2")}, Max: corev1.ResourceList{"cpu": q("1")}}
		}, []apitesting.Want{apitesting.Invalid(p + ".containerLimits.min[cpu]")}},
		{"default above max", func(o *K) { lim(o).Default["memory"] = q("3Gi") },
			[]apitesting.Want{apitesting.Invalid(p + ".containerLimits.default[memory]")}},
		{"default below min", func(o *K) {
			*lim(o) = appstudio.ContainerLimits{Min: corev1.ResourceList{"cpu": q("1")}, Default: corev1.ResourceList{"cpu": q("500m")}}
		}, []apitesting.Want{apitesting.Invalid(p + ".containerLimits.default[cpu]")}},
		{"defaultRequest above max", func(o *K) {
			*lim(o) = appstudio.ContainerLimits{Max: corev1.ResourceList{"cpu": q("1")}, DefaultRequest: corev1.ResourceList{"cpu": q("2")}}
		}, []apitesting.Want{apitesting.Invalid(p + ".containerLimits.defaultRequest[cpu]")}},
		{"defaultRequest below min", func(o *K) { lim(o).DefaultRequest["memory"] = q("8Mi") },
			[]apitesting.Want{apitesting.Invalid(p + ".containerLimits.defaultRequest[memory]")}},
		{"defaultRequest above default", func(o *K) { lim(o).DefaultRequest["cpu"] = q("600m") },
			[]apitesting.Want{apitesting.Invalid(p + ".containerLimits.defaultRequest[cpu]")}},
		{"podSecurityLevel baseline", func(o *K) { ns(o).PodSecurityLevel = appstudio.PodSecurityBaseline }, nil},
		{"podSecurityLevel privileged", func(o *K) { ns(o).PodSecurityLevel = appstudio.PodSecurityPrivileged }, nil},
		{"podSecurityLevel unknown", func(o *K) { ns(o).PodSecurityLevel = "Restricted" },
			[]apitesting.Want{apitesting.NotSupported(p + ".podSecurityLevel")}},
		{"networkPolicy empty", func(o *K) { ns(o).NetworkPolicy = &appstudio.NamespaceNetworkPolicy{} }, nil},
		{"networkPolicy invalid selector", func(o *K) {
			ns(o).NetworkPolicy = &appstudio.NamespaceNetworkPolicy{AllowFromNamespaces: []metav1.LabelSelector{
				{MatchLabels: map[string]string{"team": "ingress"}},
				{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "team", Operator: metav1.LabelSelectorOpIn}}},
			}}
		}, []apitesting.Want{apitesting.Required(p + ".networkPolicy.allowFromNamespaces[1].matchExpressions[0].values")}},
		{"labels", func(o *K) { ns(o).Labels = map[string]string{"team": "a", "example.com/tier": "dev"} }, nil},
		{"labels invalid value", func(o *K) { ns(o).Labels = map[string]string{"team": "a b"} },
			[]apitesting.Want{apitesting.Invalid(p + ".labels")}},
		{"labels of Pod Security", func(o *K) { ns(o).Labels = map[string]string{"pod-security.kubernetes.io/enforce": "privileged"} },
			[]apitesting.Want{apitesting.Forbidden(p + ".labels[pod-security.kubernetes.io/enforce]")}},
		{"labels of the provisioner", func(o *K) {
			ns(o).Labels = map[string]string{"namespace.provisioner.managed-gitops.redhat.com/claim-uid": "x", "kubernetes.io/metadata.name": "x"}
		}, []apitesting.Want{apitesting.Forbidden(p + ".labels[kubernetes.io/metadata.name]"),
			apitesting.Forbidden(p + ".labels[namespace.provisioner.managed-gitops.redhat.com/claim-uid]")}},
		{"annotations", func(o *K) { ns(o).Annotations = map[string]string{"openshift.io/description": "preview"} }, nil},
		{"annotations of the provisioner", func(o *K) {
			ns(o).Annotations = map[string]string{"namespace.provisioner.managed-gitops.redhat.com/claim-name": "x"}
		}, []apitesting.Want{apitesting.Forbidden(p + ".annotations[namespace.provisioner.managed-gitops.redhat.com/claim-name]")}},
		{"annotations invalid key", func(o *K) { ns(o).Annotations = map[string]string{"a b": "x"} },
			[]apitesting.Want{apitesting.Invalid(p + ".annotations")}},
		{"maxClaimsPerNamespace 1", func(o *K) { ns(o).MaxClaimsPerNamespace = ptr.To[int32](1) }, nil},
		{"maxClaimsPerNamespace 0", func(o *K) { ns(o).MaxClaimsPerNamespace = ptr.To[int32](0) },
			[]apitesting.Want{apitesting.Invalid(p + ".maxClaimsPerNamespace")}},
	}
}

func TestValidateDeploymentTargetClass(t *testing.T) {
	type K = appstudio.DeploymentTargetClass
	cases := append(deploymentTargetClassSpecCases(),
		tc[K]{"no name", func(o *K) { o.Name = "" }, []apitesting.Want{apitesting.Required("metadata.name")}},
		// The class is cluster-scoped.
		tc[K]{"namespaced", func(o *K) { o.Namespace = "jane" }, []apitesting.Want{apitesting.Forbidden("metadata.namespace")}},
		tc[K]{"invalid name", func(o *K) { o.Name = "Isolation" }, []apitesting.Want{apitesting.Invalid("metadata.name")}},
	)
	run(t, validDeploymentTargetClass, ValidateDeploymentTargetClass, cases)
	run(t, validNamespaceClass, ValidateDeploymentTargetClass, namespaceParameterCases())
}

func TestValidateDeploymentTargetClassUpdate(t *testing.T) {
	type K = appstudio.DeploymentTargetClass
	runUpdate(t, validDeploymentTargetClass, ValidateDeploymentTargetClassUpdate,
		append(deploymentTargetClassSpecCases(), nameImmutable(func(o *K, n string) { o.Name = n })))
	runUpdate(t, validNamespaceClass, ValidateDeploymentTargetClassUpdate, namespaceParameterCases())
	// Parameters may change, and an old class of another provisioner cannot gain them.
	runUpdate(t, validDeploymentTargetClass, ValidateDeploymentTargetClassUpdate, []tc[K]{
		{"namespace parameters added with the provisioner", func(o *K) {
			o.Spec.Provisioner = appstudio.ProvisionerNamespace
			o.Spec.Parameters.Namespace = validNamespaceClass().Spec.Parameters.Namespace
		}, nil},
		{"namespace parameters added to a devsandbox class", func(o *K) {
			o.Spec.Parameters.Namespace = &appstudio.NamespaceProvisionerParameters{}
		}, []apitesting.Want{apitesting.Forbidden("spec.parameters.namespace")}},
	})
}

// Application

func validApplication() *appstudio.Application {
	return &appstudio.Application{
		ObjectMeta: meta("new-demo-app"),
		Spec: appstudio.ApplicationSpec{
			DisplayName:      "New demo app",
			GitOpsRepository: appstudio.ApplicationGitRepository{URL: "https://github.com/org/gitops", Branch: "main"},
		},
	}
}

func TestValidateApplication(t *testing.T) {
	type A = appstudio.Application
	cases := []tc[A]{
		{"valid", func(*A) {}, nil},
		{"repositories left to application-service", func(o *A) { o.Spec.GitOpsRepository = appstudio.ApplicationGitRepository{} }, nil},
		{"no display name", func(o *A) { o.Spec.DisplayName = "" }, []apitesting.Want{apitesting.Required("spec.displayName")}},
		{"branch without repository", func(o *A) { o.Spec.AppModelRepository.Branch = "devel" },
			[]apitesting.Want{apitesting.Required("spec.appModelRepository.url")}},
		{"context without repository", func(o *A) { o.Spec.GitOpsRepository = appstudio.ApplicationGitRepository{Context: "gitops"} },
			[]apitesting.Want{apitesting.Required("spec.gitOpsRepository.url")}},
		// DNS-1035 labels: no leading digit, no dots, at most 63 characters.
		{"name starts with a digit", func(o *A) { o.Name = "1st-app" }, []apitesting.Want{apitesting.Invalid("metadata.name")}},
		{"dotted name", func(o *A) { o.Name = "a.b" }, []apitesting.Want{apitesting.Invalid("metadata.name")}},
		{"64 characters", func(o *A) { o.Name = "a" + strings.Repeat("b", 63) }, []apitesting.Want{apitesting.Invalid("metadata.name")}},
		{"no namespace", func(o *A) { o.Namespace = "" }, []apitesting.Want{apitesting.Required("metadata.namespace")}},
	}
	run(t, validApplication, ValidateApplication, cases)
}

func TestApplicationNameMessage(t *testing.T) {
	obj := validApplication()
	obj.Name = "My_App"
	errs := ValidateApplication(obj)
	if len(errs) != 1 || errs[0].Detail != applicationNameMessage {
		t.Errorf("got %v, want one error saying %q", errs, applicationNameMessage)
	}
}

func TestValidateApplicationUpdate(t *testing.T) {
	type A = appstudio.Application
	cases := []tc[A]{
		{"unchanged", func(*A) {}, nil},
		{"display name and description may change", func(o *A) { o.Spec.DisplayName = "Renamed"; o.Spec.Description = "d" }, nil},
		// The webhook asked for a display name on create only.
		{"display name cleared", func(o *A) { o.Spec.DisplayName = "" }, nil},
		{"gitops repository branch", func(o *A) { o.Spec.GitOpsRepository.Branch = "devel" }, []apitesting.Want{apitesting.Forbidden("spec.gitOpsRepository")}},
		{"app model repository set", func(o *A) { o.Spec.AppModelRepository.URL = "https://github.com/org/model" },
			[]apitesting.Want{apitesting.Forbidden("spec.appModelRepository")}},
		nameImmutable(func(o *A, n string) { o.Name = n }),
	}
	runUpdate(t, validApplication, ValidateApplicationUpdate, cases)
}

func TestValidateApplicationStatusUpdate(t *testing.T) {
	type A = appstudio.Application
	cases := append(conditionCases("status.conditions", func(o *A, c []metav1.Condition) { o.Status.Conditions = c }),
		tc[A]{"devfile", func(o *A) { o.Status.Devfile = "schemaVersion: 2.2.0" }, nil},
		nameImmutable(func(o *A, n string) { o.Name = n }))
	runUpdate(t, validApplication, ValidateApplicationStatusUpdate, cases)
}

// Component

func validComponent() *appstudio.Component {
	return &appstudio.Component{
		ObjectMeta: meta("component-a"),
		Spec: appstudio.ComponentSpec{
			ComponentName: "component-a",
			Application:   "new-demo-app",
			Source:        appstudio.ComponentSource{GitSource: &appstudio.GitSource{URL: "https://github.com/org/a", Revision: "main"}},
			Replicas:      ptr.To[int32](1),
			TargetPort:    8080,
			Env:           []corev1.EnvVar{{Name: "LOG_LEVEL", Value: "info"}},
			Resources:     *resources("1", "500m"),
		},
	}
}

// componentSpecCases change what may change after create; the other fields' rules are in
// TestValidateComponent.
func componentSpecCases() []tc[appstudio.Component] {
	type C = appstudio.Component
	return []tc[C]{
		{"image instead of Git", func(o *C) { o.Spec.Source.GitSource = nil; o.Spec.ContainerImage = "quay.io/org/a:v1" }, nil},
		{"nudges another", func(o *C) { o.Spec.BuildNudgesRef = []string{"component-b"} }, nil},
		{"negative replicas", func(o *C) { o.Spec.Replicas = ptr.To[int32](-1) }, []apitesting.Want{apitesting.Invalid("spec.replicas")}},
		{"no replicas", func(o *C) { o.Spec.Replicas = nil; o.Spec.TargetPort = 0 }, nil},
		{"port out of range", func(o *C) { o.Spec.TargetPort = 70000 }, []apitesting.Want{apitesting.Invalid("spec.targetPort")}},
		{"request above limit", func(o *C) { o.Spec.Resources = *resources("1", "2") }, []apitesting.Want{apitesting.Invalid("spec.resources.requests[cpu]")}},
		{"unnamed variable", func(o *C) { o.Spec.Env = append(o.Spec.Env, corev1.EnvVar{Value: "x"}) }, []apitesting.Want{apitesting.Required("spec.env[1].name")}},
		{"nudges itself", func(o *C) { o.Spec.BuildNudgesRef = []string{"component-b", "component-a"} },
			[]apitesting.Want{apitesting.Invalid("spec.build-nudges-ref[1]")}},
	}
}

func TestValidateComponent(t *testing.T) {
	type C = appstudio.Component
	cases := append([]tc[C]{
		{"valid", func(*C) {}, nil},
		{"neither Git nor image", func(o *C) { o.Spec.Source.GitSource = nil }, []apitesting.Want{apitesting.Required("spec.source")}},
		{"name starts with a digit", func(o *C) { o.Name = "1st-component" }, []apitesting.Want{apitesting.Invalid("metadata.name")}},
		{"no namespace", func(o *C) { o.Namespace = "" }, []apitesting.Want{apitesting.Required("metadata.namespace")}},
		{"no component name", func(o *C) { o.Spec.ComponentName = "" }, []apitesting.Want{apitesting.Required("spec.componentName")}},
		{"component name not a label", func(o *C) { o.Spec.ComponentName = "Component_A" }, []apitesting.Want{apitesting.Invalid("spec.componentName")}},
		{"no application", func(o *C) { o.Spec.Application = "" }, []apitesting.Want{apitesting.Required("spec.application")}},
		{"application not a label", func(o *C) { o.Spec.Application = "new.demo.app" }, []apitesting.Want{apitesting.Invalid("spec.application")}},
		{"Git source without URL", func(o *C) { o.Spec.Source.GitSource.URL = "" }, []apitesting.Want{apitesting.Required("spec.source.git.url")}},
		{"relative Git URL", func(o *C) { o.Spec.Source.GitSource.URL = "github.com/org/a" }, []apitesting.Want{apitesting.Invalid("spec.source.git.url")}},
	}, componentSpecCases()...)
	run(t, validComponent, ValidateComponent, cases)
}

func TestComponentMessages(t *testing.T) {
	obj := validComponent()
	obj.Name = "1st-component"
	obj.Spec.Source.GitSource = nil
	errs := ValidateComponent(obj)
	want := []string{componentNameMessage, "a git source or an image source must be specified when creating a component"}
	if len(errs) != len(want) {
		t.Fatalf("got %v, want %d errors", errs, len(want))
	}
	for i, e := range errs {
		if e.Detail != want[i] {
			t.Errorf("error %d says %q, want %q", i, e.Detail, want[i])
		}
	}
}

func TestValidateComponentUpdate(t *testing.T) {
	type C = appstudio.Component
	cases := append([]tc[C]{
		{"unchanged", func(*C) {}, nil},
		{"Git revision may change", func(o *C) { o.Spec.Source.GitSource.Revision = "devel" }, nil},
		// As the webhook: the source may be dropped once a build has set the image.
		{"Git source dropped", func(o *C) { o.Spec.Source.GitSource = nil }, nil},
		{"component name", func(o *C) { o.Spec.ComponentName = "component-b" }, []apitesting.Want{apitesting.Forbidden("spec.componentName")}},
		{"application", func(o *C) { o.Spec.Application = "other-app" }, []apitesting.Want{apitesting.Forbidden("spec.application")}},
		{"Git URL", func(o *C) { o.Spec.Source.GitSource.URL = "https://github.com/org/b" }, []apitesting.Want{apitesting.Forbidden("spec.source.git.url")}},
		nameImmutable(func(o *C, n string) { o.Name = n }),
	}, componentSpecCases()...)
	runUpdate(t, validComponent, ValidateComponentUpdate, cases)
}

func TestComponentUpdateMessages(t *testing.T) {
	old := validComponent()
	obj := validComponent()
	obj.Spec.Application = "other-app"
	obj.Spec.Source.GitSource.URL = "https://github.com/org/b"
	errs := ValidateComponentUpdate(obj, old)
	want := []string{
		"application name cannot be updated to other-app",
		"git source cannot be updated to {URL:https://github.com/org/b Revision:main Context: DevfileURL: DockerfileURL:}",
	}
	if len(errs) != len(want) {
		t.Fatalf("got %v, want %d errors", errs, len(want))
	}
	for i, e := range errs {
		if e.Detail != want[i] {
			t.Errorf("error %d says %q, want %q", i, e.Detail, want[i])
		}
	}
}

func TestValidateComponentStatusUpdate(t *testing.T) {
	type C = appstudio.Component
	cases := append(conditionCases("status.conditions", func(o *C, c []metav1.Condition) { o.Status.Conditions = c }),
		tc[C]{"invalid spec is not checked", func(o *C) { o.Spec.ComponentName = "" }, nil},
		nameImmutable(func(o *C, n string) { o.Name = n }))
	runUpdate(t, validComponent, ValidateComponentStatusUpdate, cases)
}

// ComponentDetectionQuery

func validComponentDetectionQuery() *appstudio.ComponentDetectionQuery {
	return &appstudio.ComponentDetectionQuery{
		ObjectMeta: meta("detect"),
		Spec:       appstudio.ComponentDetectionQuerySpec{GitSource: appstudio.GitSource{URL: "https://github.com/org/a"}},
	}
}

func TestValidateComponentDetectionQuery(t *testing.T) {
	type Q = appstudio.ComponentDetectionQuery
	cases := append([]tc[Q]{
		{"valid", func(*Q) {}, nil},
		{"no URL", func(o *Q) { o.Spec.GitSource.URL = "" }, []apitesting.Want{apitesting.Required("spec.git.url")}},
	}, metaCases(func(o *Q, m metav1.ObjectMeta) { o.ObjectMeta = m })...)
	run(t, validComponentDetectionQuery, ValidateComponentDetectionQuery, cases)
}

func TestValidateComponentDetectionQueryUpdate(t *testing.T) {
	type Q = appstudio.ComponentDetectionQuery
	cases := []tc[Q]{
		{"unchanged", func(*Q) {}, nil},
		{"URL changes", func(o *Q) { o.Spec.GitSource.URL = "https://github.com/org/b" }, nil},
		{"no URL", func(o *Q) { o.Spec.GitSource.URL = "" }, []apitesting.Want{apitesting.Required("spec.git.url")}},
		nameImmutable(func(o *Q, n string) { o.Name = n }),
	}
	runUpdate(t, validComponentDetectionQuery, ValidateComponentDetectionQueryUpdate, cases)
}

func TestValidateComponentDetectionQueryStatusUpdate(t *testing.T) {
	type Q = appstudio.ComponentDetectionQuery
	cases := append(conditionCases("status.conditions", func(o *Q, c []metav1.Condition) { o.Status.Conditions = c }),
		tc[Q]{"components detected", func(o *Q) {
			o.Status.ComponentDetected = appstudio.ComponentDetectionMap{"a": {Language: "Python", ComponentStub: validComponent().Spec}}
		}, nil},
		nameImmutable(func(o *Q, n string) { o.Name = n }))
	runUpdate(t, validComponentDetectionQuery, ValidateComponentDetectionQueryStatusUpdate, cases)
}

// PromotionGate

func validPromotionGate() *appstudio.PromotionGate {
	return &appstudio.PromotionGate{
		ObjectMeta: meta("prod"),
		Spec: appstudio.PromotionGateSpec{
			Approvals: &appstudio.ApprovalGate{Required: 2},
			ChangeWindows: []appstudio.ChangeWindow{
				{Name: "office-hours", Type: appstudio.ChangeWindowAllow, Schedule: "0 9 * * 1-5", Duration: metav1.Duration{Duration: 8 * time.Hour},
					TimeZone: "Europe/Paris"},
				{Name: "friday-evening", Type: appstudio.ChangeWindowDeny, Schedule: "0 16 * * 5", Duration: metav1.Duration{Duration: time.Hour}},
			},
			Freezes:  []appstudio.Freeze{{Name: "year-end", Reason: "Year-end freeze", Until: metav1.NewTime(now.Add(24 * time.Hour))}},
			SoakTime: &metav1.Duration{Duration: 30 * time.Minute},
			Verification: &appstudio.Verification{
				JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
					Containers: []corev1.Container{{Name: "smoke", Image: "quay.io/org/smoke:1", Args: []string{"https://prod.example.com"}}},
				}}}},
				Timeout: &metav1.Duration{Duration: 5 * time.Minute},
			},
		},
	}
}

const podSpecPath = "spec.verification.jobTemplate.spec.template.spec."

func promotionGateSpecCases() []tc[appstudio.PromotionGate] {
	type G = appstudio.PromotionGate
	window := func(o *G) *appstudio.ChangeWindow { return &o.Spec.ChangeWindows[0] }
	pod := func(o *G) *corev1.PodSpec { return &o.Spec.Verification.JobTemplate.Spec.Template.Spec }
	d := func(d time.Duration) *metav1.Duration { return &metav1.Duration{Duration: d} }
	return []tc[G]{
		{"valid", func(*G) {}, nil},
		{"no gates", func(o *G) { o.Spec = appstudio.PromotionGateSpec{} }, nil},
		{"one approval", func(o *G) { o.Spec.Approvals.Required = 1 }, nil},
		{"ten approvals", func(o *G) { o.Spec.Approvals.Required = 10 }, nil},
		{"no approval", func(o *G) { o.Spec.Approvals.Required = 0 }, []apitesting.Want{apitesting.Invalid("spec.approvals.required")}},
		{"eleven approvals", func(o *G) { o.Spec.Approvals.Required = 11 }, []apitesting.Want{apitesting.Invalid("spec.approvals.required")}},
		{"window without name", func(o *G) { window(o).Name = "" }, []apitesting.Want{apitesting.Required("spec.changeWindows[0].name")}},
		{"window name not a label", func(o *G) { window(o).Name = "Office Hours" }, []apitesting.Want{apitesting.Invalid("spec.changeWindows[0].name")}},
		{"repeated window", func(o *G) { o.Spec.ChangeWindows[1].Name = "office-hours" },
			[]apitesting.Want{apitesting.Duplicate("spec.changeWindows[1].name")}},
		{"window without type", func(o *G) { window(o).Type = "" }, []apitesting.Want{apitesting.Required("spec.changeWindows[0].type")}},
		{"unknown window type", func(o *G) { window(o).Type = "allow" }, []apitesting.Want{apitesting.NotSupported("spec.changeWindows[0].type")}},
		{"descriptor", func(o *G) { window(o).Schedule = "@daily" }, nil},
		{"names of days and months", func(o *G) { window(o).Schedule = "30 6 1-7 JAN,JUL MON" }, nil},
		{"no schedule", func(o *G) { window(o).Schedule = " " }, []apitesting.Want{apitesting.Required("spec.changeWindows[0].schedule")}},
		{"six fields", func(o *G) { window(o).Schedule = "0 0 9 * * 1-5" }, []apitesting.Want{apitesting.Invalid("spec.changeWindows[0].schedule")}},
		{"out of range", func(o *G) { window(o).Schedule = "0 24 * * *" }, []apitesting.Want{apitesting.Invalid("spec.changeWindows[0].schedule")}},
		{"TZ in the schedule", func(o *G) { window(o).Schedule = "TZ=UTC 0 9 * * *" }, []apitesting.Want{apitesting.Invalid("spec.changeWindows[0].schedule")}},
		{"CRON_TZ in the schedule", func(o *G) { window(o).Schedule = "CRON_TZ=Europe/Paris 0 9 * * *" },
			[]apitesting.Want{apitesting.Invalid("spec.changeWindows[0].schedule")}},
		{"@every", func(o *G) { window(o).Schedule = "@every 1h" }, []apitesting.Want{apitesting.Invalid("spec.changeWindows[0].schedule")}},
		{"one-minute window", func(o *G) { window(o).Duration.Duration = time.Minute }, nil},
		{"week-long window", func(o *G) { window(o).Duration.Duration = 168 * time.Hour }, nil},
		{"no duration", func(o *G) { window(o).Duration.Duration = 0 }, []apitesting.Want{apitesting.Invalid("spec.changeWindows[0].duration")}},
		{"too short", func(o *G) { window(o).Duration.Duration = 59 * time.Second }, []apitesting.Want{apitesting.Invalid("spec.changeWindows[0].duration")}},
		{"too long", func(o *G) { window(o).Duration.Duration = 169 * time.Hour }, []apitesting.Want{apitesting.Invalid("spec.changeWindows[0].duration")}},
		{"UTC", func(o *G) { window(o).TimeZone = "UTC" }, nil},
		{"unknown time zone", func(o *G) { window(o).TimeZone = "Mars/Olympus_Mons" }, []apitesting.Want{apitesting.Invalid("spec.changeWindows[0].timeZone")}},
		{"local time zone", func(o *G) { window(o).TimeZone = "Local" }, []apitesting.Want{apitesting.Invalid("spec.changeWindows[0].timeZone")}},
		{"freeze without name", func(o *G) { o.Spec.Freezes[0].Name = "" }, []apitesting.Want{apitesting.Required("spec.freezes[0].name")}},
		{"repeated freeze", func(o *G) { o.Spec.Freezes = append(o.Spec.Freezes, o.Spec.Freezes[0]) },
			[]apitesting.Want{apitesting.Duplicate("spec.freezes[1].name")}},
		{"freeze without reason", func(o *G) { o.Spec.Freezes[0].Reason = "" }, []apitesting.Want{apitesting.Required("spec.freezes[0].reason")}},
		{"reason of 1024 characters", func(o *G) { o.Spec.Freezes[0].Reason = strings.Repeat("é", 1024) }, nil},
		{"reason too long", func(o *G) { o.Spec.Freezes[0].Reason = strings.Repeat("x", 1025) }, []apitesting.Want{apitesting.TooLong("spec.freezes[0].reason")}},
		{"freeze without end", func(o *G) { o.Spec.Freezes[0].Until = metav1.Time{} }, []apitesting.Want{apitesting.Required("spec.freezes[0].until")}},
		{"expired freeze", func(o *G) { o.Spec.Freezes[0].Until = metav1.NewTime(now.Add(-time.Hour)) }, nil},
		{"no soak", func(o *G) { o.Spec.SoakTime = d(0) }, nil},
		{"day-long soak", func(o *G) { o.Spec.SoakTime = d(24 * time.Hour) }, nil},
		{"negative soak", func(o *G) { o.Spec.SoakTime = d(-time.Second) }, []apitesting.Want{apitesting.Invalid("spec.soakTime")}},
		{"soak too long", func(o *G) { o.Spec.SoakTime = d(25 * time.Hour) }, []apitesting.Want{apitesting.Invalid("spec.soakTime")}},
		{"default timeout", func(o *G) { o.Spec.Verification.Timeout = nil }, nil},
		{"shortest timeout", func(o *G) { o.Spec.Verification.Timeout = d(10 * time.Second) }, nil},
		{"timeout too short", func(o *G) { o.Spec.Verification.Timeout = d(9 * time.Second) },
			[]apitesting.Want{apitesting.Invalid("spec.verification.timeout")}},
		{"timeout too long", func(o *G) { o.Spec.Verification.Timeout = d(24*time.Hour + time.Second) },
			[]apitesting.Want{apitesting.Invalid("spec.verification.timeout")}},
		{"no containers", func(o *G) { pod(o).Containers = nil }, []apitesting.Want{apitesting.Required(podSpecPath + "containers")}},
		{"as the deployer", func(o *G) { pod(o).ServiceAccountName = "gitops-deployer" }, nil},
		{"as another account", func(o *G) { pod(o).ServiceAccountName = "default" },
			[]apitesting.Want{apitesting.Forbidden(podSpecPath + "serviceAccountName")}},
		{"as another account, the old field", func(o *G) { pod(o).DeprecatedServiceAccount = "builder" },
			[]apitesting.Want{apitesting.Forbidden(podSpecPath + "serviceAccount")}},
		{"never restarts", func(o *G) { pod(o).RestartPolicy = corev1.RestartPolicyNever }, nil},
		{"restarts on failure", func(o *G) { pod(o).RestartPolicy = corev1.RestartPolicyOnFailure }, nil},
		{"always restarts", func(o *G) { pod(o).RestartPolicy = corev1.RestartPolicyAlways },
			[]apitesting.Want{apitesting.NotSupported(podSpecPath + "restartPolicy")}},
	}
}

func TestValidatePromotionGate(t *testing.T) {
	type G = appstudio.PromotionGate
	set := func(o *G, m metav1.ObjectMeta) { o.ObjectMeta = m }
	cases := append(promotionGateSpecCases(),
		tc[G]{"no name", func(o *G) { set(o, metav1.ObjectMeta{Namespace: "jane"}) }, []apitesting.Want{apitesting.Required("metadata.name")}},
		tc[G]{"no namespace", func(o *G) { set(o, metav1.ObjectMeta{Name: "prod"}) }, []apitesting.Want{apitesting.Required("metadata.namespace")}},
		// Named after its Environment, whose name is a DNS-1123 label.
		tc[G]{"dotted name", func(o *G) { set(o, metav1.ObjectMeta{Name: "a.b", Namespace: "jane"}) }, []apitesting.Want{apitesting.Invalid("metadata.name")}},
	)
	run(t, validPromotionGate, ValidatePromotionGate, cases)
}

func TestValidatePromotionGateUpdate(t *testing.T) {
	type G = appstudio.PromotionGate
	cases := append(promotionGateSpecCases(),
		nameImmutable(func(o *G, n string) { o.Name = n }),
		tc[G]{"gates and freezes change", func(o *G) {
			o.Spec.Approvals = nil
			o.Spec.Freezes = append(o.Spec.Freezes, appstudio.Freeze{Name: "incident", Reason: "INC-42", Until: now})
		}, nil},
	)
	runUpdate(t, validPromotionGate, ValidatePromotionGateUpdate, cases)
}

func TestValidatePromotionGateStatusUpdate(t *testing.T) {
	type G = appstudio.PromotionGate
	promotion := func(run string, phase appstudio.GatePhase) appstudio.GatedPromotion {
		return appstudio.GatedPromotion{PromotionRun: run, Snapshot: "s", Phase: phase}
	}
	cases := []tc[G]{
		{"empty", func(*G) {}, nil},
		{"every phase", func(o *G) {
			for i, p := range []appstudio.GatePhase{appstudio.GatePhaseWaiting, appstudio.GatePhaseDeploying, appstudio.GatePhaseVerifying,
				appstudio.GatePhasePassed, appstudio.GatePhaseRejected, appstudio.GatePhaseRolledBack, appstudio.GatePhaseStopped} {
				o.Status.Promotions = append(o.Status.Promotions, promotion(fmt.Sprintf("run-%d", i), p))
			}
			o.Status.Promotions[0].Verification = &appstudio.VerificationStatus{Job: "prod-verify", Namespace: "jane-prod", StartTime: now}
		}, nil},
		{"two hundred promotions", func(o *G) {
			for i := range 200 {
				o.Status.Promotions = append(o.Status.Promotions, promotion(fmt.Sprintf("run-%d", i), appstudio.GatePhasePassed))
			}
		}, nil},
		{"two hundred and one promotions", func(o *G) {
			for i := range 201 {
				o.Status.Promotions = append(o.Status.Promotions, promotion(fmt.Sprintf("run-%d", i), appstudio.GatePhasePassed))
			}
		}, []apitesting.Want{apitesting.TooMany("status.promotions")}},
		{"no phase", func(o *G) { o.Status.Promotions = []appstudio.GatedPromotion{promotion("run", "")} },
			[]apitesting.Want{apitesting.Required("status.promotions[0].phase")}},
		{"unknown phase", func(o *G) { o.Status.Promotions = []appstudio.GatedPromotion{promotion("run", "Failed")} },
			[]apitesting.Want{apitesting.NotSupported("status.promotions[0].phase")}},
		{"no run", func(o *G) { o.Status.Promotions = []appstudio.GatedPromotion{promotion("", "Waiting")} },
			[]apitesting.Want{apitesting.Required("status.promotions[0].promotionRun")}},
		{"invalid spec is not checked", func(o *G) { o.Spec.Approvals.Required = 0 }, nil},
		nameImmutable(func(o *G, n string) { o.Name = n }),
	}
	runUpdate(t, validPromotionGate, ValidatePromotionGateStatusUpdate, cases)
}

// The messages say what to do instead.
func TestPromotionGateMessages(t *testing.T) {
	g := validPromotionGate()
	g.Spec.ChangeWindows[0].Schedule = "CRON_TZ=Europe/Paris 0 9 * * *"
	g.Spec.Verification.JobTemplate.Spec.Template.Spec.ServiceAccountName = "default"
	errs := ValidatePromotionGate(g)
	if len(errs) != 2 || !strings.Contains(errs[0].Detail, "set timeZone instead") ||
		!strings.Contains(errs[1].Detail, "the agent sets it to gitops-deployer") {
		t.Errorf("got %v", errs)
	}
}

// PromotionApproval

func validPromotionApproval() *appstudio.PromotionApproval {
	return &appstudio.PromotionApproval{
		ObjectMeta: meta("shop-42-prod-alice"),
		Spec: appstudio.PromotionApprovalSpec{
			PromotionRun: "shop-42.dev-auto",
			Environment:  "prod",
			Decision:     appstudio.ApprovalApprove,
			Username:     "alice",
			UID:          "a1",
			Groups:       []string{"system:authenticated"},
		},
	}
}

func TestValidatePromotionApproval(t *testing.T) {
	type A = appstudio.PromotionApproval
	cases := append([]tc[A]{
		{"valid", func(*A) {}, nil},
		{"comment", func(o *A) { o.Spec.Comment = "LGTM" }, nil},
		{"reject", func(o *A) { o.Spec.Decision, o.Spec.Comment = appstudio.ApprovalReject, "breaks checkout" }, nil},
		{"override", func(o *A) { o.Spec.Decision, o.Spec.Comment = appstudio.ApprovalOverride, "INC-42 hotfix" }, nil},
		// Who made it is the server's to set; validation does not ask for it.
		{"no user", func(o *A) { o.Spec.Username, o.Spec.UID, o.Spec.Groups = "", "", nil }, nil},
		{"no run", func(o *A) { o.Spec.PromotionRun = "" }, []apitesting.Want{apitesting.Required("spec.promotionRun")}},
		{"invalid run", func(o *A) { o.Spec.PromotionRun = "Shop 42" }, []apitesting.Want{apitesting.Invalid("spec.promotionRun")}},
		{"no environment", func(o *A) { o.Spec.Environment = "" }, []apitesting.Want{apitesting.Required("spec.environment")}},
		{"invalid environment", func(o *A) { o.Spec.Environment = "pro.d" }, []apitesting.Want{apitesting.Invalid("spec.environment")}},
		{"no decision", func(o *A) { o.Spec.Decision = "" }, []apitesting.Want{apitesting.Required("spec.decision")}},
		{"unknown decision", func(o *A) { o.Spec.Decision = "approve" }, []apitesting.Want{apitesting.NotSupported("spec.decision")}},
		{"reject without comment", func(o *A) { o.Spec.Decision = appstudio.ApprovalReject }, []apitesting.Want{apitesting.Required("spec.comment")}},
		{"override with blank comment", func(o *A) { o.Spec.Decision, o.Spec.Comment = appstudio.ApprovalOverride, "  " },
			[]apitesting.Want{apitesting.Required("spec.comment")}},
		{"comment too long", func(o *A) { o.Spec.Comment = strings.Repeat("x", 1025) }, []apitesting.Want{apitesting.TooLong("spec.comment")}},
		{"reject comment too long", func(o *A) { o.Spec.Decision, o.Spec.Comment = appstudio.ApprovalReject, strings.Repeat("x", 1025) },
			[]apitesting.Want{apitesting.TooLong("spec.comment")}},
	}, metaCases(func(o *A, m metav1.ObjectMeta) { o.ObjectMeta = m })...)
	run(t, validPromotionApproval, ValidatePromotionApproval, cases)
}

func TestValidatePromotionApprovalUpdate(t *testing.T) {
	type A = appstudio.PromotionApproval
	cases := []tc[A]{
		{"unchanged", func(*A) {}, nil},
		{"labels may change", func(o *A) { o.Labels = map[string]string{"team": "a"} }, nil},
		{"decision", func(o *A) { o.Spec.Decision = appstudio.ApprovalOverride }, []apitesting.Want{apitesting.Forbidden("spec")}},
		{"comment", func(o *A) { o.Spec.Comment = "changed my mind" }, []apitesting.Want{apitesting.Forbidden("spec")}},
		{"user", func(o *A) { o.Spec.Username = "mallory" }, []apitesting.Want{apitesting.Forbidden("spec")}},
		nameImmutable(func(o *A, n string) { o.Name = n }),
	}
	runUpdate(t, validPromotionApproval, ValidatePromotionApprovalUpdate, cases)
	old, obj := validPromotionApproval(), validPromotionApproval()
	obj.Spec.Environment = "staging"
	if errs := ValidatePromotionApprovalUpdate(obj, old); len(errs) != 1 || errs[0].Detail != "a PromotionApproval is immutable" {
		t.Errorf("got %v", errs)
	}
}

// EnvironmentHold

func validEnvironmentHold() *appstudio.EnvironmentHold {
	return &appstudio.EnvironmentHold{
		ObjectMeta: meta("prod"),
		Spec:       appstudio.EnvironmentHoldSpec{Reason: "Rolled back: verification failed", Snapshot: "shop-41", PromotionRun: "shop-42.dev-auto"},
	}
}

func environmentHoldSpecCases() []tc[appstudio.EnvironmentHold] {
	type H = appstudio.EnvironmentHold
	return []tc[H]{
		{"valid", func(*H) {}, nil},
		{"reason only", func(o *H) { o.Spec.Snapshot, o.Spec.PromotionRun = "", "" }, nil},
		{"no reason", func(o *H) { o.Spec.Reason = "" }, []apitesting.Want{apitesting.Required("spec.reason")}},
		{"reason too long", func(o *H) { o.Spec.Reason = strings.Repeat("x", 1025) }, []apitesting.Want{apitesting.TooLong("spec.reason")}},
		{"invalid snapshot", func(o *H) { o.Spec.Snapshot = "Shop 41" }, []apitesting.Want{apitesting.Invalid("spec.snapshot")}},
		{"invalid run", func(o *H) { o.Spec.PromotionRun = "-run" }, []apitesting.Want{apitesting.Invalid("spec.promotionRun")}},
	}
}

func TestValidateEnvironmentHold(t *testing.T) {
	type H = appstudio.EnvironmentHold
	set := func(o *H, m metav1.ObjectMeta) { o.ObjectMeta = m }
	cases := append(environmentHoldSpecCases(),
		tc[H]{"no name", func(o *H) { set(o, metav1.ObjectMeta{Namespace: "jane"}) }, []apitesting.Want{apitesting.Required("metadata.name")}},
		tc[H]{"dotted name", func(o *H) { set(o, metav1.ObjectMeta{Name: "a.b", Namespace: "jane"}) }, []apitesting.Want{apitesting.Invalid("metadata.name")}},
	)
	run(t, validEnvironmentHold, ValidateEnvironmentHold, cases)
}

func TestValidateEnvironmentHoldUpdate(t *testing.T) {
	type H = appstudio.EnvironmentHold
	cases := append(environmentHoldSpecCases(),
		nameImmutable(func(o *H, n string) { o.Name = n }),
		tc[H]{"reason changes", func(o *H) { o.Spec.Reason = "held for the audit" }, nil},
	)
	runUpdate(t, validEnvironmentHold, ValidateEnvironmentHoldUpdate, cases)
}
