package apiserver

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
	gitopsv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	appstudioapply "github.com/gitops-service/gitops-service/pkg/generated/applyconfiguration/appstudio/v1alpha1"
	gitopsapply "github.com/gitops-service/gitops-service/pkg/generated/applyconfiguration/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned"
	"github.com/gitops-service/gitops-service/pkg/storage/pgtest"
)

// startServer runs gitops-apiserver in process on the database dsn and returns a client with
// the loopback (system:masters) identity. Delegated authentication, authorization and
// admission need a kube-apiserver and are covered by the e2e suite.
func startServer(t *testing.T, dsn string) *rest.Config {
	t.Helper()
	return startServerWith(t, dsn, nil)
}

// startServerWith is startServer with configure, when set, changing the server's
// configuration before the server is built (such as its authorizer).
func startServerWith(t testing.TB, dsn string, configure func(*Config)) *rest.Config {
	t.Helper()
	return startServerWithOptions(t, dsn, nil, configure)
}

// startServerWithOptions is startServerWith with options, when set, changing the options
// (as flags would) first.
func startServerWithOptions(t testing.TB, dsn string, options func(*Options), configure func(*Config)) *rest.Config {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())

	o := testOptions(t, dsn)
	if options != nil {
		options(o)
	}
	config, cleanup, err := o.Config(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if configure != nil {
		configure(config)
	}
	server, err := config.Complete().New()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- server.GenericAPIServer.PrepareRun().RunWithContext(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("server: %v", err)
		}
		cleanup()
	})

	loopback := rest.CopyConfig(config.GenericConfig.LoopbackClientConfig)
	client, err := versioned.NewForConfig(loopback)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		result := client.Discovery().RESTClient().Get().AbsPath("/readyz").Do(ctx)
		if result.Error() == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("server not ready: %v", result.Error())
		}
		time.Sleep(100 * time.Millisecond)
	}
	return loopback
}

// testOptions are the options of a server on the database dsn that serves on loopback without
// a kube-apiserver to delegate to.
func testOptions(t testing.TB, dsn string) *Options {
	o := NewOptions(nil, nil)
	o.Postgres.DSN = dsn
	ro := o.RecommendedOptions
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { listener.Close() })
	ro.SecureServing.Listener = listener
	ro.SecureServing.ServerCert.CertDirectory = t.TempDir()
	ro.Authentication.RemoteKubeConfigFileOptional = true
	ro.Authorization.RemoteKubeConfigFileOptional = true
	ro.CoreAPI = nil
	ro.Admission = nil
	ro.Features.EnablePriorityAndFairness = false
	return o
}

