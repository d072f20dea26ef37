package apiserver

import (
	"context"
	"reflect"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	apistorage "k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/apiserver/pkg/storage/storagebackend/factory"
	"k8s.io/client-go/tools/cache"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
	gitopsv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	appstudioapply "github.com/gitops-service/gitops-service/pkg/generated/applyconfiguration/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned"
	"github.com/gitops-service/gitops-service/pkg/registry/appstudio/deploymenttargetclaim"
	"github.com/gitops-service/gitops-service/pkg/registry/appstudio/promotionapproval"
	"github.com/gitops-service/gitops-service/pkg/registry/managedgitops/deploymentrecord"
	"github.com/gitops-service/gitops-service/pkg/registry/store"
	"github.com/gitops-service/gitops-service/pkg/storage/pgtest"
)

// noStorage builds registries without a database: these tests look only at their definitions.
type noStorage struct{}

func (noStorage) GetRESTOptions(gr schema.GroupResource, _ runtime.Object) (generic.RESTOptions, error) {
	return generic.RESTOptions{
		StorageConfig: storagebackend.NewDefaultConfig("/registry", nil).ForResource(gr),
		Decorator: func(*storagebackend.ConfigForResource, string, func(runtime.Object) (string, error), func() runtime.Object,
			func() runtime.Object, apistorage.AttrFunc, apistorage.IndexerFuncs, *cache.Indexers) (apistorage.Interface, factory.DestroyFunc, error) {
			return nil, func() {}, nil
		},
		ResourcePrefix: gr.Group + "/" + gr.Resource,
	}, nil
}

