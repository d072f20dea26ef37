package bench

import (
	"context"
	"testing"
	"time"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	gitopsv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
)

func ms(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }

func TestPercentile(t *testing.T) {
	var hundred []time.Duration
	for i := 1; i <= 100; i++ {
		hundred = append(hundred, ms(float64(i)))
	}
	for _, tc := range []struct {
		name   string
		sorted []time.Duration
		p      float64
		want   time.Duration
	}{
		{"empty", nil, 50, 0},
		{"single", []time.Duration{ms(7)}, 99, ms(7)},
		{"min", hundred, 0, ms(1)},
		{"max", hundred, 100, ms(100)},
		{"median of even count interpolates", []time.Duration{ms(1), ms(2), ms(3), ms(4)}, 50, ms(2.5)},
		{"median of odd count", []time.Duration{ms(1), ms(2), ms(10)}, 50, ms(2)},
		{"p90 of 1..100", hundred, 90, ms(90.1)},
		{"p99 of 1..100", hundred, 99, ms(99.01)},
		{"p99 of two", []time.Duration{ms(10), ms(20)}, 99, ms(19.9)},
	} {
		if got := Percentile(tc.sorted, tc.p); got != tc.want {
			t.Errorf("%s: Percentile(p%v) = %v, want %v", tc.name, tc.p, got, tc.want)
		}
	}
}

func TestSummarize(t *testing.T) {
	var s Samples
	s.Merge(Samples{Latencies: []time.Duration{ms(30), ms(10)}, Wall: time.Second})
	s.Merge(Samples{Latencies: []time.Duration{ms(20), ms(40)}, Errors: 1, Wall: time.Second})
	sum := s.Summarize()
	if sum.Ops != 4 || sum.Errors != 1 || sum.Wall != 2*time.Second {
		t.Fatalf("counts: %+v", sum)
	}
	if sum.Throughput != 2 {
		t.Errorf("throughput = %v, want 2 ops/s", sum.Throughput)
	}
	if sum.P50 != ms(25) || sum.Max != ms(40) {
		t.Errorf("p50 = %v max = %v, want 25ms and 40ms", sum.P50, sum.Max)
	}
	if s.Latencies[0] != ms(30) {
		t.Errorf("Summarize reordered the samples")
	}
}

func TestGitOpsDeploymentCRDIsStructuralAndValid(t *testing.T) {
	crd, err := GitOpsDeploymentCRD("bench.gitops-service.io")
	if err != nil {
		t.Fatal(err)
	}
	v := crd.Spec.Versions[0]
	schema := v.Schema.OpenAPIV3Schema

	// The parts of the API the benchmark relies on are in the schema.
	for _, path := range [][]string{
		{"spec", "source", "repoURL"},
		{"spec", "type"},
		{"status", "sync", "status"},
		{"status", "health", "status"},
		{"status", "reconciledState", "source", "branch"},
		{"status", "operationState", "syncResult", "managedNamespaceMetadata", "labels"},
	} {
		s := *schema
		for _, name := range path {
			p, ok := s.Properties[name]
			if !ok {
				t.Fatalf("schema has no %v (stopped at %q)", path, name)
			}
			s = p
		}
	}
	if got := schema.Properties["metadata"]; got.Type != "object" || len(got.Properties) != 0 {
		t.Errorf("metadata schema = %+v, want only type: object", got)
	}
	spec := schema.Properties["spec"]
	if len(spec.Required) != 2 || spec.Required[0] != "source" || spec.Required[1] != "type" {
		t.Errorf("spec.required = %v, want [source type]", spec.Required)
	}
	conditions := schema.Properties["status"].Properties["conditions"]
	if conditions.XListType == nil || *conditions.XListType != "map" || len(conditions.XListMapKeys) != 1 ||
		conditions.XListMapKeys[0] != "type" {
		t.Errorf("status.conditions list type = %v keys %v, want map keyed by type", conditions.XListType, conditions.XListMapKeys)
	}
	labels := schema.Properties["status"].Properties["operationState"].Properties["syncResult"].
		Properties["managedNamespaceMetadata"].Properties["labels"]
	if labels.AdditionalProperties == nil || labels.AdditionalProperties.Schema == nil ||
		labels.AdditionalProperties.Schema.Type != "string" {
		t.Errorf("labels additionalProperties = %+v, want string values", labels.AdditionalProperties)
	}
	started := schema.Properties["status"].Properties["operationState"].Properties["startedAt"]
	if started.Type != "string" || started.Format != "date-time" {
		t.Errorf("metav1.Time = %s/%s, want string/date-time", started.Type, started.Format)
	}
	if v.Subresources == nil || v.Subresources.Status == nil {
		t.Error("no status subresource")
	}
	if len(v.AdditionalPrinterColumns) != 2 || v.AdditionalPrinterColumns[0].JSONPath != ".status.sync.status" ||
		v.AdditionalPrinterColumns[1].JSONPath != ".status.health.status" {
		t.Errorf("printer columns = %+v", v.AdditionalPrinterColumns)
	}

	// Structural, as the apiserver requires of every v1 CRD schema.
	var internalSchema apiextensions.JSONSchemaProps
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(schema, &internalSchema, nil); err != nil {
		t.Fatal(err)
	}
	structural, err := structuralschema.NewStructural(&internalSchema)
	if err != nil {
		t.Fatalf("NewStructural: %v", err)
	}
	if errs := structuralschema.ValidateStructural(field.NewPath("openAPIV3Schema"), structural); len(errs) > 0 {
		t.Fatalf("not structural: %v", errs.ToAggregate())
	}

	// And the whole CRD passes the apiextensions-apiserver's create validation.
	var internal apiextensions.CustomResourceDefinition
	if err := apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(crd, &internal, nil); err != nil {
		t.Fatal(err)
	}
	internal.Status.StoredVersions = []string{"v1alpha1"} // what the registry sets on create
	if errs := validation.ValidateCustomResourceDefinition(context.Background(), &internal); len(errs) > 0 {
		t.Fatalf("CRD does not validate: %v", errs.ToAggregate())
	}
}

