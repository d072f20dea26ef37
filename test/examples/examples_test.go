// Package examples checks the example objects under artifacts/examples: every one decodes
// strictly and validates, and every deliberately broken one fails where it says it does.
package examples

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/validation/field"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/gitops-service/gitops-service/pkg/apis/appstudio"
	appstudioinstall "github.com/gitops-service/gitops-service/pkg/apis/appstudio/install"
	appstudiovalidation "github.com/gitops-service/gitops-service/pkg/apis/appstudio/validation"
	gitops "github.com/gitops-service/gitops-service/pkg/apis/managedgitops"
	gitopsinstall "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/install"
	gitopsvalidation "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/validation"
)

const (
	examplesDir = "../../artifacts/examples"

	expectFieldAnnotation       = "test.gitops-service.io/expect-field"
	expectTypeAnnotation        = "test.gitops-service.io/expect-type"
	expectDecodeErrorAnnotation = "test.gitops-service.io/expect-decode-error"
)

var (
	scheme = newScheme()
	// EnableStrict makes unknown and duplicate fields decoding errors; the universal decoder
	// also applies defaults and converts to the internal version, as the API server does.
	codecs = serializer.NewCodecFactory(scheme, serializer.EnableStrict)
)

func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	gitopsinstall.Install(s)
	appstudioinstall.Install(s)
	// Only so that the Namespace and Secrets the examples need can be checked to parse.
	if err := corev1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}

// validate runs the create validation of the object's kind. A kind missing here fails the
// test instead of passing unvalidated.
func validate(obj runtime.Object) (field.ErrorList, bool) {
	switch o := obj.(type) {
	case *gitops.GitOpsDeployment:
		return gitopsvalidation.ValidateGitOpsDeployment(o, gitopsvalidation.Options{}), true
	case *gitops.GitOpsDeploymentSyncRun:
		return gitopsvalidation.ValidateGitOpsDeploymentSyncRun(o), true
	case *gitops.GitOpsDeploymentManagedEnvironment:
		return gitopsvalidation.ValidateGitOpsDeploymentManagedEnvironment(o), true
	case *gitops.GitOpsDeploymentRepositoryCredential:
		return gitopsvalidation.ValidateGitOpsDeploymentRepositoryCredential(o), true
	case *gitops.GitOpsDeploymentHold:
		return gitopsvalidation.ValidateGitOpsDeploymentHold(o), true
	case *gitops.Operation:
		return gitopsvalidation.ValidateOperation(o), true
	case *appstudio.Environment:
		return appstudiovalidation.ValidateEnvironment(o), true
	case *appstudio.Snapshot:
		return appstudiovalidation.ValidateSnapshot(o), true
	case *appstudio.SnapshotEnvironmentBinding:
		return appstudiovalidation.ValidateSnapshotEnvironmentBinding(o), true
	case *appstudio.PromotionRun:
		return appstudiovalidation.ValidatePromotionRun(o), true
	case *appstudio.DeploymentTarget:
		return appstudiovalidation.ValidateDeploymentTarget(o), true
	case *appstudio.DeploymentTargetClaim:
		return appstudiovalidation.ValidateDeploymentTargetClaim(o), true
	case *appstudio.DeploymentTargetClass:
		return appstudiovalidation.ValidateDeploymentTargetClass(o), true
	case *appstudio.Application:
		return appstudiovalidation.ValidateApplication(o), true
	case *appstudio.Component:
		return appstudiovalidation.ValidateComponent(o), true
	case *appstudio.ComponentDetectionQuery:
		return appstudiovalidation.ValidateComponentDetectionQuery(o), true
	case *appstudio.PromotionGate:
		return appstudiovalidation.ValidatePromotionGate(o), true
	case *appstudio.PromotionApproval:
		return appstudiovalidation.ValidatePromotionApproval(o), true
	case *appstudio.EnvironmentHold:
		return appstudiovalidation.ValidateEnvironmentHold(o), true
	}
	return nil, false
}

// example is one file: its single YAML document and what the file says about itself.
type example struct {
	path        string
	data        []byte
	gvk         schema.GroupVersionKind
	annotations map[string]string
}

