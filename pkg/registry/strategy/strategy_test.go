package strategy

import (
	"context"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/structured-merge-diff/v4/fieldpath"

	"github.com/gitops-service/gitops-service/pkg/apis/appstudio"
	appstudioinstall "github.com/gitops-service/gitops-service/pkg/apis/appstudio/install"
	gitops "github.com/gitops-service/gitops-service/pkg/apis/managedgitops"
	gitopsinstall "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/install"
)

var (
	v1alpha1 = schema.GroupVersion{Group: appstudio.GroupName, Version: "v1alpha1"}
	// A second served version, to show that reset fields cover every version.
	v1beta1 = schema.GroupVersion{Group: appstudio.GroupName, Version: "v1beta1"}
)

var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	appstudioinstall.Install(s)
	gitopsinstall.Install(s)
	return s
}()

// The test kinds' validations each answer at a path of their own and name the objects they were
// given, so that a strategy calling the wrong validation, or swapping obj and old, shows.
func validateAt(path string) func(context.Context, runtime.Object) field.ErrorList {
	return func(_ context.Context, obj runtime.Object) field.ErrorList {
		return field.ErrorList{field.Invalid(field.NewPath(path), mustAccessor(obj).GetName(), "")}
	}
}

func validateUpdateAt(path string) func(context.Context, runtime.Object, runtime.Object) field.ErrorList {
	return func(_ context.Context, obj, old runtime.Object) field.ErrorList {
		return field.ErrorList{field.Invalid(field.NewPath(path), mustAccessor(obj).GetName()+"<-"+mustAccessor(old).GetName(), "")}
	}
}

// namespacedWithStatus is shaped like most kinds of both groups.
func namespacedWithStatus() *Kind {
	return &Kind{
		ObjectTyper:          scheme,
		GroupVersions:        []schema.GroupVersion{v1alpha1},
		Validate:             validateAt("create"),
		ValidateUpdate:       validateUpdateAt("update"),
		ValidateStatusUpdate: validateUpdateAt("statusUpdate"),
	}
}

// clusterScopedWithoutStatus is shaped like DeploymentTargetClass.
func clusterScopedWithoutStatus() *Kind {
	return &Kind{
		ObjectTyper:    scheme,
		GroupVersions:  []schema.GroupVersion{v1alpha1},
		ClusterScoped:  true,
		Validate:       validateAt("create"),
		ValidateUpdate: validateUpdateAt("update"),
	}
}

var now = metav1.Now()

func environment() *appstudio.Environment {
	return &appstudio.Environment{
		ObjectMeta: metav1.ObjectMeta{
			Name: "staging", Namespace: "jane", ResourceVersion: "7", Generation: 3,
			Labels:      map[string]string{"team": "a"},
			Annotations: map[string]string{"note": "x"},
		},
		Spec: appstudio.EnvironmentSpec{DisplayName: "Staging", DeploymentStrategy: appstudio.DeploymentStrategyManual},
		Status: appstudio.EnvironmentStatus{Conditions: []metav1.Condition{
			{Type: appstudio.EnvironmentConditionReconciled, Status: metav1.ConditionTrue, Reason: "Reconciled", LastTransitionTime: now},
		}},
	}
}

func class() *appstudio.DeploymentTargetClass {
	return &appstudio.DeploymentTargetClass{
		ObjectMeta: metav1.ObjectMeta{Name: "isolation-level-namespace", ResourceVersion: "7", Generation: 3},
		Spec:       appstudio.DeploymentTargetClassSpec{Provisioner: appstudio.ProvisionerDevSandbox, ReclaimPolicy: appstudio.ReclaimPolicyDelete},
	}
}

var otherStatus = appstudio.EnvironmentStatus{Conditions: []metav1.Condition{
	{Type: appstudio.EnvironmentConditionErrorOccurred, Status: metav1.ConditionTrue, Reason: "ErrorOccurred", LastTransitionTime: now},
}}

