package apiserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/conversion"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/dump"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"

	"github.com/gitops-service/gitops-service/internal/listjson"
	appstudiov1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
	gitopsv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/registry/strategy"
)

// FuzzListEncoder checks that listjson.StreamingLists writes
// exactly the JSON serializer's bytes for lists of GitOpsDeployments made of fuzzed values
// (strings with any bytes, FieldsV1 that may not be JSON, any instant in any zone), or fails
// where it fails. flags picks which optional fields are set and the list's length.
func FuzzListEncoder(f *testing.F) {
	plain := servedJSON(f)
	streaming := listjson.StreamingLists{Serializer: plain}
	for _, seed := range []struct {
		a, b, c   string
		fieldsV1  []byte
		sec, nsec int64
		flags     uint16
	}{
		{"d", "ns", "main", []byte(`{"f:spec":{"f:source":{}}}`), 1795000000, 0, 0},
		{"", "", "", nil, 0, 0, 0xffff},
		{"<a>&b", "é日\u2028\u2029", "\x00\x1f\x7f\"\\", []byte(`{"f:a<b>&c":{}}`), -62135596800, 5, 0x1234},
		{"\xff\xfe", "\xc3", "a\xe2\x80", []byte("{\n  \"f:a\": {}\n}"), 253402300799, 999999999, 0x5a5a},
		{"k", "v", "x", []byte(`{"f:a":{}`), 1 << 40, 0, 0x0f0f},                     // FieldsV1 not JSON
		{"k", "v", "x", []byte(``), -1 << 40, 0, 0x00f0},                             // empty FieldsV1
		{"k", "v", "x", []byte(`null`), 0, 1, 0x8001},                                //
		{"k", "v", "x", []byte(`{"k:{\"name\":\"a\"}":{".":{}}}`), 86400, 0, 0x3003}, // escaped key, fast path
		{"k", "v", "x", []byte(`{"f:\u00e9":{}}`), 86400, 0, 0x3003},                 // non-ASCII key
		{"k", "v", "x", []byte(`{"f:\u003c":{},"f:b":1}`), 86400, 0, 0x3003},         // a value that is not an object
		{"k", "v", "x", []byte(`"string"`), 86400, 0, 0x3003},
		{"k", "v", "x", []byte("\xd9\xd9\xf7\xa0"), 86400, 0, 0x3003}, // CBOR's self-described tag
	} {
		f.Add(seed.a, seed.b, seed.c, seed.fieldsV1, seed.sec, seed.nsec, seed.flags)
	}
	f.Fuzz(func(t *testing.T, a, b, c string, fieldsV1 []byte, sec, nsec int64, flags uint16) {
		list := fuzzDeploymentList([3]string{a, b, c}, fieldsV1, time.Unix(sec, nsec), flags)
		var want, got bytes.Buffer
		wantErr := plain.Encode(list, &want)
		gotErr := streaming.Encode(list, &got)
		if (wantErr == nil) != (gotErr == nil) {
			t.Fatalf("StreamingLists: error %v, the JSON serializer's %v", gotErr, wantErr)
		}
		if wantErr == nil && !bytes.Equal(got.Bytes(), want.Bytes()) {
			t.Fatalf("StreamingLists wrote\n%s\nthe JSON serializer\n%s", got.Bytes(), want.Bytes())
		}
	})
}

// fuzzDeploymentList is a list of one to four GitOpsDeployments, item i taking the strings
// in a rotated order, so that every string lands in every field of some item.
func fuzzDeploymentList(strs [3]string, fieldsV1 []byte, when time.Time, flags uint16) *gitopsv1alpha1.GitOpsDeploymentList {
	// Any offset, in minutes, up to about ±2 days: the encoders must both write UTC.
	when = when.In(time.FixedZone("fuzz", (int(flags>>4)-2048)*60))
	l := &gitopsv1alpha1.GitOpsDeploymentList{
		TypeMeta: metav1.TypeMeta{Kind: "GitOpsDeploymentList", APIVersion: strs[0]},
		ListMeta: metav1.ListMeta{ResourceVersion: strs[1], Continue: strs[2]},
		Items:    []gitopsv1alpha1.GitOpsDeployment{},
	}
	if flags&0x100 != 0 {
		remaining := int64(flags)
		l.RemainingItemCount = &remaining
	}
	for i := range int(flags>>14) + 1 {
		rotated := [3]string{strs[i%3], strs[(i+1)%3], strs[(i+2)%3]}
		l.Items = append(l.Items, fuzzDeployment(rotated, fieldsV1, when.Add(time.Duration(i)*time.Hour), flags>>uint(i)))
	}
	return l
}