func readExamples(t *testing.T, dir string) []example {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) == 0 {
		t.Fatalf("no examples in %s", dir)
	}
	sort.Strings(paths)
	var out []example
	for _, p := range paths {
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		// One object per file, so that the file name orders kubectl apply -f.
		reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(raw)))
		var docs [][]byte
		for {
			doc, err := reader.Read()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			if len(bytes.TrimSpace(stripComments(doc))) > 0 {
				docs = append(docs, doc)
			}
		}
		if len(docs) != 1 {
			t.Errorf("%s: %d YAML documents, want exactly one object per file", p, len(docs))
			continue
		}
		// A loose read for kind and annotations, which even a file that must not decode has.
		var head struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Metadata   struct {
				Annotations map[string]interface{} `json:"annotations"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal(docs[0], &head); err != nil {
			t.Errorf("%s: not YAML: %v", p, err)
			continue
		}
		gv, err := schema.ParseGroupVersion(head.APIVersion)
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		ann := map[string]string{}
		for k, v := range head.Metadata.Annotations {
			if s, ok := v.(string); ok {
				ann[k] = s
			}
		}
		out = append(out, example{path: p, data: docs[0], gvk: gv.WithKind(head.Kind), annotations: ann})
	}
	return out
}

func stripComments(doc []byte) []byte {
	var b bytes.Buffer
	for _, line := range strings.Split(string(doc), "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "#") {
			b.WriteString(line + "\n")
		}
	}
	return b.Bytes()
}

// decode decodes strictly, defaults and converts to the internal version. Namespaces and Secrets,
// which our API server never decodes, are only decoded as core v1 objects.
func decode(data []byte) (runtime.Object, error) {
	obj, _, err := codecs.UniversalDeserializer().Decode(data, nil, nil)
	if err != nil {
		return nil, err
	}
	switch obj.(type) {
	case *corev1.Secret, *corev1.Namespace:
		return obj, nil
	}
	obj, _, err = codecs.UniversalDecoder().Decode(data, nil, nil)
	return obj, err
}

func TestExamplesDecodeAndValidate(t *testing.T) {
	kinds := map[string]bool{}
	for _, dir := range []string{examplesDir, filepath.Join(examplesDir, "internal")} {
		for _, ex := range readExamples(t, dir) {
			t.Run(strings.TrimPrefix(ex.path, examplesDir+"/"), func(t *testing.T) {
				for k := range ex.annotations {
					if strings.HasPrefix(k, "test.gitops-service.io/") {
						t.Errorf("annotation %s belongs in examples/invalid only", k)
					}
				}
				obj, err := decode(ex.data)
				if err != nil {
					t.Fatalf("decode: %v", err)
				}
				kinds[ex.gvk.Kind] = true
				if _, ok := obj.(*corev1.Namespace); ok {
					return
				}
				if s, ok := obj.(*corev1.Secret); ok {
					if ex.gvk != corev1.SchemeGroupVersion.WithKind("Secret") {
						t.Errorf("decoded a Secret from %s", ex.gvk)
					}
					if len(s.StringData) == 0 {
						t.Errorf("Secret has no stringData")
					}
					return
				}
				// validate only knows internal types, so this also proves the conversion.
				errs, ok := validate(obj)
				if !ok {
					t.Fatalf("no validation for %T", obj)
				}
				for _, e := range errs {
					t.Errorf("validation: %v", e)
				}
			})
		}
	}
	// Every kind of the API document has an example; deleting one must not go unnoticed.
	for _, k := range []string{
		"Secret", "GitOpsDeployment", "GitOpsDeploymentManagedEnvironment", "GitOpsDeploymentRepositoryCredential",
		"GitOpsDeploymentSyncRun", "Operation", "Environment", "Snapshot", "SnapshotEnvironmentBinding", "PromotionRun",
		"DeploymentTarget", "DeploymentTargetClaim", "DeploymentTargetClass",
		"Application", "Component", "ComponentDetectionQuery",
	} {
		if !kinds[k] {
			t.Errorf("no valid example of %s", k)
		}
	}
}

var errorTypes = map[string]field.ErrorType{
	"Required":     field.ErrorTypeRequired,
	"Invalid":      field.ErrorTypeInvalid,
	"NotSupported": field.ErrorTypeNotSupported,
	"Duplicate":    field.ErrorTypeDuplicate,
	"Forbidden":    field.ErrorTypeForbidden,
}

func TestInvalidExamplesFail(t *testing.T) {
	groups := map[string]bool{}
	for _, ex := range readExamples(t, filepath.Join(examplesDir, "invalid")) {
		groups[ex.gvk.Group] = true
		t.Run(filepath.Base(ex.path), func(t *testing.T) {
			wantField, hasField := ex.annotations[expectFieldAnnotation]
			wantDecode, hasDecode := ex.annotations[expectDecodeErrorAnnotation]
			if hasField == hasDecode {
				t.Fatalf("needs exactly one of the annotations %s and %s", expectFieldAnnotation, expectDecodeErrorAnnotation)
			}
			obj, err := decode(ex.data)
			if hasDecode {
				if err == nil {
					t.Fatalf("decoded without error, want an error containing %q", wantDecode)
				}
				if !strings.Contains(err.Error(), wantDecode) {
					t.Fatalf("decode error %q does not contain %q", err, wantDecode)
				}
				return
			}
			if err != nil {
				t.Fatalf("decode: %v (the file should only fail validation)", err)
			}
			wantType, ok := errorTypes[ex.annotations[expectTypeAnnotation]]
			if !ok {
				t.Fatalf("annotation %s must be one of Required, Invalid, NotSupported, Duplicate, Forbidden", expectTypeAnnotation)
			}
			errs, ok := validate(obj)
			if !ok {
				t.Fatalf("no validation for %T", obj)
			}
			if len(errs) == 0 {
				t.Fatalf("validated, want a %s error at %s", wantType, wantField)
			}
			// Each file breaks one thing: an error anywhere else means it breaks more.
			for _, e := range errs {
				if e.Field != wantField || e.Type != wantType {
					t.Errorf("got %v, want only %s errors at %s", e, wantType, wantField)
				}
			}
		})
	}
	for _, g := range []string{gitops.GroupName, appstudio.GroupName} {
		if !groups[g] {
			t.Errorf("no invalid example of group %s", g)
		}
	}
}