func TestSchemaFromOpenAPIRefusesUnknownDefinition(t *testing.T) {
	if _, err := SchemaFromOpenAPI(OpenAPIDefinitions(), "no.such/Type"); err == nil {
		t.Fatal("expected an error for an unknown definition")
	}
}

func TestParseProcStatus(t *testing.T) {
	m, err := ParseProcStatus("Name:\tgitops-apiserver\nVmPeak:\t 2000 kB\nVmHWM:\t  265100 kB\nVmRSS:\t  243300 kB\nThreads:\t12\n")
	if err != nil {
		t.Fatal(err)
	}
	if m.HWM != 265100*1024 || m.RSS != 243300*1024 {
		t.Errorf("got %+v", m)
	}
	if _, err := ParseProcStatus("Name:\tx\n"); err == nil {
		t.Error("expected an error without VmRSS/VmHWM")
	}
}

func TestParseMetrics(t *testing.T) {
	text := `# HELP etcd_mvcc_db_total_size_in_bytes Total size of the underlying database physically allocated in bytes.
# TYPE etcd_mvcc_db_total_size_in_bytes gauge
etcd_mvcc_db_total_size_in_bytes 3.9452672e+07
etcd_mvcc_db_total_size_in_use_in_bytes 3.7e+07
etcd_mvcc_db_total_size_in_bytes_other{x="y"} 1
`
	got, err := ParseMetrics(text, "etcd_mvcc_db_total_size_in_use_in_bytes", "etcd_mvcc_db_total_size_in_bytes")
	if err != nil {
		t.Fatal(err)
	}
	if got[0] != 3.7e7 || got[1] != 39452672 {
		t.Errorf("got %v", got)
	}
	if _, err := ParseMetrics(text, "missing"); err == nil {
		t.Error("expected an error for a missing metric")
	}
}

// Targets in protobuf write the same objects as those in JSON: the typed status is the
// unstructured one field for field, and so is the object created from newObject.
func TestTypedObjectsMatchTheUnstructuredOnes(t *testing.T) {
	target := &Target{GVR: gitopsv1alpha1.SchemeGroupVersion.WithResource("gitopsdeployments"), Kind: "GitOpsDeployment", Namespace: "ns"}
	u := target.newObject(7)
	typed := &gitopsv1alpha1.GitOpsDeployment{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, typed); err != nil {
		t.Fatal(err)
	}
	setStatus(u, "abc")
	setTypedStatus(typed, "abc")
	back, err := runtime.DefaultUnstructuredConverter.ToUnstructured(typed)
	if err != nil {
		t.Fatal(err)
	}
	delete(back["metadata"].(map[string]interface{}), "creationTimestamp")
	if !equality.Semantic.DeepEqual(back, u.Object) {
		t.Errorf("typed object %v, unstructured %v", back, u.Object)
	}
}
