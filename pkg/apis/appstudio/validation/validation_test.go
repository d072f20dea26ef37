package validation

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/gitops-service/gitops-service/pkg/apis/appstudio"
)

// want is one expected error: its type and its exact field path.
type want struct {
	typ   field.ErrorType
	field string
}

func required(f string) want     { return want{field.ErrorTypeRequired, f} }
func invalid(f string) want      { return want{field.ErrorTypeInvalid, f} }
func notSupported(f string) want { return want{field.ErrorTypeNotSupported, f} }
func duplicate(f string) want    { return want{field.ErrorTypeDuplicate, f} }
func forbidden(f string) want    { return want{field.ErrorTypeForbidden, f} }

// expectErrors compares the whole list, so an extra error fails as much as a missing one.
func expectErrors(t *testing.T, errs field.ErrorList, wants ...want) {
	t.Helper()
	got := make([]string, 0, len(errs))
	for _, e := range errs {
		got = append(got, fmt.Sprintf("%s %s", e.Type, e.Field))
	}
	exp := make([]string, 0, len(wants))
	for _, w := range wants {
		exp = append(exp, fmt.Sprintf("%s %s", w.typ, w.field))
	}
	sort.Strings(got)
	sort.Strings(exp)
	if strings.Join(got, "\n") != strings.Join(exp, "\n") {
		t.Errorf("errors:\n  %s\nwant:\n  %s\nfull: %v", strings.Join(got, "\n  "), strings.Join(exp, "\n  "), errs)
	}
}

// tc is a case of a table: a change to a valid object and the errors it must cause.
type tc[T any] struct {
	name   string
	mutate func(*T)
	want   []want
}

// run validates a mutated copy of a valid object with each table case.
func run[T any](t *testing.T, valid func() *T, validate func(*T) field.ErrorList, cases []tc[T]) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			obj := valid()
			c.mutate(obj)
			expectErrors(t, validate(obj), c.want...)
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
			expectErrors(t, validate(obj, old), c.want...)
		})
	}
}

func meta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: "jane", ResourceVersion: "1"}
}

// metaCases are the metadata rules of namespaced kinds named by DNS subdomains.
func metaCases[T any](set func(*T, metav1.ObjectMeta)) []tc[T] {
	return []tc[T]{
		{"no name", func(o *T) { set(o, metav1.ObjectMeta{Namespace: "jane"}) }, []want{required("metadata.name")}},
		{"no namespace", func(o *T) { set(o, metav1.ObjectMeta{Name: "x"}) }, []want{required("metadata.namespace")}},
		{"name not a subdomain", func(o *T) { set(o, metav1.ObjectMeta{Name: "Bad_Name", Namespace: "jane"}) }, []want{invalid("metadata.name")}},
		{"dotted name", func(o *T) { set(o, metav1.ObjectMeta{Name: "a.b", Namespace: "jane"}) }, nil},
	}
}