// The fields a registry computes for field selectors must be exactly those the served version
// accepts: one without the other either refuses a documented selector or silently matches nothing.
func TestSelectableFieldsMatchFieldLabelConversions(t *testing.T) {
	storage, err := resourceStorage(noStorage{}, ExtraConfig{}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	declared := map[string]map[string][]string{
		gitopsv1alpha1.GroupName:    gitopsv1alpha1.SelectableFields,
		appstudiov1alpha1.GroupName: appstudiov1alpha1.SelectableFields,
	}
	for group, resources := range storage {
		for name, s := range resources {
			r, ok := mainREST(s)
			if !ok {
				continue // a /status subresource
			}
			obj := r.New()
			gvks, _, err := Scheme.ObjectKinds(obj)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			kind := gvks[0].Kind
			want := sets.New(declared[group][kind]...).Insert("metadata.name")
			if r.NamespaceScoped() {
				want.Insert("metadata.namespace")
			}
			_, got, err := r.PredicateFunc(labels.Everything(), fields.Everything()).GetAttrs(obj)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if have := sets.KeySet(got); !have.Equal(want) {
				t.Errorf("%s: registry computes %v, %s/v1alpha1 %s accepts %v", name, sets.List(have), group, kind, sets.List(want))
			}
			if _, _, err := Scheme.ConvertFieldLabel(gvks[0], "spec.nothing", "x"); err == nil {
				t.Errorf("%s: an undeclared field label is accepted", kind)
			}
		}
	}
}

// application-service's kinds, served through the real server and database as application-service
// and the binding controllers use them: status only through /status, the webhooks' immutable
// fields refused with their path, a server-side apply of status, components listed by
// application, and a detection query's map of stubs kept as written.
func TestApplicationServiceKinds(t *testing.T) {
	client := versioned.NewForConfigOrDie(startServer(t, pgtest.NewDatabase(t))).AppStudioV1alpha1()
	ctx := context.Background()
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	wantInvalid := func(what string, err error, field string) {
		t.Helper()
		if !apierrors.IsInvalid(err) {
			t.Fatalf("%s: want 422, got %v", what, err)
		}
		if causes := err.(apierrors.APIStatus).Status().Details.Causes; len(causes) != 1 || causes[0].Field != field {
			t.Errorf("%s: causes %+v, want one at %s", what, causes, field)
		}
	}

	apps := client.Applications("team")
	app, err := apps.Create(ctx, &appstudiov1alpha1.Application{
		ObjectMeta: metav1.ObjectMeta{Name: "app"},
		Spec:       appstudiov1alpha1.ApplicationSpec{DisplayName: "App"},
		Status:     appstudiov1alpha1.ApplicationStatus{Devfile: "sent with the spec"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if app.Status.Devfile != "" || app.Generation != 1 {
		t.Errorf("created with status %+v at generation %d, want no status at 1", app.Status, app.Generation)
	}
	app.Status.Conditions = []metav1.Condition{{Type: "Created", Status: metav1.ConditionTrue, Reason: "OK", LastTransitionTime: now}}
	if app, err = apps.UpdateStatus(ctx, app, metav1.UpdateOptions{}); err != nil || len(app.Status.Conditions) != 1 {
		t.Fatalf("status update: %v, %+v", err, app)
	}
	app.Spec.GitOpsRepository.URL = "https://github.com/org/gitops"
	_, err = apps.Update(ctx, app, metav1.UpdateOptions{})
	wantInvalid("changed gitops repository", err, "spec.gitOpsRepository")
	_, err = apps.Create(ctx, &appstudiov1alpha1.Application{ObjectMeta: metav1.ObjectMeta{Name: "1st"}, Spec: appstudiov1alpha1.ApplicationSpec{DisplayName: "x"}}, metav1.CreateOptions{})
	wantInvalid("DNS-1123 but not DNS-1035 name", err, "metadata.name")
	applied, err := apps.ApplyStatus(ctx, appstudioapply.Application("app", "team").WithStatus(
		appstudioapply.ApplicationStatus().WithDevfile("schemaVersion: 2.2.0")), metav1.ApplyOptions{FieldManager: "application-service", Force: true})
	if err != nil || applied.Status.Devfile != "schemaVersion: 2.2.0" || applied.Spec.DisplayName != "App" {
		t.Errorf("server-side apply of status: %v, %+v", err, applied)
	}

	components := client.Components("team")
	for _, c := range []struct{ name, app string }{{"a", "app"}, {"b", "app"}, {"c", "other"}} {
		_, err := components.Create(ctx, &appstudiov1alpha1.Component{
			ObjectMeta: metav1.ObjectMeta{Name: c.name},
			Spec:       appstudiov1alpha1.ComponentSpec{ComponentName: c.name, Application: c.app, ContainerImage: "quay.io/org/" + c.name},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
	}
	list, err := components.List(ctx, metav1.ListOptions{FieldSelector: "spec.application=app"})
	if err != nil || len(list.Items) != 2 || list.Items[0].Name != "a" || list.Items[1].Name != "b" {
		t.Errorf("components of app: %v, %+v", err, list)
	}
	_, err = components.Create(ctx, &appstudiov1alpha1.Component{
		ObjectMeta: metav1.ObjectMeta{Name: "d"},
		Spec:       appstudiov1alpha1.ComponentSpec{ComponentName: "d", Application: "app"},
	}, metav1.CreateOptions{})
	wantInvalid("component without source", err, "spec.source")
	a, err := components.Get(ctx, "a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	a.Spec.Application = "other"
	_, err = components.Update(ctx, a, metav1.UpdateOptions{})
	wantInvalid("moved to another application", err, "spec.application")

	queries := client.ComponentDetectionQueries("team")
	q, err := queries.Create(ctx, &appstudiov1alpha1.ComponentDetectionQuery{
		ObjectMeta: metav1.ObjectMeta{Name: "q"},
		Spec:       appstudiov1alpha1.ComponentDetectionQuerySpec{GitSource: appstudiov1alpha1.GitSource{URL: "https://github.com/org/repo"}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	detected := appstudiov1alpha1.ComponentDetectionMap{"python": {
		DevfileFound: true, Language: "Python",
		ComponentStub: appstudiov1alpha1.ComponentSpec{ComponentName: "python", Application: "insert-application-name",
			Source: appstudiov1alpha1.ComponentSource{GitSource: &appstudiov1alpha1.GitSource{URL: "https://github.com/org/repo", Context: "py"}}},
	}}
	q.Status.ComponentDetected = detected
	if _, err := queries.UpdateStatus(ctx, q, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got, err := queries.Get(ctx, "q", metav1.GetOptions{}); err != nil || !reflect.DeepEqual(got.Status.ComponentDetected, detected) {
		t.Errorf("detected components: %v, got %+v, want %+v", err, got.Status.ComponentDetected, detected)
	}
}

// mainREST is the store of a resource's main storage, through the wrappers the server puts
// around some (the claims' limit, the approvals' authorization); false for a /status
// subresource.
func mainREST(s rest.Storage) (*store.REST, bool) {
	switch w := s.(type) {
	case *deploymenttargetclaim.LimitedREST:
		return w.REST, true
	case *promotionapproval.AuthorizedREST:
		return w.REST, true
	case *deploymentrecord.RetainingREST:
		return w.REST, true
	}
	r, ok := s.(*store.REST)
	return r, ok
}