func fuzzDeployment(s [3]string, fieldsV1 []byte, when time.Time, flags uint16) gitopsv1alpha1.GitOpsDeployment {
	a, b, c := s[0], s[1], s[2]
	d := gitopsv1alpha1.GitOpsDeployment{
		ObjectMeta: fuzzObjectMeta(s, fieldsV1, when, flags),
		Spec: gitopsv1alpha1.GitOpsDeploymentSpec{
			Source:      gitopsv1alpha1.ApplicationSource{RepoURL: a, Path: b, TargetRevision: c},
			Destination: gitopsv1alpha1.ApplicationDestination{Environment: b, Namespace: c},
			Type:        gitopsv1alpha1.GitOpsDeploymentSpecType(a),
		},
		Status: gitopsv1alpha1.GitOpsDeploymentStatus{
			Sync:   gitopsv1alpha1.SyncStatus{Status: gitopsv1alpha1.SyncStatusCode(b), Revision: c},
			Health: gitopsv1alpha1.HealthStatus{Message: a},
			Conditions: []gitopsv1alpha1.GitOpsDeploymentCondition{{
				Type: gitopsv1alpha1.GitOpsDeploymentConditionType(c), Message: a, LastProbeTime: metav1.NewTime(when)}},
		},
	}
	if flags&1 != 0 {
		d.TypeMeta = metav1.TypeMeta{Kind: b, APIVersion: c}
	}
	return d
}