// nameImmutable is the metadata rule every update shares.
func nameImmutable[T any](set func(*T, string)) tc[T] {
	return tc[T]{"name is immutable", func(o *T) { set(o, "renamed") }, []want{invalid("metadata.name")}}
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
		{path + " repeated type", func(o *T) { set(o, []metav1.Condition{good, good}) }, []want{duplicate(path + "[1].type")}},
		{path + " no reason", func(o *T) {
			set(o, []metav1.Condition{{Type: "Reconciled", Status: metav1.ConditionTrue, LastTransitionTime: now}})
		}, []want{required(path + "[0].reason")}},
		{path + " unknown status", func(o *T) {
			set(o, []metav1.Condition{{Type: "Reconciled", Status: "Yes", Reason: "Reconciled", LastTransitionTime: now}})
		}, []want{notSupported(path + "[0].status")}},
		{path + " no transition time", func(o *T) {
			set(o, []metav1.Condition{{Type: "Reconciled", Status: metav1.ConditionTrue, Reason: "Reconciled"}})
		}, []want{required(path + "[0].lastTransitionTime")}},
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
		{"unknown type", func(o *E) { o.Spec.Type = "Production" }, []want{notSupported("spec.type")}},
		{"no display name", func(o *E) { o.Spec.DisplayName = "" }, []want{required("spec.displayName")}},
		{"no deployment strategy", func(o *E) { o.Spec.DeploymentStrategy = "" }, []want{required("spec.deploymentStrategy")}},
		{"unknown deployment strategy", func(o *E) { o.Spec.DeploymentStrategy = "Automated" }, []want{notSupported("spec.deploymentStrategy")}},
		{"parent", func(o *E) { o.Spec.ParentEnvironment = "dev"; o.Spec.Tags = []string{"staging"} }, nil},
		{"invalid parent", func(o *E) { o.Spec.ParentEnvironment = "Dev" }, []want{invalid("spec.parentEnvironment")}},
		{"env vars", func(o *E) {
			o.Spec.Configuration.Env = []appstudio.EnvVarPair{{Name: "My_STG_ENV", Value: "100"}, {Name: "other.var-1", Value: ""}}
		}, nil},
		{"env var without name", func(o *E) { o.Spec.Configuration.Env = []appstudio.EnvVarPair{{Value: "1"}} },
			[]want{required("spec.configuration.env[0].name")}},
		{"invalid env var name", func(o *E) { o.Spec.Configuration.Env = []appstudio.EnvVarPair{{Name: "A"}, {Name: "1ABC"}} },
			[]want{invalid("spec.configuration.env[1].name")}},
		{"repeated env var", func(o *E) { o.Spec.Configuration.Env = []appstudio.EnvVarPair{{Name: "A"}, {Name: "A"}} },
			[]want{duplicate("spec.configuration.env[1].name")}},
		{"claim", func(o *E) { o.Spec.Configuration.Target.DeploymentTargetClaim.ClaimName = "staging-dtc" }, nil},
		{"invalid claim", func(o *E) { o.Spec.Configuration.Target.DeploymentTargetClaim.ClaimName = "Staging DTC" },
			[]want{invalid("spec.configuration.target.deploymentTargetClaim.claimName")}},
		{"credentials", func(o *E) {
			c := withCredentials(o)
			c.AllowInsecureSkipTLSVerify = true
			c.Namespaces = []string{"a", "b"}
			c.ClusterResources = true
		}, nil},
		{"claim and credentials", func(o *E) {
			withCredentials(o)
			o.Spec.Configuration.Target.DeploymentTargetClaim.ClaimName = "staging-dtc"
		}, []want{forbidden("spec.unstableConfigurationFields")}},
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
		}, []want{required(credsPath + "ingressDomain")}},
		{"invalid ingress domain", func(o *E) { withCredentials(o).IngressDomain = "Apps_Example" },
			[]want{invalid(credsPath + "ingressDomain")}},
		{"unknown cluster type", func(o *E) {
			withCredentials(o)
			o.Spec.UnstableConfigurationFields.ClusterType = "EKS"
		}, []want{notSupported("spec.unstableConfigurationFields.clusterType")}},
		{"no target namespace", func(o *E) { withCredentials(o).TargetNamespace = "" },
			[]want{required(credsPath + "targetNamespace")}},
		{"invalid target namespace", func(o *E) { withCredentials(o).TargetNamespace = "My-Namespace" },
			[]want{invalid(credsPath + "targetNamespace")}},
		{"no API URL", func(o *E) { withCredentials(o).APIURL = "" },
			[]want{required(credsPath + "apiURL")}},
		{"http API URL", func(o *E) { withCredentials(o).APIURL = "http://api.example.com:6443" },
			[]want{invalid(credsPath + "apiURL")}},
		{"API URL with query", func(o *E) { withCredentials(o).APIURL = "https://api.example.com:6443?a=b" },
			[]want{invalid(credsPath + "apiURL")}},
		{"no credentials secret", func(o *E) { withCredentials(o).ClusterCredentialsSecret = "" },
			[]want{required(credsPath + "clusterCredentialsSecret")}},
		{"invalid credentials secret", func(o *E) { withCredentials(o).ClusterCredentialsSecret = "Secret" },
			[]want{invalid(credsPath + "clusterCredentialsSecret")}},
		{"invalid namespace", func(o *E) { withCredentials(o).Namespaces = []string{"ok", "not_ok"} },
			[]want{invalid(credsPath + "namespaces[1]")}},
		{"repeated namespace", func(o *E) { withCredentials(o).Namespaces = []string{"ok", "ok"} },
			[]want{duplicate(credsPath + "namespaces[1]")}},
		{"empty credentials", func(o *E) {
			o.Spec.UnstableConfigurationFields = &appstudio.UnstableEnvironmentConfiguration{}
		}, []want{required(credsPath + "targetNamespace"), required(credsPath + "apiURL"), required(credsPath + "clusterCredentialsSecret")}},
	}
}