func TestServerServesGitOpsDeployments(t *testing.T) {
	cfg := startServer(t, pgtest.NewDatabase(t))
	client := versioned.NewForConfigOrDie(cfg).ManagedGitopsV1alpha1().GitOpsDeployments("jane")
	ctx := context.Background()

	d := &gitopsv1alpha1.GitOpsDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "jane"},
		Spec: gitopsv1alpha1.GitOpsDeploymentSpec{
			Source: gitopsv1alpha1.ApplicationSource{RepoURL: "https://github.com/org/repo", Path: "deploy"},
			Type:   gitopsv1alpha1.GitOpsDeploymentSpecTypeAutomated,
		},
		Status: gitopsv1alpha1.GitOpsDeploymentStatus{Health: gitopsv1alpha1.HealthStatus{Status: "Healthy"}},
	}
	created, err := client.Create(ctx, d, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if created.Status.Health.Status != "" || created.Generation != 1 || created.UID == "" {
		t.Errorf("create kept client status or lacks system fields: %+v", created)
	}

	created.Status.Sync.Status = gitopsv1alpha1.SyncStatusCodeSynced
	updated, err := client.UpdateStatus(ctx, created, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update status: %v", err)
	}
	if updated.Status.Sync.Status != gitopsv1alpha1.SyncStatusCodeSynced || updated.Generation != 1 {
		t.Errorf("status update: got sync %q generation %d", updated.Status.Sync.Status, updated.Generation)
	}

	list, err := client.List(ctx, metav1.ListOptions{FieldSelector: "status.sync.status=Synced"})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("field-selected list: %v, %d items", err, len(list.Items))
	}
	if _, err := client.List(ctx, metav1.ListOptions{FieldSelector: "spec.nope=x"}); !apierrors.IsBadRequest(err) {
		t.Errorf("unsupported field selector: want 400, got %v", err)
	}

	// Server-side apply through the generated apply configuration; the reset fields of every
	// served version must be known or structured-merge-diff panics.
	applied, err := client.Apply(ctx, gitopsapply.GitOpsDeployment("app", "jane").
		WithSpec(gitopsapply.GitOpsDeploymentSpec().
			WithSource(gitopsapply.ApplicationSource().WithRepoURL("https://github.com/org/repo").WithPath("deploy/prod")).
			WithType(gitopsv1alpha1.GitOpsDeploymentSpecTypeManual)),
		metav1.ApplyOptions{FieldManager: "test", Force: true})
	if err != nil {
		t.Fatalf("apply: %v", err)
	}
	if applied.Spec.Source.Path != "deploy/prod" || applied.Generation != 2 || applied.Status.Sync.Status != gitopsv1alpha1.SyncStatusCodeSynced {
		t.Errorf("apply: got path %q generation %d sync %q", applied.Spec.Source.Path, applied.Generation, applied.Status.Sync.Status)
	}

	bad := d.DeepCopy()
	bad.Name = "bad"
	bad.Spec.Source.Path = "/"
	_, err = client.Create(ctx, bad, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) {
		t.Fatalf("invalid object: want 422, got %v", err)
	}
	if causes := err.(apierrors.APIStatus).Status().Details.Causes; len(causes) != 1 || causes[0].Field != "spec.source.path" {
		t.Errorf("invalid object: causes %+v", causes)
	}

	metrics, err := versioned.NewForConfigOrDie(cfg).Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		t.Fatalf("metrics: %v", err)
	}
	for _, want := range []string{`gitops_storage_pool_connections{pool="requests",state="max"} 20`,
		`gitops_storage_pool_connections{pool="committer",state="max"} 1`, `gitops_storage_pool_connections{pool="feed",state="max"} 1`, "apiserver_request_total",
		"gitops_storage_watch_feed_lag_resource_versions", `gitops_storage_query_duration_seconds_count{kind="batch"}`,
		`gitops_storage_query_duration_seconds_count{kind="query"}`, `gitops_storage_commit_duration_seconds_count{result="committed"}`,
		"\ngitops_storage_ready 1\n", "\ngitops_storage_watch_feed_lag_seconds ", `gitops_storage_postgres_standbys{sync_state="sync"} 0`, `gitops_storage_postgres_standbys{sync_state="unknown"} 0`} {
		if !strings.Contains(string(metrics), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// Replicas share nothing but the database: what one acknowledges, another serves and watches.
func TestReplicasShareOneDatabase(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	a := versioned.NewForConfigOrDie(startServer(t, dsn)).AppStudioV1alpha1().Snapshots("team")
	b := versioned.NewForConfigOrDie(startServer(t, dsn)).AppStudioV1alpha1().Snapshots("team")
	ctx := context.Background()

	w, err := b.Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	created, err := a.Create(ctx, &appstudiov1alpha1.Snapshot{
		ObjectMeta: metav1.ObjectMeta{Name: "s1"},
		Spec:       appstudiov1alpha1.SnapshotSpec{Application: "app"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-w.ResultChan():
		got := ev.Object.(*appstudiov1alpha1.Snapshot)
		if ev.Type != watch.Added || got.Name != "s1" || got.ResourceVersion != created.ResourceVersion {
			t.Errorf("replica b watched %s %s@%s, want ADDED s1@%s", ev.Type, got.Name, got.ResourceVersion, created.ResourceVersion)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("replica b saw no event for a write acknowledged by replica a")
	}
	if _, err := b.Get(ctx, "s1", metav1.GetOptions{}); err != nil {
		t.Errorf("replica b: %v", err)
	}
	// A stale write through b loses against a's newer one: the resourceVersion is global.
	stale := created.DeepCopy()
	created.Spec.DisplayName = "from a"
	if _, err := a.Update(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	stale.Spec.DisplayName = "from b"
	if _, err := b.Update(ctx, stale, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Errorf("stale update through replica b: want 409, got %v", err)
	}
}

// Of bindings racing for one application and environment, exactly one is created; the others
// get 422 naming spec.environment and the binding that holds the pair.
func TestOneBindingPerApplicationAndEnvironment(t *testing.T) {
	client := versioned.NewForConfigOrDie(startServer(t, pgtest.NewDatabase(t))).AppStudioV1alpha1().SnapshotEnvironmentBindings("team")
	ctx := context.Background()
	binding := func(name, env string) *appstudiov1alpha1.SnapshotEnvironmentBinding {
		return &appstudiov1alpha1.SnapshotEnvironmentBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: appstudiov1alpha1.SnapshotEnvironmentBindingSpec{
				Application: "app", Environment: env, Snapshot: "s1",
				Components: []appstudiov1alpha1.BindingComponent{{Name: "c"}},
			},
		}
	}
	const racers = 8
	errs := make(chan error, racers)
	for i := 0; i < racers; i++ {
		go func(i int) {
			_, err := client.Create(ctx, binding(fmt.Sprintf("b%d", i), "staging"), metav1.CreateOptions{})
			errs <- err
		}(i)
	}
	won := 0
	for i := 0; i < racers; i++ {
		err := <-errs
		switch {
		case err == nil:
			won++
		case apierrors.IsInvalid(err):
			causes := err.(apierrors.APIStatus).Status().Details.Causes
			if len(causes) != 1 || causes[0].Field != "spec.environment" || !strings.Contains(causes[0].Message, "already binds application") {
				t.Errorf("losing create: causes %+v", causes)
			}
		default:
			t.Errorf("losing create: want 422, got %v", err)
		}
	}
	if won != 1 {
		t.Errorf("%d of %d racing creates won, want exactly 1", won, racers)
	}
	if _, err := client.Create(ctx, binding("prod", "production"), metav1.CreateOptions{}); err != nil {
		t.Errorf("another environment: %v", err)
	}
	// Server-side apply of a new binding creates through the update path: the same rule holds.
	applied := appstudioapply.SnapshotEnvironmentBinding("applied", "team").WithSpec(
		appstudioapply.SnapshotEnvironmentBindingSpec().WithApplication("app").WithEnvironment("staging").WithSnapshot("s1").
			WithComponents(appstudioapply.BindingComponent().WithName("c")))
	if _, err := client.Apply(ctx, applied, metav1.ApplyOptions{FieldManager: "test"}); !apierrors.IsInvalid(err) {
		t.Errorf("server-side apply of a second binding for app and staging: want 422, got %v", err)
	}
	list, err := client.List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 2 {
		t.Errorf("stored bindings: %v, %d items, want 2", err, len(list.Items))
	}
}

// A namespace's DeploymentTargetClaims are limited at admission: the class's
// maxClaimsPerNamespace, else the server's default; racing creates fill exactly the limit, the
// others get a 403 that names it, and server-side apply (a create through update) is held too.
func TestClaimsLimitedPerNamespace(t *testing.T) {
	client := versioned.NewForConfigOrDie(startServer(t, pgtest.NewDatabase(t))).AppStudioV1alpha1()
	ctx := context.Background()
	_, err := client.DeploymentTargetClasses().Create(ctx, &appstudiov1alpha1.DeploymentTargetClass{
		ObjectMeta: metav1.ObjectMeta{Name: "three"},
		Spec: appstudiov1alpha1.DeploymentTargetClassSpec{Provisioner: appstudiov1alpha1.ProvisionerNamespace, ReclaimPolicy: "Delete",
			Parameters: appstudiov1alpha1.DeploymentTargetParameters{Namespace: &appstudiov1alpha1.NamespaceProvisionerParameters{
				MaxClaimsPerNamespace: ptr.To[int32](3)}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	claim := func(name, class string) *appstudiov1alpha1.DeploymentTargetClaim {
		return &appstudiov1alpha1.DeploymentTargetClaim{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: appstudiov1alpha1.DeploymentTargetClaimSpec{DeploymentTargetClassName: appstudiov1alpha1.DeploymentTargetClassName(class)}}
	}
	const racers = 10
	errs := make(chan error, racers)
	for i := 0; i < racers; i++ {
		go func(i int) {
			_, err := client.DeploymentTargetClaims("jane").Create(ctx, claim(fmt.Sprintf("c%d", i), "three"), metav1.CreateOptions{})
			errs <- err
		}(i)
	}
	won := 0
	for i := 0; i < racers; i++ {
		err := <-errs
		switch {
		case err == nil:
			won++
		case !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "namespace jane already holds 3 DeploymentTargetClaims") ||
			!strings.Contains(err.Error(), "DeploymentTargetClass three (spec.parameters.namespace.maxClaimsPerNamespace)"):
			t.Errorf("a claim over the limit: want a 403 naming it, got %v", err)
		}
	}
	if won != 3 {
		t.Fatalf("%d of %d racing claims were created under a limit of 3", won, racers)
	}
	applied := appstudioapply.DeploymentTargetClaim("applied", "jane").WithSpec(
		appstudioapply.DeploymentTargetClaimSpec().WithDeploymentTargetClassName("three"))
	if _, err := client.DeploymentTargetClaims("jane").Apply(ctx, applied, metav1.ApplyOptions{FieldManager: "test"}); !apierrors.IsForbidden(err) ||
		!strings.Contains(err.Error(), "maxClaimsPerNamespace") {
		t.Errorf("server-side apply of a claim over the limit: want 403, got %v", err)
	}
	// Another namespace counts apart; a claim without a class has the server's default (20).
	if _, err := client.DeploymentTargetClaims("bob").Create(ctx, claim("c0", "three"), metav1.CreateOptions{}); err != nil {
		t.Errorf("another namespace: %v", err)
	}
	for i := 0; i < 17; i++ {
		if _, err := client.DeploymentTargetClaims("jane").Create(ctx, claim(fmt.Sprintf("d%d", i), ""), metav1.CreateOptions{}); err != nil {
			t.Fatalf("claim %d of the default limit: %v", 4+i, err)
		}
	}
	_, err = client.DeploymentTargetClaims("jane").Create(ctx, claim("d-last", ""), metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "already holds 20") || !strings.Contains(err.Error(), "--max-deployment-target-claims-per-namespace") {
		t.Errorf("the 21st claim: want the server's limit, got %v", err)
	}
	// Deleting one frees a place.
	if err := client.DeploymentTargetClaims("jane").Delete(ctx, "d0", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.DeploymentTargetClaims("jane").Create(ctx, claim("d-last", ""), metav1.CreateOptions{}); err != nil {
		t.Errorf("after a delete: %v", err)
	}
}