func fuzzObjectMeta(s [3]string, fieldsV1 []byte, when time.Time, flags uint16) metav1.ObjectMeta {
	a, b, c := s[0], s[1], s[2]
	m := metav1.ObjectMeta{
		Name: a, GenerateName: b, Namespace: c, SelfLink: a, UID: types.UID(b), ResourceVersion: c,
		Generation:        int64(flags) - 1000,
		CreationTimestamp: metav1.NewTime(when),
		Labels:            map[string]string{a: b, b: c, c + a: ""},
		Annotations:       map[string]string{c: a + b, "": c},
		Finalizers:        []string{a, b, c},
	}
	if flags&2 != 0 {
		m.Labels, m.Finalizers = nil, nil
	}
	if flags&4 != 0 {
		deleted, grace := metav1.NewTime(when.Add(-time.Minute)), int64(flags)
		m.DeletionTimestamp, m.DeletionGracePeriodSeconds = &deleted, &grace
	}
	if flags&8 != 0 {
		controller := flags&16 != 0
		m.OwnerReferences = []metav1.OwnerReference{{APIVersion: a, Kind: b, Name: c, UID: types.UID(a), Controller: &controller},
			{APIVersion: c, Kind: a, Name: b, BlockOwnerDeletion: &controller}}
	}
	entry := metav1.ManagedFieldsEntry{Manager: a, Operation: metav1.ManagedFieldsOperationType(b), APIVersion: c,
		FieldsType: "FieldsV1", Subresource: b}
	if flags&32 == 0 {
		entry.Time = &metav1.Time{Time: when}
	}
	if flags&64 == 0 {
		entry.FieldsV1 = &metav1.FieldsV1{Raw: fieldsV1}
	}
	// A compact entry as structured merge diff writes it beside the fuzzed one, so that the
	// copied fast path and encoding/json's path meet in one list.
	m.ManagedFields = []metav1.ManagedFieldsEntry{entry,
		{Manager: "m", Operation: metav1.ManagedFieldsOperationApply, FieldsType: "FieldsV1",
			FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:labels":{".":{}}}}`)}}}
	return m
}

// decodeKinds are the kinds FuzzDecode decodes bytes as when they name none: every kind and
// list of both groups at their served version (DeploymentRecordDiff, the body of the
// deploymentrecords/diff subresource, has no list), sorted so that a seed's kind index is
// stable.
func decodeKinds(tb testing.TB) []schema.GroupVersionKind {
	var kinds []schema.GroupVersionKind
	for _, sample := range []runtime.Object{&gitopsv1alpha1.GitOpsDeployment{}, &appstudiov1alpha1.Environment{}} {
		gvks, _, err := Scheme.ObjectKinds(sample)
		if err != nil {
			tb.Fatal(err)
		}
		gv := gvks[0].GroupVersion()
		for kind, typ := range Scheme.KnownTypes(gv) {
			if typ.PkgPath() == reflect.TypeOf(sample).Elem().PkgPath() {
				kinds = append(kinds, gv.WithKind(kind))
			}
		}
	}
	sort.Slice(kinds, func(i, j int) bool { return kinds[i].String() < kinds[j].String() })
	if len(kinds) != 49 {
		tb.Fatalf("%d kinds, want the 24 kinds and 24 lists of both groups and DeploymentRecordDiff: %v", len(kinds), kinds)
	}
	return kinds
}

// kindStrategies are the registry's strategies of every kind, by the internal Go type they
// validate, built as the server builds them.
func kindStrategies(tb testing.TB) map[reflect.Type]*strategy.Kind {
	storage, err := resourceStorage(noStorage{}, ExtraConfig{}, nil, nil)
	if err != nil {
		tb.Fatal(err)
	}
	out := map[reflect.Type]*strategy.Kind{}
	for _, resources := range storage {
		for _, s := range resources {
			r, ok := mainREST(s)
			if !ok {
				continue // a /status subresource, whose Kind is the main resource's
			}
			st, ok := r.CreateStrategy.(strategy.Strategy)
			if !ok {
				tb.Fatalf("%T: create strategy %T, want strategy.Strategy", r.New(), r.CreateStrategy)
			}
			out[reflect.TypeOf(r.New())] = st.Kind
		}
	}
	if len(out) != 23 {
		tb.Fatalf("%d kinds with a strategy, want 23", len(out))
	}
	return out
}

// FuzzDecode decodes arbitrary bytes as the server's codecs do (JSON or YAML, with the kind
// chosen by kind when the bytes name none) and checks what decodes: encoding it and decoding
// that gives it back; and for our kinds at their served version, what a write does with it
// (defaulting, conversion to the internal version, the registry's prepare and validate
// steps for create, update and status update) does not panic, and converting back gives the
// defaulted object.
func FuzzDecode(f *testing.F) {
	kinds := decodeKinds(f)
	strategies := kindStrategies(f)
	plain := servedJSON(f)
	decoder := Codecs.UniversalDeserializer()
	for i, gvk := range kinds {
		f.Add([]byte(`{"metadata":{"name":"x","namespace":"n","labels":{"a":"b"}},"spec":{},"status":{}}`), uint8(i))
		f.Add([]byte(fmt.Sprintf(`{"apiVersion":%q,"kind":%q,"metadata":{"name":"x"}}`, gvk.GroupVersion(), gvk.Kind)), uint8(i))
		f.Add([]byte(`{"items":[{"metadata":{"name":"a"}},{}],"metadata":{"resourceVersion":"1","continue":"c"}}`), uint8(i))
	}
	for _, seed := range fuzzDecodeSeeds {
		f.Add([]byte(seed), uint8(0))
	}
	f.Fuzz(func(t *testing.T, data []byte, kind uint8) {
		defaults := kinds[int(kind)%len(kinds)]
		obj, gvk, err := decoder.Decode(data, &defaults, nil)
		if err != nil {
			return // not an object
		}
		checkRoundTrip(t, plain, decoder, obj, gvk)
		// Only our kinds are written; the bytes may also name an option type, a Status, or a
		// kind at the internal version, which the server never writes.
		// AuditEntries neither: the storage writes them, and the API serves no create or update.
		// Nor a DeploymentRecordDiff: the diff subresource's body, never stored.
		if slices.Contains(kinds, *gvk) && !strings.HasPrefix(gvk.Kind, "AuditEntry") && gvk.Kind != "DeploymentRecordDiff" {
			checkWritePath(t, strategies, obj, gvk.GroupVersion())
		}
	})
}

// fuzzDecodeSeeds are shapes the decoders treat specially: YAML, nulls, duplicated and
// case-variant keys, FieldsV1 and RawExtension as written by hand, quantities, times with
// zones and fractions, escapes and invalid UTF-8.
var fuzzDecodeSeeds = []string{
	mustReadSeed("../../internal/listjson/testdata/gitopsdeployment.json"),
	`{}`, `null`, `[]`, ``, `"x"`,
	"apiVersion: managed-gitops.redhat.com/v1alpha1\nkind: GitOpsDeployment\nmetadata:\n  name: y\n  labels: {a: b}\nspec:\n  source: {repoURL: 'https://e/x', path: p}\n",
	`{"apiVersion":"managed-gitops.redhat.com/v1alpha1","kind":"GitOpsDeployment","metadata":null,"spec":null,"status":null}`,
	`{"apiVersion":"managed-gitops.redhat.com/v1alpha1","kind":"GitOpsDeployment","metadata":{"name":"a","name":"b","Name":"c","labels":{"a":"1","a":"2"}}}`,
	`{"apiVersion":"managed-gitops.redhat.com/v1alpha1","kind":"GitOpsDeployment","metadata":{"name":"a","managedFields":[{"manager":"m","fieldsType":"FieldsV1","fieldsV1":{ "f:spec" : { } },"time":"2026-01-02T03:04:05.678+05:30"}]}}`,
	`{"apiVersion":"managed-gitops.redhat.com/v1alpha1","kind":"GitOpsDeployment","metadata":{"name":"a","managedFields":[{"fieldsV1":"<b>"},{"fieldsV1":[1,2.50,{"a":null}]},{"fieldsV1":null}]}}`,
	`{"apiVersion":"managed-gitops.redhat.com/v1alpha1","kind":"GitOpsDeployment","metadata":{"name":"\u0000\ud800\u2028","creationTimestamp":"2026-01-02T03:04:05Z","deletionTimestamp":"2026-01-02T03:04:05-08:00"},"status":{"conditions":[{"type":"x","lastProbeTime":null,"lastTransitionTime":"1999-12-31T23:59:59.999999999+00:00"}]}}`,
	"{\"apiVersion\":\"managed-gitops.redhat.com/v1alpha1\",\"kind\":\"GitOpsDeployment\",\"metadata\":{\"name\":\"\xff\xfe\",\"annotations\":{\"\xc3\":\"\xe2\x80\"}}}",
	`{"apiVersion":"appstudio.redhat.com/v1alpha1","kind":"Snapshot","metadata":{"name":"s"},"spec":{"application":"a","artifacts":{"unstableFields":{ "a" : [1, "<b>&", 1e400, -0.0] }}}}`,
	`{"apiVersion":"appstudio.redhat.com/v1alpha1","kind":"Snapshot","metadata":{"name":"s"},"spec":{"artifacts":{"unstableFields":null}}}`,
	`{"apiVersion":"appstudio.redhat.com/v1alpha1","kind":"SnapshotEnvironmentBinding","metadata":{"name":"b","namespace":"n"},"spec":{"application":"a","environment":"e","snapshot":"s","components":[{"name":"c","configuration":{"replicas":-1,"resources":{"limits":{"cpu":"1.5","memory":1e3},"requests":{"cpu":"0.0001m","memory":"1Ei"}}}}]}}`,
	`{"apiVersion":"appstudio.redhat.com/v1alpha1","kind":"Environment","metadata":{"name":"e","namespace":"n"},"spec":{"deploymentStrategy":"AppStudioAutomated","unstableConfigurationFields":{"kubernetesCredentials":{"targetNamespace":"t","apiURL":"https://k","clusterCredentialsSecret":"s"}}},"status":{"conditions":[{"type":"Ready","status":"True","lastTransitionTime":"2026-01-02T03:04:05Z","reason":"R","message":"m"}]}}`,
	`{"apiVersion":"appstudio.redhat.com/v1alpha1","kind":"DeploymentTargetClass","metadata":{"name":"c"},"spec":{"provisioner":"p"}}`,
	`{"apiVersion":"managed-gitops.redhat.com/v1alpha1","kind":"ArgoCDInstance","metadata":{"name":"i"},"spec":{"namespace":"argocd","capacity":-1e3},"status":{"lastHeartbeatTime":null,"tenants":2147483648}}`,
	`{"apiVersion":"managed-gitops.redhat.com/v1alpha1","kind":"TenantPlacement","metadata":{"name":"jane"},"spec":{"instance":"","pinned":true},"status":{"instance":"x","lastTransitionTime":"2026-01-02T03:04:05+01:00"}}`,
	`{"apiVersion":"appstudio.redhat.com/v1alpha1","kind":"Application","metadata":{"name":"a","namespace":"n"},"spec":{"displayName":"A","gitOpsRepository":{"url":""}},"status":{"conditions":null,"devfile":"x"}}`,
	`{"apiVersion":"appstudio.redhat.com/v1alpha1","kind":"Component","metadata":{"name":"c","namespace":"n"},"spec":{"componentName":"c","application":"a","source":{"git":{"url":"/x"}},"replicas":-1,"targetPort":1e3,"env":[{"name":"E","valueFrom":{"secretKeyRef":{"name":"s","key":"k"}}}],"resources":{"limits":{"cpu":"1"},"requests":{"cpu":"2"}},"build-nudges-ref":["c","c"]},"status":{"gitops":{"resourceGenerationSkipped":true},"build-nudged-by":[]}}`,
	`{"apiVersion":"appstudio.redhat.com/v1alpha1","kind":"ComponentDetectionQuery","metadata":{"name":"q","namespace":"n"},"spec":{"git":{"url":"https://e/x"}},"status":{"componentDetected":{"":{"componentStub":{"componentName":"","application":"","replicas":null}},"b":null}}}`,
	`{"apiVersion":"appstudio.redhat.com/v1alpha1","kind":"PromotionGate","metadata":{"name":"prod","namespace":"n"},"spec":{"approvals":{"required":-1},"changeWindows":[{"name":"w","type":"Allow","schedule":"CRON_TZ=Nowhere 61 * * * *","duration":"-1h","timeZone":"Local"},{"name":"w","schedule":"@every 0s","duration":"1e3h"}],"freezes":[{"name":"f","until":"0000-01-01T00:00:00+01:00"}],"soakTime":"9999999h","verification":{"jobTemplate":{"spec":{"template":{"spec":{"containers":null,"volumes":[{"name":"v","rbd":{"monitors":null,"image":"i"}}],"serviceAccountName":"default"}}}},"timeout":null}},"status":{"promotions":[{"promotionRun":"","phase":"","verification":{"startTime":null}}]}}`,
	`{"apiVersion":"appstudio.redhat.com/v1alpha1","kind":"PromotionApproval","metadata":{"name":"a","namespace":"n"},"spec":{"promotionRun":"r","environment":"prod","decision":"Override","username":"system:admin","groups":["system:masters",""]}}`,
	`{"apiVersion":"managed-gitops.redhat.com/v1alpha1","kind":"GitOpsDeploymentHold","metadata":{"name":"web","namespace":"n"},"spec":{"revision":"a\u00a0b","deploymentRecord":"","reason":null,"heldBy":"system:admin"},"status":{"observedGeneration":-1,"holding":"yes"}}`,
	`{"apiVersion":"appstudio.redhat.com/v1alpha1","kind":"EnvironmentHold","metadata":{"name":"prod","namespace":"n"},"spec":{"reason":"\u0000","snapshot":null},"status":{"phase":"x"}}`,
	`{"apiVersion":"managed-gitops.redhat.com/__internal","kind":"GitOpsDeployment","metadata":{"name":"i"}}`,
	`{"apiVersion":"managed-gitops.redhat.com/v1alpha1","kind":"ListOptions","labelSelector":"a=b"}`,
	`{"apiVersion":"v1","kind":"Status","status":"Failure","code":500}`,
	`{"apiVersion":"appstudio.redhat.com/v1alpha1","kind":"EnvironmentList","items":[{"metadata":{"name":"e"},"spec":{"tags":["a",""]}},{"kind":"Environment","apiVersion":"x/y"}]}`,
}

// checkRoundTrip encodes obj with the JSON serializer and decodes it again as the kind it was
// decoded as (the bytes may have named it in a way the object does not keep, such as
// "ApiVersion", which the kind sniffer accepts and the case-sensitive decoder ignores): what
// one decode accepted, its encoding must give back, up to what the encoding normalises (see
// roundTripEquality).
func checkRoundTrip(t *testing.T, plain runtime.Serializer, decoder runtime.Decoder, obj runtime.Object, gvk *schema.GroupVersionKind) {
	t.Helper()
	var encoded bytes.Buffer
	if err := plain.Encode(obj, &encoded); err != nil {
		t.Fatalf("decoded %T does not encode: %v", obj, err)
	}
	again, _, err := decoder.Decode(encoded.Bytes(), gvk, nil)
	if err != nil {
		t.Fatalf("decoded %T, encoded as\n%s\ndoes not decode: %v", obj, encoded.Bytes(), err)
	}
	if !roundTripEquality.DeepEqual(obj, again) {
		t.Fatalf("%T changed on its way through\n%s\ndecoded: %s\nafter the round trip: %s", obj, encoded.Bytes(), dump.Pretty(obj), dump.Pretty(again))
	}
}

// roundTripEquality is apimachinery's semantic equality (nil equals empty, quantities by
// value) plus what a JSON round trip normalises by design: times to whole seconds in UTC
// (RFC 3339 as metav1 writes it), micro times to microseconds, and raw JSON (FieldsV1,
// RawExtension) to encoding/json's compact form.
var roundTripEquality = conversion.EqualitiesOrDie(
	func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 },
	func(a, b metav1.Time) bool {
		return a.UTC().Truncate(time.Second).Equal(b.UTC().Truncate(time.Second))
	},
	func(a, b metav1.MicroTime) bool {
		return a.UTC().Truncate(time.Microsecond).Equal(b.UTC().Truncate(time.Microsecond))
	},
	func(a, b metav1.FieldsV1) bool { return bytes.Equal(compactJSON(a.Raw), compactJSON(b.Raw)) },
	func(a, b runtime.RawExtension) bool { return bytes.Equal(compactJSON(a.Raw), compactJSON(b.Raw)) },
)

// compactJSON is raw as encoding/json writes a value whose MarshalJSON returns raw, or raw
// itself when that fails.
func compactJSON(raw []byte) []byte {
	if raw == nil {
		return nil
	}
	out, err := json.Marshal(json.RawMessage(raw))
	if err != nil {
		return raw
	}
	return out
}

// checkWritePath does to a decoded object of ours what the server does on a write: default
// it, convert it to the internal version, and run the registry's prepare and validate steps
// for a create, an update (from itself and from an empty object) and a status update. Lists
// go through conversion, and each item through the strategies. Converting back to the served
// version must give the defaulted object: the versions hold the same fields.
func checkWritePath(t *testing.T, strategies map[reflect.Type]*strategy.Kind, obj runtime.Object, gv schema.GroupVersion) {
	t.Helper()
	versioned := obj.DeepCopyObject()
	Scheme.Default(versioned)
	internal, err := Scheme.ConvertToVersion(versioned.DeepCopyObject(), schema.GroupVersion{Group: gv.Group, Version: runtime.APIVersionInternal})
	if err != nil {
		t.Fatalf("%T: converting to the internal version: %v", obj, err)
	}
	items := []runtime.Object{internal}
	if meta.IsListType(internal) {
		if items, err = meta.ExtractList(internal); err != nil {
			t.Fatalf("%T: %v", internal, err)
		}
	}
	for _, item := range items {
		k, ok := strategies[reflect.TypeOf(item)]
		if !ok {
			t.Fatalf("no strategy validates %T", item)
		}
		runStrategies(k, item)
	}
	back, err := Scheme.ConvertToVersion(internal, gv)
	if err != nil {
		t.Fatalf("%T: converting back to %s: %v", internal, gv, err)
	}
	clearKinds(t, versioned)
	clearKinds(t, back)
	if !roundTripEquality.DeepEqual(versioned, back) {
		t.Fatalf("%T changed converting to the internal version and back\nbefore: %s\nafter: %s", obj, dump.Pretty(versioned), dump.Pretty(back))
	}
}

// runStrategies runs the registry's steps of a create, of updates and of a status update on
// copies of obj; their findings (field errors) are the client's, only a panic is a defect.
func runStrategies(k *strategy.Kind, obj runtime.Object) {
	ctx := genericapirequest.WithNamespace(context.Background(), "n")
	write := strategy.New(k)
	created := obj.DeepCopyObject()
	write.PrepareForCreate(ctx, created)
	write.Validate(ctx, created)
	for _, old := range []runtime.Object{obj.DeepCopyObject(), reflect.New(reflect.TypeOf(obj).Elem()).Interface().(runtime.Object)} {
		updated := obj.DeepCopyObject()
		write.PrepareForUpdate(ctx, updated, old)
		write.ValidateUpdate(ctx, updated, old)
		if k.HasStatus() {
			status := strategy.NewStatus(k)
			updated := obj.DeepCopyObject()
			status.PrepareForUpdate(ctx, updated, old)
			status.ValidateUpdate(ctx, updated, old)
		}
	}
}

// clearKinds drops the kind and apiVersion of obj and of its items: conversion sets the
// list's and, as in every Kubernetes list, leaves its items' out.
func clearKinds(t *testing.T, obj runtime.Object) {
	obj.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
	if !meta.IsListType(obj) {
		return
	}
	if err := meta.EachListItem(obj, func(item runtime.Object) error {
		item.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// mustReadSeed is the content of the seed file at path.
func mustReadSeed(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		panic(err)
	}
	return string(data)
}

// servedJSON is the server's JSON serializer.
func servedJSON(tb testing.TB) runtime.Serializer {
	info, ok := runtime.SerializerInfoForMediaType(Codecs.SupportedMediaTypes(), runtime.ContentTypeJSON)
	if !ok {
		tb.Fatal("no JSON serializer")
	}
	return info.Serializer
}