func TestValidateEnvironment(t *testing.T) {
	type E = appstudio.Environment
	set := func(o *E, m metav1.ObjectMeta) { o.ObjectMeta = m }
	cases := append(environmentSpecCases(),
		tc[E]{"no name", func(o *E) { set(o, metav1.ObjectMeta{Namespace: "jane"}) }, []want{required("metadata.name")}},
		tc[E]{"no namespace", func(o *E) { set(o, metav1.ObjectMeta{Name: "x"}) }, []want{required("metadata.namespace")}},
		// The name goes into generated names and labels, so it must be a DNS-1123 label.
		tc[E]{"dotted name", func(o *E) { set(o, metav1.ObjectMeta{Name: "a.b", Namespace: "jane"}) }, []want{invalid("metadata.name")}},
		tc[E]{"upper-case name", func(o *E) { set(o, metav1.ObjectMeta{Name: "Staging", Namespace: "jane"}) }, []want{invalid("metadata.name")}},
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
		{"no application", func(o *S) { o.Spec.Application = "" }, []want{required("spec.application")}},
		{"invalid application", func(o *S) { o.Spec.Application = "New Demo App" }, []want{invalid("spec.application")}},
		{"component without name", func(o *S) { o.Spec.Components[1].Name = "" }, []want{required("spec.components[1].name")}},
		{"invalid component name", func(o *S) { o.Spec.Components[0].Name = "component.a" }, []want{invalid("spec.components[0].name")}},
		{"repeated component", func(o *S) { o.Spec.Components[1].Name = "component-a" }, []want{duplicate("spec.components[1].name")}},
		{"component without image", func(o *S) { o.Spec.Components[0].ContainerImage = "" }, []want{required("spec.components[0].containerImage")}},
		{"git source without URL", func(o *S) { o.Spec.Components[1].Source.GitSource.URL = "" }, []want{required("spec.components[1].source.git.url")}},
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
		{"application changes", func(o *S) { o.Spec.Application = "other-app" }, []want{invalid("spec.application")}},
		{"image changes", func(o *S) { o.Spec.Components[0].ContainerImage = "quay.io/x/y:z" }, []want{forbidden("spec.components")}},
		{"git revision changes", func(o *S) { o.Spec.Components[1].Source.GitSource.Revision = "dev" }, []want{forbidden("spec.components")}},
		{"component added", func(o *S) {
			o.Spec.Components = append(o.Spec.Components, appstudio.SnapshotComponent{Name: "c", ContainerImage: "i"})
		}, []want{forbidden("spec.components")}},
		{"components removed", func(o *S) { o.Spec.Components = nil }, []want{forbidden("spec.components")}},
		{"both change", func(o *S) { o.Spec.Application = "other-app"; o.Spec.Components = nil },
			[]want{invalid("spec.application"), forbidden("spec.components")}},
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
		{"no application", func(o *B) { o.Spec.Application = "" }, []want{required("spec.application")}},
		{"invalid application", func(o *B) { o.Spec.Application = "App_A" }, []want{invalid("spec.application")}},
		{"no environment", func(o *B) { o.Spec.Environment = "" }, []want{required("spec.environment")}},
		// Environment names are DNS-1123 labels.
		{"dotted environment", func(o *B) { o.Spec.Environment = "stag.ing" }, []want{invalid("spec.environment")}},
		{"no snapshot", func(o *B) { o.Spec.Snapshot = "" }, []want{required("spec.snapshot")}},
		{"invalid snapshot", func(o *B) { o.Spec.Snapshot = "My Snapshot" }, []want{invalid("spec.snapshot")}},
		{"component without name", func(o *B) { o.Spec.Components[1].Name = "" }, []want{required("spec.components[1].name")}},
		{"invalid component name", func(o *B) { o.Spec.Components[1].Name = "Component-B" }, []want{invalid("spec.components[1].name")}},
		{"repeated component", func(o *B) { o.Spec.Components[1].Name = "component-a" }, []want{duplicate("spec.components[1].name")}},
		{"zero replicas", func(o *B) { o.Spec.Components[0].Configuration.Replicas = ptr.To[int32](0) }, nil},
		{"negative replicas", func(o *B) { o.Spec.Components[0].Configuration.Replicas = ptr.To[int32](-1) }, []want{invalid(comp0 + "replicas")}},
		{"env var without name", func(o *B) { o.Spec.Components[0].Configuration.Env[0].Name = "" }, []want{required(comp0 + "env[0].name")}},
		{"invalid env var", func(o *B) { o.Spec.Components[0].Configuration.Env[0].Name = "A=B" }, []want{invalid(comp0 + "env[0].name")}},
		{"repeated env var", func(o *B) {
			o.Spec.Components[0].Configuration.Env = append(o.Spec.Components[0].Configuration.Env, appstudio.EnvVarPair{Name: "My_STG_ENV"})
		}, []want{duplicate(comp0 + "env[1].name")}},
		{"resources", func(o *B) { o.Spec.Components[0].Configuration.Resources = resources("500m", "250m") }, nil},
		{"request equal to limit", func(o *B) { o.Spec.Components[0].Configuration.Resources = resources("1", "1000m") }, nil},
		{"request without limit", func(o *B) { o.Spec.Components[0].Configuration.Resources = resources("", "2") }, nil},
		{"negative limit", func(o *B) { o.Spec.Components[0].Configuration.Resources = resources("-1", "") },
			[]want{invalid(comp0 + "resources.limits[cpu]")}},
		{"negative request", func(o *B) { o.Spec.Components[0].Configuration.Resources = resources("", "-100m") },
			[]want{invalid(comp0 + "resources.requests[cpu]")}},
		{"request above limit", func(o *B) { o.Spec.Components[0].Configuration.Resources = resources("500m", "1") },
			[]want{invalid(comp0 + "resources.requests[cpu]")}},
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
		tc[B]{"application changes", func(o *B) { o.Spec.Application = "other-app" }, []want{invalid("spec.application")}},
		tc[B]{"environment changes", func(o *B) { o.Spec.Environment = "prod" }, []want{invalid("spec.environment")}},
		tc[B]{"application cleared", func(o *B) { o.Spec.Application = "" },
			[]want{required("spec.application"), invalid("spec.application")}},
		nameImmutable(func(o *B, n string) { o.Name = n }),
	)
	// bindingSpecCases' "no application"/"no environment" change immutable fields as well.
	for i := range cases {
		switch cases[i].name {
		case "no application", "invalid application":
			cases[i].want = append(cases[i].want, invalid("spec.application"))
		case "no environment", "dotted environment":
			cases[i].want = append(cases[i].want, invalid("spec.environment"))
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
		}, []want{required("status.gitopsDeployments[1].componentName")}},
		tc[B]{"repeated deployment component", func(o *B) {
			o.Status.GitOpsDeployments = []appstudio.BindingStatusGitOpsDeployment{{ComponentName: "a"}, {ComponentName: "a"}}
		}, []want{duplicate("status.gitopsDeployments[1].componentName")}},
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
		{"no snapshot", func(o *P) { o.Spec.Snapshot = "" }, []want{required("spec.snapshot")}},
		{"invalid snapshot", func(o *P) { o.Spec.Snapshot = "My Snapshot" }, []want{invalid("spec.snapshot")}},
		{"no application", func(o *P) { o.Spec.Application = "" }, []want{required("spec.application")}},
		{"invalid application", func(o *P) { o.Spec.Application = "appA" }, []want{invalid("spec.application")}},
		{"no target", func(o *P) { o.Spec.ManualPromotion.TargetEnvironment = "" },
			[]want{required("spec.manualPromotion.targetEnvironment")}},
		{"invalid target", func(o *P) { o.Spec.ManualPromotion.TargetEnvironment = "stag.ing" },
			[]want{invalid("spec.manualPromotion.targetEnvironment")}},
		{"automated only", func(o *P) {
			o.Spec.ManualPromotion.TargetEnvironment = ""
			o.Spec.AutomatedPromotion.InitialEnvironment = "staging"
		}, []want{forbidden("spec.automatedPromotion.initialEnvironment")}},
		{"manual and automated", func(o *P) { o.Spec.AutomatedPromotion.InitialEnvironment = "staging" },
			[]want{forbidden("spec.automatedPromotion.initialEnvironment")}},
	}, metaCases(func(o *P, m metav1.ObjectMeta) { o.ObjectMeta = m })...)
	run(t, validPromotionRun, ValidatePromotionRun, cases)
}