func TestHasStatus(t *testing.T) {
	cases := []struct {
		name string
		kind *Kind
		want bool
	}{
		{"with a status validation", namespacedWithStatus(), true},
		{"without", clusterScopedWithoutStatus(), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.kind.HasStatus(); got != tc.want {
				t.Errorf("HasStatus() = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestNamespaceScoped(t *testing.T) {
	cases := []struct {
		name     string
		strategy interface{ NamespaceScoped() bool }
		want     bool
	}{
		{"namespaced", New(namespacedWithStatus()), true},
		{"namespaced, /status", NewStatus(namespacedWithStatus()), true},
		{"cluster-scoped", New(clusterScopedWithoutStatus()), false},
		{"cluster-scoped, /status", NewStatus(clusterScopedWithoutStatus()), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.strategy.NamespaceScoped(); got != tc.want {
				t.Errorf("NamespaceScoped() = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestPrepareForCreate(t *testing.T) {
	cases := []struct {
		name string
		kind *Kind
		obj  runtime.Object
		// want is obj as it must be stored.
		want runtime.Object
	}{{
		// Status is the service's to write, through /status; a client cannot create an object
		// that looks already reconciled.
		name: "status dropped, generation 1",
		kind: namespacedWithStatus(),
		obj:  environment(),
		want: func() runtime.Object {
			e := environment()
			e.Status = appstudio.EnvironmentStatus{}
			e.Generation = 1
			return e
		}(),
	}, {
		name: "generation starts at 1 when the client sent none",
		kind: namespacedWithStatus(),
		obj:  func() runtime.Object { e := environment(); e.Generation = 0; return e }(),
		want: func() runtime.Object {
			e := environment()
			e.Status = appstudio.EnvironmentStatus{}
			e.Generation = 1
			return e
		}(),
	}, {
		name: "kind without status: generation 1",
		kind: clusterScopedWithoutStatus(),
		obj:  class(),
		want: func() runtime.Object { c := class(); c.Generation = 1; return c }(),
	}, {
		// Without a /status subresource the main resource is the only way to write a status,
		// so it must not be dropped.
		name: "kind without status keeps a status it is sent",
		kind: clusterScopedWithoutStatus(),
		obj:  environment(),
		want: func() runtime.Object { e := environment(); e.Generation = 1; return e }(),
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			New(tc.kind).PrepareForCreate(context.Background(), tc.obj)
			if !apiequality.Semantic.DeepEqual(tc.obj, tc.want) {
				t.Errorf("got %+v\nwant %+v", tc.obj, tc.want)
			}
		})
	}
}

func TestPrepareForUpdate(t *testing.T) {
	cases := []struct {
		name   string
		kind   *Kind
		old    runtime.Object
		mutate func(obj runtime.Object)
		// want is the stored generation after the update; the stored one is 3.
		want int64
		// keepsSentStatus is set where the client's status must survive.
		keepsSentStatus bool
	}{
		{"unchanged", namespacedWithStatus(), environment(), func(runtime.Object) {}, 3, false},
		{"label added", namespacedWithStatus(), environment(), func(o runtime.Object) {
			o.(*appstudio.Environment).Labels["new"] = "label"
		}, 3, false},
		{"annotations and finalizers", namespacedWithStatus(), environment(), func(o runtime.Object) {
			e := o.(*appstudio.Environment)
			e.Annotations = nil
			e.Finalizers = []string{"example.com/f"}
		}, 3, false},
		// The status a client sends with a PUT of the main resource is ignored, and is no
		// reason for a new generation.
		{"status changed by the client", namespacedWithStatus(), environment(), func(o runtime.Object) {
			o.(*appstudio.Environment).Status = otherStatus
		}, 3, false},
		{"status cleared by the client", namespacedWithStatus(), environment(), func(o runtime.Object) {
			o.(*appstudio.Environment).Status = appstudio.EnvironmentStatus{}
		}, 3, false},
		// The generation is the server's: a client cannot set it, up or down.
		{"generation sent higher", namespacedWithStatus(), environment(), func(o runtime.Object) {
			o.(*appstudio.Environment).Generation = 10
		}, 3, false},
		{"generation sent lower with a spec change", namespacedWithStatus(), environment(), func(o runtime.Object) {
			e := o.(*appstudio.Environment)
			e.Generation = 1
			e.Spec.DisplayName = "Renamed"
		}, 4, false},
		{"spec changed", namespacedWithStatus(), environment(), func(o runtime.Object) {
			o.(*appstudio.Environment).Spec.DisplayName = "Renamed"
		}, 4, false},
		{"spec and status changed", namespacedWithStatus(), environment(), func(o runtime.Object) {
			e := o.(*appstudio.Environment)
			e.Spec.ParentEnvironment = "dev"
			e.Status = otherStatus
		}, 4, false},
		// Serializations differ in empty against absent lists; that is not a new desired state.
		{"empty list for absent list", namespacedWithStatus(), environment(), func(o runtime.Object) {
			o.(*appstudio.Environment).Spec.Tags = []string{}
		}, 3, false},
		{"kind without status: spec changed", clusterScopedWithoutStatus(), class(), func(o runtime.Object) {
			o.(*appstudio.DeploymentTargetClass).Spec.ReclaimPolicy = appstudio.ReclaimPolicyRetain
		}, 4, false},
		{"kind without status: label added", clusterScopedWithoutStatus(), class(), func(o runtime.Object) {
			o.(*appstudio.DeploymentTargetClass).Labels = map[string]string{"a": "b"}
		}, 3, false},
		{"kind without status keeps a status it is sent", clusterScopedWithoutStatus(), environment(), func(o runtime.Object) {
			o.(*appstudio.Environment).Status = otherStatus
		}, 3, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obj := tc.old.DeepCopyObject()
			tc.mutate(obj)
			sent := obj.DeepCopyObject()
			New(tc.kind).PrepareForUpdate(context.Background(), obj, tc.old)

			if got := mustAccessor(obj).GetGeneration(); got != tc.want {
				t.Errorf("generation = %d, want %d", got, tc.want)
			}
			wantStatus := specField(tc.old, "Status").Interface()
			if tc.keepsSentStatus {
				wantStatus = specField(sent, "Status").Interface()
			}
			if got := specField(obj, "Status").Interface(); !apiequality.Semantic.DeepEqual(got, wantStatus) {
				t.Errorf("status = %+v, want %+v", got, wantStatus)
			}
			// Everything else is the client's to write.
			if got, want := specField(obj, "Spec").Interface(), specField(sent, "Spec").Interface(); !reflect.DeepEqual(got, want) {
				t.Errorf("spec = %+v, want the one sent, %+v", got, want)
			}
			gotMeta, sentMeta := mustAccessor(obj), mustAccessor(sent)
			if !reflect.DeepEqual(gotMeta.GetLabels(), sentMeta.GetLabels()) || !reflect.DeepEqual(gotMeta.GetAnnotations(), sentMeta.GetAnnotations()) ||
				!reflect.DeepEqual(gotMeta.GetFinalizers(), sentMeta.GetFinalizers()) {
				t.Errorf("metadata = %+v, want the one sent, %+v", gotMeta, sentMeta)
			}
		})
	}
}

func TestStatusPrepareForUpdate(t *testing.T) {
	deleted := metav1.NewTime(now.Add(1))
	cases := []struct {
		name   string
		mutate func(*appstudio.Environment)
	}{
		{"status changed", func(e *appstudio.Environment) { e.Status = otherStatus }},
		{"status cleared", func(e *appstudio.Environment) { e.Status = appstudio.EnvironmentStatus{} }},
		// What a /status write sends besides status is the stored object as the client last saw
		// it; a stale or edited copy must not overwrite the spec or the metadata.
		{"spec changed", func(e *appstudio.Environment) { e.Spec.DisplayName = "Renamed"; e.Status = otherStatus }},
		{"labels changed", func(e *appstudio.Environment) { e.Labels = map[string]string{"team": "b"} }},
		{"annotations dropped", func(e *appstudio.Environment) { e.Annotations = nil }},
		{"finalizer added", func(e *appstudio.Environment) { e.Finalizers = []string{"example.com/f"} }},
		{"owner added", func(e *appstudio.Environment) {
			e.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "c", UID: "u"}}
		}},
		{"generation sent", func(e *appstudio.Environment) { e.Generation = 10 }},
		{"deletion timestamp sent", func(e *appstudio.Environment) { e.DeletionTimestamp = &deleted }},
		// Server-side apply records the status fields it wrote in the managed fields of the
		// object being written; they are kept, as for custom resources.
		{"managed fields", func(e *appstudio.Environment) {
			e.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "service", Operation: metav1.ManagedFieldsOperationApply, Subresource: "status"}}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old := environment()
			obj := environment()
			tc.mutate(obj)
			want := old.DeepCopy()
			want.Status = obj.Status
			want.ManagedFields = obj.ManagedFields

			NewStatus(namespacedWithStatus()).PrepareForUpdate(context.Background(), obj, old)
			if !apiequality.Semantic.DeepEqual(obj, want) {
				t.Errorf("got %+v\nwant %+v", obj, want)
			}
		})
	}
}

func TestGetResetFields(t *testing.T) {
	twoVersions := namespacedWithStatus()
	twoVersions.GroupVersions = []schema.GroupVersion{v1alpha1, v1beta1}
	cases := []struct {
		name     string
		strategy interface {
			GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set
		}
		want map[fieldpath.APIVersion]*fieldpath.Set
	}{
		// Applying to the main resource never takes ownership of status...
		{"main resource", New(namespacedWithStatus()), map[fieldpath.APIVersion]*fieldpath.Set{
			"appstudio.redhat.com/v1alpha1": fieldpath.NewSet(fieldpath.MakePathOrDie("status")),
		}},
		// ... and structured-merge-diff dereferences the entry of whatever version is applied.
		{"main resource, two versions", New(twoVersions), map[fieldpath.APIVersion]*fieldpath.Set{
			"appstudio.redhat.com/v1alpha1": fieldpath.NewSet(fieldpath.MakePathOrDie("status")),
			"appstudio.redhat.com/v1beta1":  fieldpath.NewSet(fieldpath.MakePathOrDie("status")),
		}},
		// /status owns only status: spec and the metadata it puts back are reset.
		{"/status", NewStatus(namespacedWithStatus()), map[fieldpath.APIVersion]*fieldpath.Set{
			"appstudio.redhat.com/v1alpha1": fieldpath.NewSet(fieldpath.MakePathOrDie("spec"), fieldpath.MakePathOrDie("metadata", "labels"),
				fieldpath.MakePathOrDie("metadata", "annotations"), fieldpath.MakePathOrDie("metadata", "finalizers"),
				fieldpath.MakePathOrDie("metadata", "ownerReferences")),
		}},
		{"/status, two versions", NewStatus(twoVersions), map[fieldpath.APIVersion]*fieldpath.Set{
			"appstudio.redhat.com/v1alpha1": fieldpath.NewSet(fieldpath.MakePathOrDie("spec"), fieldpath.MakePathOrDie("metadata", "labels"),
				fieldpath.MakePathOrDie("metadata", "annotations"), fieldpath.MakePathOrDie("metadata", "finalizers"),
				fieldpath.MakePathOrDie("metadata", "ownerReferences")),
			"appstudio.redhat.com/v1beta1": fieldpath.NewSet(fieldpath.MakePathOrDie("spec"), fieldpath.MakePathOrDie("metadata", "labels"),
				fieldpath.MakePathOrDie("metadata", "annotations"), fieldpath.MakePathOrDie("metadata", "finalizers"),
				fieldpath.MakePathOrDie("metadata", "ownerReferences")),
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.strategy.GetResetFields()
			if !sets.KeySet(got).Equal(sets.KeySet(tc.want)) {
				t.Fatalf("versions = %v, want %v", sets.List(sets.KeySet(got)), sets.List(sets.KeySet(tc.want)))
			}
			for v, want := range tc.want {
				if !got[v].Equals(want) {
					t.Errorf("%s: %v, want %v", v, got[v], want)
				}
			}
		})
	}
}

func TestValidation(t *testing.T) {
	ctx := context.Background()
	obj := environment()
	obj.Name = "new"
	old := environment()
	old.Name = "old"
	cases := []struct {
		name string
		call func() field.ErrorList
		want field.ErrorList
	}{
		{"create", func() field.ErrorList { return New(namespacedWithStatus()).Validate(ctx, obj) },
			field.ErrorList{field.Invalid(field.NewPath("create"), "new", "")}},
		{"update", func() field.ErrorList { return New(namespacedWithStatus()).ValidateUpdate(ctx, obj, old) },
			field.ErrorList{field.Invalid(field.NewPath("update"), "new<-old", "")}},
		{"/status update", func() field.ErrorList { return NewStatus(namespacedWithStatus()).ValidateUpdate(ctx, obj, old) },
			field.ErrorList{field.Invalid(field.NewPath("statusUpdate"), "new<-old", "")}},
		{"update, kind without status", func() field.ErrorList { return New(clusterScopedWithoutStatus()).ValidateUpdate(ctx, obj, old) },
			field.ErrorList{field.Invalid(field.NewPath("update"), "new<-old", "")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.call(); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// The rest of the create and update contract is fixed, as it is for custom resources.
func TestFixedBehaviour(t *testing.T) {
	ctx := context.Background()
	main, status := New(namespacedWithStatus()), NewStatus(namespacedWithStatus())
	cases := []struct {
		name      string
		got, want interface{}
	}{
		{"AllowCreateOnUpdate", main.AllowCreateOnUpdate(), false},
		{"AllowCreateOnUpdate, /status", status.AllowCreateOnUpdate(), false},
		{"AllowUnconditionalUpdate", main.AllowUnconditionalUpdate(), true},
		{"WarningsOnCreate", len(main.WarningsOnCreate(ctx, environment())), 0},
		{"WarningsOnUpdate", len(main.WarningsOnUpdate(ctx, environment(), environment())), 0},
		{"WarningsOnUpdate, /status", len(status.WarningsOnUpdate(ctx, environment(), environment())), 0},
		{"Canonicalize", func() runtime.Object { e := environment(); main.Canonicalize(e); return e }(), runtime.Object(environment())},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if !reflect.DeepEqual(tc.got, tc.want) {
				t.Errorf("got %#v, want %#v", tc.got, tc.want)
			}
		})
	}
}

func TestGenerateName(t *testing.T) {
	got := New(namespacedWithStatus()).GenerateName("staging-")
	if !strings.HasPrefix(got, "staging-") || len(got) != len("staging-")+5 {
		t.Errorf("GenerateName(%q) = %q, want the base and a 5-character suffix", "staging-", got)
	}
}

func TestObjectKinds(t *testing.T) {
	gvks, _, err := New(namespacedWithStatus()).ObjectKinds(&appstudio.Environment{})
	if err != nil {
		t.Fatal(err)
	}
	if want := appstudio.SchemeGroupVersion.WithKind("Environment"); len(gvks) != 1 || gvks[0] != want {
		t.Errorf("ObjectKinds = %v, want [%v]", gvks, want)
	}
}

func TestTyped(t *testing.T) {
	ctx := context.Background()
	obj, old := environment(), environment()
	obj.Name, old.Name = "new", "old"
	validate := func(e *appstudio.Environment) field.ErrorList {
		return field.ErrorList{field.Invalid(field.NewPath("create"), e.Name, "")}
	}
	validateUpdate := func(path string) func(e, old *appstudio.Environment) field.ErrorList {
		return func(e, old *appstudio.Environment) field.ErrorList {
			return field.ErrorList{field.Invalid(field.NewPath(path), e.Name+"<-"+old.Name, "")}
		}
	}
	cases := []struct {
		name                 string
		validateStatusUpdate func(e, old *appstudio.Environment) field.ErrorList
		wantStatus           bool
	}{
		{"with status", validateUpdate("statusUpdate"), true},
		{"without status", nil, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			k := Typed(scheme, v1alpha1, validate, validateUpdate("update"), tc.validateStatusUpdate)
			if k.ObjectTyper != scheme {
				t.Errorf("typer not kept")
			}
			if !reflect.DeepEqual(k.GroupVersions, []schema.GroupVersion{v1alpha1}) {
				t.Errorf("GroupVersions = %v, want [%v]", k.GroupVersions, v1alpha1)
			}
			if k.ClusterScoped {
				t.Errorf("ClusterScoped, want namespaced")
			}
			if k.HasStatus() != tc.wantStatus {
				t.Fatalf("HasStatus() = %v, want %v", k.HasStatus(), tc.wantStatus)
			}
			check := func(what string, got field.ErrorList, path, value string) {
				t.Helper()
				if want := (field.ErrorList{field.Invalid(field.NewPath(path), value, "")}); !reflect.DeepEqual(got, want) {
					t.Errorf("%s: got %v, want %v", what, got, want)
				}
			}
			check("Validate", k.Validate(ctx, obj), "create", "new")
			check("ValidateUpdate", k.ValidateUpdate(ctx, obj, old), "update", "new<-old")
			if tc.wantStatus {
				check("ValidateStatusUpdate", k.ValidateStatusUpdate(ctx, obj, old), "statusUpdate", "new<-old")
			}
		})
	}
}

// The strategies reach spec and status by name; a kind without them would panic on its first
// write, so every kind of both groups must have a spec, and a status unless it is served
// without one (PromotionApproval, EnvironmentHold: Kind.HasStatus is false, and the
// strategies never reach for it). AuditEntries are never written through the API (their REST
// serves no create or update), so the strategies never see one; nor a DeploymentRecordDiff,
// the answer of the deploymentrecords/diff subresource, which is never stored.
func TestEveryKindHasSpecAndStatus(t *testing.T) {
	withoutStatus := sets.New("PromotionApproval", "EnvironmentHold")
	neverWritten := sets.New("AuditEntry", "DeploymentRecordDiff")
	for _, gv := range []schema.GroupVersion{appstudio.SchemeGroupVersion, gitops.SchemeGroupVersion} {
		for name, typ := range scheme.KnownTypes(gv) {
			if strings.HasSuffix(name, "List") || typ.PkgPath() != reflect.TypeOf(appstudio.Environment{}).PkgPath() &&
				typ.PkgPath() != reflect.TypeOf(gitops.Operation{}).PkgPath() {
				continue // lists, and the option types every group registers
			}
			if neverWritten.Has(name) {
				continue
			}
			t.Run(name, func(t *testing.T) {
				obj := reflect.New(typ).Interface().(runtime.Object)
				if withoutStatus.Has(name) {
					if v := reflect.ValueOf(obj).Elem().FieldByName("Status"); v.IsValid() {
						t.Errorf("%s has a status: serve it with one", typ)
					}
					kind := namespacedWithStatus()
					kind.ValidateStatusUpdate = nil
					New(kind).PrepareForCreate(context.Background(), obj)
					New(kind).PrepareForUpdate(context.Background(), obj, obj.DeepCopyObject())
					return
				}
				for _, f := range []string{"Spec", "Status"} {
					if v := reflect.ValueOf(obj).Elem().FieldByName(f); !v.IsValid() || v.Kind() != reflect.Struct {
						t.Errorf("%s has no struct field %s", typ, f)
					}
				}
				New(namespacedWithStatus()).PrepareForCreate(context.Background(), obj)
				New(namespacedWithStatus()).PrepareForUpdate(context.Background(), obj, obj.DeepCopyObject())
				NewStatus(namespacedWithStatus()).PrepareForUpdate(context.Background(), obj, obj.DeepCopyObject())
			})
		}
	}
}

func TestMissingFieldPanics(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "*v1.ConfigMap has no field Status") {
			t.Errorf("recovered %v, want a panic naming the type and the field", r)
		}
	}()
	New(namespacedWithStatus()).PrepareForCreate(context.Background(), &corev1.ConfigMap{})
}

// What the /status strategy reverts must be among the reset fields of /status: otherwise a
// server-side apply to /status whose configuration carries labels records its manager as their
// owner although they were never written, and a later apply of those labels to the main
// resource conflicts with that manager.
func TestStatusResetFieldsCoverWhatStatusReverts(t *testing.T) {
	reset := NewStatus(namespacedWithStatus()).GetResetFields()["appstudio.redhat.com/v1alpha1"]
	for _, p := range []fieldpath.Path{
		fieldpath.MakePathOrDie("metadata", "labels"),
		fieldpath.MakePathOrDie("metadata", "annotations"),
		fieldpath.MakePathOrDie("metadata", "finalizers"),
		fieldpath.MakePathOrDie("metadata", "ownerReferences"),
	} {
		covered := false
		for i := 1; i <= len(p); i++ {
			covered = covered || reset.Has(p[:i])
		}
		if !covered {
			t.Errorf("/status reverts %s but does not list it in its reset fields %v", p, reset)
		}
	}
}

// A kind's own preparation runs on the main resource after the shared rules, and on update
// before the generation is decided: what it puts back from the stored object is no change.
func TestKindPreparation(t *testing.T) {
	type key struct{}
	ctx := context.WithValue(context.Background(), key{}, "from the request")
	kind := namespacedWithStatus()
	kind.PrepareCreate = func(ctx context.Context, obj runtime.Object) {
		e := obj.(*appstudio.Environment)
		e.Spec.DisplayName = ctx.Value(key{}).(string)
		if len(e.Status.Conditions) != 0 {
			t.Error("the kind's preparation ran before the status was dropped")
		}
	}
	kind.PrepareUpdate = func(_ context.Context, obj, old runtime.Object) {
		obj.(*appstudio.Environment).Spec.DisplayName = old.(*appstudio.Environment).Spec.DisplayName
	}

	created := environment()
	New(kind).PrepareForCreate(ctx, created)
	if created.Spec.DisplayName != "from the request" || created.Generation != 1 {
		t.Errorf("created %q at generation %d", created.Spec.DisplayName, created.Generation)
	}
	updated := environment()
	updated.Spec.DisplayName = "sent by the client"
	New(kind).PrepareForUpdate(ctx, updated, environment())
	if updated.Spec.DisplayName != "Staging" || updated.Generation != 3 {
		t.Errorf("updated to %q at generation %d, want the stored name at generation 3", updated.Spec.DisplayName, updated.Generation)
	}
	// /status keeps the stored spec anyway; the kind's preparation is not asked.
	kind.PrepareUpdate = func(context.Context, runtime.Object, runtime.Object) { t.Error("ran on /status") }
	NewStatus(kind).PrepareForUpdate(ctx, environment(), environment())
}