func TestValidatePromotionRunUpdate(t *testing.T) {
	type P = appstudio.PromotionRun
	cases := []tc[P]{
		{"unchanged", func(*P) {}, nil},
		{"labels may change", func(o *P) { o.Labels = map[string]string{"appstudio.application": "appa"} }, nil},
		{"snapshot changes", func(o *P) { o.Spec.Snapshot = "other" }, []want{forbidden("spec")}},
		{"application changes", func(o *P) { o.Spec.Application = "other" }, []want{forbidden("spec")}},
		{"target changes", func(o *P) { o.Spec.ManualPromotion.TargetEnvironment = "prod" }, []want{forbidden("spec")}},
		{"automated added", func(o *P) { o.Spec.AutomatedPromotion.InitialEnvironment = "dev" }, []want{forbidden("spec")}},
		nameImmutable(func(o *P, n string) { o.Name = n }),
	}
	runUpdate(t, validPromotionRun, ValidatePromotionRunUpdate, cases)
}

func TestValidatePromotionRunStatusUpdate(t *testing.T) {
	type P = appstudio.PromotionRun
	errorCond := appstudio.PromotionRunCondition{Type: appstudio.PromotionRunConditionErrorOccurred, Status: appstudio.PromotionRunConditionStatusFalse, LastTransitionTime: &now}
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
		{"unknown state", func(o *P) { o.Status.State = "Completed" }, []want{notSupported("status.state")}},
		{"unknown result", func(o *P) {
			o.Status.State = appstudio.PromotionRunStateComplete
			o.Status.CompletionResult = "Partial"
		}, []want{notSupported("status.completionResult")}},
		{"result before completion", func(o *P) {
			o.Status.State = appstudio.PromotionRunStateWaiting
			o.Status.CompletionResult = appstudio.PromotionRunCompleteResultSuccess
		}, []want{invalid("status.completionResult")}},
		{"environment without status", func(o *P) {
			o.Status.EnvironmentStatus = []appstudio.PromotionRunEnvironmentStatus{{Step: 1, EnvironmentName: "staging"}}
		}, []want{required("status.environmentStatus[0].status")}},
		// The API document spells these in lower case; the real values are capitalised.
		{"environment with unknown status", func(o *P) {
			o.Status.EnvironmentStatus = []appstudio.PromotionRunEnvironmentStatus{
				{Step: 1, EnvironmentName: "dev", Status: appstudio.PromotionRunEnvironmentStatusSuccess},
				{Step: 2, EnvironmentName: "staging", Status: "success"},
			}
		}, []want{notSupported("status.environmentStatus[1].status")}},
		{"condition without type", func(o *P) {
			o.Status.Conditions = []appstudio.PromotionRunCondition{{Status: appstudio.PromotionRunConditionStatusTrue}}
		}, []want{required("status.conditions[0].type")}},
		{"condition with unknown type", func(o *P) {
			o.Status.Conditions = []appstudio.PromotionRunCondition{{Type: "Failed", Status: appstudio.PromotionRunConditionStatusTrue}}
		}, []want{notSupported("status.conditions[0].type")}},
		{"repeated condition", func(o *P) { o.Status.Conditions = []appstudio.PromotionRunCondition{errorCond, errorCond} },
			[]want{duplicate("status.conditions[1].type")}},
		{"condition without status", func(o *P) {
			o.Status.Conditions = []appstudio.PromotionRunCondition{{Type: appstudio.PromotionRunConditionErrorOccurred}}
		}, []want{required("status.conditions[0].status")}},
		{"condition with unknown status", func(o *P) {
			o.Status.Conditions = []appstudio.PromotionRunCondition{{Type: appstudio.PromotionRunConditionErrorOccurred, Status: "true"}}
		}, []want{notSupported("status.conditions[0].status")}},
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
		{"no class", func(o *D) { o.Spec.DeploymentTargetClassName = "" }, []want{required("spec.deploymentTargetClassName")}},
		{"invalid class", func(o *D) { o.Spec.DeploymentTargetClassName = "Isolation Level" }, []want{invalid("spec.deploymentTargetClassName")}},
		{"invalid namespace", func(o *D) { o.Spec.KubernetesClusterCredentials.DefaultNamespace = "a.b" }, []want{invalid(creds + "defaultNamespace")}},
		{"no API URL", func(o *D) { o.Spec.KubernetesClusterCredentials.APIURL = "" }, []want{required(creds + "apiURL")}},
		{"http API URL", func(o *D) { o.Spec.KubernetesClusterCredentials.APIURL = "http://api.example.com" }, []want{invalid(creds + "apiURL")}},
		{"API URL with query", func(o *D) { o.Spec.KubernetesClusterCredentials.APIURL = "https://api.example.com?x" }, []want{invalid(creds + "apiURL")}},
		{"no secret", func(o *D) { o.Spec.KubernetesClusterCredentials.ClusterCredentialsSecret = "" }, []want{required(creds + "clusterCredentialsSecret")}},
		{"invalid secret", func(o *D) { o.Spec.KubernetesClusterCredentials.ClusterCredentialsSecret = "S" }, []want{invalid(creds + "clusterCredentialsSecret")}},
		{"invalid claim", func(o *D) { o.Spec.ClaimRef = "prod_dtc" }, []want{invalid("spec.claimRef")}},
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
		tc[D]{"unknown phase", func(o *D) { o.Status.Phase = "Lost" }, []want{notSupported("status.phase")}},
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
		{"invalid class", func(o *C) { o.Spec.DeploymentTargetClassName = "Bad Class" }, []want{invalid("spec.deploymentTargetClassName")}},
		{"invalid target", func(o *C) { o.Spec.TargetName = "prod_dt" }, []want{invalid("spec.targetName")}},
	}
}

func TestValidateDeploymentTargetClaim(t *testing.T) {
	type C = appstudio.DeploymentTargetClaim
	run(t, validDeploymentTargetClaim, ValidateDeploymentTargetClaim,
		append(deploymentTargetClaimSpecCases(), metaCases(func(o *C, m metav1.ObjectMeta) { o.ObjectMeta = m })...))
}

func TestValidateDeploymentTargetClaimUpdate(t *testing.T) {
	type C = appstudio.DeploymentTargetClaim
	runUpdate(t, validDeploymentTargetClaim, ValidateDeploymentTargetClaimUpdate,
		append(deploymentTargetClaimSpecCases(), nameImmutable(func(o *C, n string) { o.Name = n })))
}

func TestValidateDeploymentTargetClaimStatusUpdate(t *testing.T) {
	type C = appstudio.DeploymentTargetClaim
	cases := append(conditionCases("status.conditions", func(o *C, c []metav1.Condition) { o.Status.Conditions = c }),
		tc[C]{"lost", func(o *C) { o.Status.Phase = appstudio.DeploymentTargetClaimPhaseLost }, nil},
		tc[C]{"unknown phase", func(o *C) { o.Status.Phase = "Released" }, []want{notSupported("status.phase")}},
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
		{"no provisioner", func(o *K) { o.Spec.Provisioner = "" }, []want{required("spec.provisioner")}},
		{"invalid provisioner", func(o *K) { o.Spec.Provisioner = "example.com/a/b" }, []want{invalid("spec.provisioner")}},
		{"no reclaim policy", func(o *K) { o.Spec.ReclaimPolicy = "" }, []want{required("spec.reclaimPolicy")}},
		{"unknown reclaim policy", func(o *K) { o.Spec.ReclaimPolicy = "Recycle" }, []want{notSupported("spec.reclaimPolicy")}},
	}
}

func TestValidateDeploymentTargetClass(t *testing.T) {
	type K = appstudio.DeploymentTargetClass
	cases := append(deploymentTargetClassSpecCases(),
		tc[K]{"no name", func(o *K) { o.Name = "" }, []want{required("metadata.name")}},
		// The class is cluster-scoped.
		tc[K]{"namespaced", func(o *K) { o.Namespace = "jane" }, []want{forbidden("metadata.namespace")}},
		tc[K]{"invalid name", func(o *K) { o.Name = "Isolation" }, []want{invalid("metadata.name")}},
	)
	run(t, validDeploymentTargetClass, ValidateDeploymentTargetClass, cases)
}

func TestValidateDeploymentTargetClassUpdate(t *testing.T) {
	type K = appstudio.DeploymentTargetClass
	runUpdate(t, validDeploymentTargetClass, ValidateDeploymentTargetClassUpdate,
		append(deploymentTargetClassSpecCases(), nameImmutable(func(o *K, n string) { o.Name = n })))
}
