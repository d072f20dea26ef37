package dashboard

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned/fake"
)

const ns = "team-a"

func objects() []runtime.Object {
	env := func(name, parent string) *appstudiov1alpha1.Environment {
		return &appstudiov1alpha1.Environment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: appstudiov1alpha1.EnvironmentSpec{DisplayName: strings.ToUpper(name), ParentEnvironment: parent,
				DeploymentStrategy: appstudiov1alpha1.DeploymentStrategyManual}}
	}
	binding := &appstudiov1alpha1.SnapshotEnvironmentBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "shop-dev", Namespace: ns, UID: "b1"},
		Spec:       appstudiov1alpha1.SnapshotEnvironmentBindingSpec{Application: "shop", Environment: "dev", Snapshot: "shop-1"},
		Status: appstudiov1alpha1.SnapshotEnvironmentBindingStatus{
			GitOpsDeployments: []appstudiov1alpha1.BindingStatusGitOpsDeployment{{ComponentName: "web", GitOpsDeployment: "shop-dev-web"}},
			ComponentDeploymentConditions: []metav1.Condition{{Type: appstudiov1alpha1.ComponentDeploymentConditionAllComponentsDeployed,
				Status: metav1.ConditionTrue, Message: "1 of 1 components deployed"}},
		},
	}
	yes := true
	deployment := &managedv1alpha1.GitOpsDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: "shop-dev-web", Namespace: ns,
			OwnerReferences: []metav1.OwnerReference{{Kind: "SnapshotEnvironmentBinding", Name: "shop-dev", UID: "b1", Controller: &yes}}},
		Spec: managedv1alpha1.GitOpsDeploymentSpec{Type: managedv1alpha1.GitOpsDeploymentSpecTypeAutomated,
			Source: managedv1alpha1.ApplicationSource{RepoURL: "https://git.example/shop", Path: "components/web/overlays/dev"}},
		Status: managedv1alpha1.GitOpsDeploymentStatus{
			Sync:   managedv1alpha1.SyncStatus{Status: managedv1alpha1.SyncStatusCodeSynced},
			Health: managedv1alpha1.HealthStatus{Status: managedv1alpha1.HealthStatusCodeHealthy},
			Conditions: []managedv1alpha1.GitOpsDeploymentCondition{{Type: managedv1alpha1.GitOpsDeploymentConditionResourcesReady,
				Status: managedv1alpha1.GitOpsConditionStatusTrue, Reason: managedv1alpha1.GitOpsDeploymentReasonResourcesReady}},
			Resources: []managedv1alpha1.ResourceStatus{{Kind: "ConfigMap", Name: "cm-web-dev", Namespace: ns,
				Status: managedv1alpha1.SyncStatusCodeSynced, Health: &managedv1alpha1.HealthStatus{Status: managedv1alpha1.HealthStatusCodeHealthy}}},
		},
	}
	run := &appstudiov1alpha1.PromotionRun{
		ObjectMeta: metav1.ObjectMeta{Name: "shop-1-to-prod", Namespace: ns},
		Spec: appstudiov1alpha1.PromotionRunSpec{Application: "shop", Snapshot: "shop-1",
			ManualPromotion: appstudiov1alpha1.ManualPromotionConfiguration{TargetEnvironment: "prod"}},
		Status: appstudiov1alpha1.PromotionRunStatus{State: appstudiov1alpha1.PromotionRunStateActive,
			EnvironmentStatus: []appstudiov1alpha1.PromotionRunEnvironmentStatus{{Step: 1, EnvironmentName: "prod",
				Status: appstudiov1alpha1.PromotionRunEnvironmentStatusInProgress, DisplayStatus: "Waiting for approvals: 0 of 1"}}},
	}
	audit := func(name, user, verb string, at time.Time) *managedv1alpha1.AuditEntry {
		return &managedv1alpha1.AuditEntry{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Verb: verb,
			Object: managedv1alpha1.AuditObject{Resource: "gitopsdeployments", Name: "shop-dev-web"},
			User:   managedv1alpha1.AuditUser{Username: user}, Time: metav1.NewMicroTime(at)}
	}
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	return []runtime.Object{
		&appstudiov1alpha1.Application{ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: ns}, Spec: appstudiov1alpha1.ApplicationSpec{DisplayName: "Shop"}},
		env("dev", ""), env("staging", "dev"), env("prod", "staging"),
		&appstudiov1alpha1.Snapshot{ObjectMeta: metav1.ObjectMeta{Name: "shop-1", Namespace: ns}, Spec: appstudiov1alpha1.SnapshotSpec{Application: "shop"}},
		binding, deployment, run,
		audit("00000000000000000010", "alice", "create", t0), audit("00000000000000000011", "bob", "patch", t0.Add(time.Minute)),
		// Another namespace's: never shown.
		&managedv1alpha1.GitOpsDeployment{ObjectMeta: metav1.ObjectMeta{Name: "secret-of-b", Namespace: "team-b"}},
	}
}

// dashboard is a started server of ns on a real 127.0.0.1 listener, and its base URL.
func dashboard(t *testing.T, c *fake.Clientset, cfg Config) (*Server, string) {
	t.Helper()
	cfg.Namespace, cfg.Client, cfg.Token, cfg.Retry = ns, c, "secret-token", 50*time.Millisecond
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	s.Start(ctx)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return s, srv.URL
}

// client is a browser: it keeps cookies and does not follow redirects.
func client(t *testing.T) *http.Client {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func get(t *testing.T, c *http.Client, u string, header map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		if k == "Host" {
			req.Host = v
		} else {
			req.Header.Set(k, v)
		}
	}
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(body)
}

// login loads the URL with the token, as the user does, and returns the browser with the cookie.
func login(t *testing.T, base string) *http.Client {
	t.Helper()
	c := client(t)
	code, _ := get(t, c, base+"/?token=secret-token", nil)
	if code != http.StatusSeeOther {
		t.Fatalf("GET /?token=...: %d, want a redirect that drops the token from the address", code)
	}
	return c
}

func TestTokenAndHost(t *testing.T) {
	s, base := dashboard(t, fake.NewSimpleClientset(objects()...), Config{})
	port := strings.TrimPrefix(base, "http://127.0.0.1:")

	for _, tc := range []struct {
		name, path string
		header     map[string]string
	}{
		{"no token", "/", nil},
		{"no token, API", "/api/state", nil},
		{"wrong token", "/?token=guess", nil},
		{"wrong Host (DNS rebinding)", "/?token=secret-token", map[string]string{"Host": "evil.example:" + port}},
		{"another port", "/?token=secret-token", map[string]string{"Host": "127.0.0.1:1"}},
	} {
		if code, body := get(t, client(t), base+tc.path, tc.header); code != http.StatusForbidden {
			t.Errorf("%s: got %d (%s), want 403", tc.name, code, body)
		}
	}
	if got := s.URL(&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 4242}); got != "http://127.0.0.1:4242/?token=secret-token" {
		t.Errorf("URL: %s", got)
	}

	c := login(t, base)
	for _, host := range []string{"127.0.0.1:" + port, "localhost:" + port} {
		code, body := get(t, client(t), base+"/", map[string]string{"Host": host, "Cookie": "gitops-dashboard-" + port + "=secret-token"})
		if code != http.StatusOK || !strings.Contains(body, `<script src="app.js">`) {
			t.Errorf("GET / at Host %s with the cookie: %d %.80s", host, code, body)
		}
	}
	if code, _ := get(t, c, base+"/app.js", nil); code != http.StatusOK {
		t.Errorf("app.js: %d", code)
	}
	// The cookie of another dashboard's port is not this one's.
	u, _ := url.Parse(base)
	other := client(t)
	other.Jar.SetCookies(u, []*http.Cookie{{Name: "gitops-dashboard-1", Value: "secret-token"}})
	if code, _ := get(t, other, base+"/api/state", nil); code != http.StatusForbidden {
		t.Errorf("another port's cookie: %d, want 403", code)
	}
}

func TestPostNeedsSameOrigin(t *testing.T) {
	var synced string
	_, base := dashboard(t, fake.NewSimpleClientset(objects()...), Config{
		Sync: func(_ context.Context, name string) (string, error) { synced = name; return "created", nil },
		Decide: func(_ context.Context, run, env string, approve bool, comment string) (string, error) {
			return "", errors.New("you may not create promotionapprovals")
		},
	})
	c := login(t, base)
	post := func(path, origin, contentType, body string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, base+path, strings.NewReader(body))
		req.Header.Set("Content-Type", contentType)
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		res, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	if code, _ := post("/api/sync", "http://evil.example", "application/json", `{"name":"web"}`); code != http.StatusForbidden {
		t.Errorf("POST from another origin: %d, want 403", code)
	}
	if code, _ := post("/api/sync", "", "application/json", `{"name":"web"}`); code != http.StatusForbidden {
		t.Errorf("POST without Origin: %d, want 403", code)
	}
	if code, _ := post("/api/sync", base, "application/x-www-form-urlencoded", `name=web`); code != http.StatusUnsupportedMediaType {
		t.Errorf("POST of a form: %d, want 415", code)
	}
	if synced != "" {
		t.Fatalf("a refused POST synced %q", synced)
	}
	if code, body := post("/api/sync", base, "application/json", `{"name":"web"}`); code != http.StatusOK || synced != "web" {
		t.Errorf("POST /api/sync: %d %s, synced %q", code, body, synced)
	}
	code, body := post("/api/decide", base, "application/json", `{"run":"r","env":"prod","decision":"approve"}`)
	if code != http.StatusUnprocessableEntity || !strings.Contains(body, "you may not create promotionapprovals") {
		t.Errorf("POST /api/decide refused by the API: %d %s", code, body)
	}
}

// state waits until the dashboard has listed every kind and returns its state.
func state(t *testing.T, c *http.Client, base string, until func(*State) bool) *State {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		code, body := get(t, c, base+"/api/state", nil)
		if code != http.StatusOK {
			t.Fatalf("GET /api/state: %d %s", code, body)
		}
		var st State
		if err := json.Unmarshal([]byte(body), &st); err != nil {
			t.Fatal(err)
		}
		if !st.Loading && (until == nil || until(&st)) {
			return &st
		}
		if time.Now().After(deadline) {
			t.Fatalf("state not as expected: %s", body)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestState(t *testing.T) {
	_, base := dashboard(t, fake.NewSimpleClientset(objects()...), Config{})
	st := state(t, login(t, base), base, nil)

	if len(st.Errors) != 0 {
		t.Errorf("errors: %v", st.Errors)
	}
	if len(st.Applications) != 1 || st.Applications[0].Name != "shop" || len(st.Applications[0].Environments) != 3 {
		t.Fatalf("applications: %+v", st.Applications)
	}
	envs := st.Applications[0].Environments
	for i, want := range []struct {
		name, parent string
		depth        int
	}{{"dev", "", 0}, {"staging", "dev", 1}, {"prod", "staging", 2}} {
		if envs[i].Name != want.name || envs[i].Parent != want.parent || envs[i].Depth != want.depth {
			t.Errorf("environment %d: %+v, want %+v", i, envs[i], want)
		}
	}
	dev := envs[0]
	if dev.Snapshot != "shop-1" || dev.Sync != "Synced" || dev.Health != "Healthy" || dev.State != "1 of 1 components deployed" ||
		len(dev.Deployments) != 1 || dev.Deployments[0] != "shop-dev-web" {
		t.Errorf("dev: %+v", dev)
	}
	if p := envs[2].Promotion; p == nil || p.Run != "shop-1-to-prod" || !p.Approval || p.Display != "Waiting for approvals: 0 of 1" {
		t.Errorf("prod's promotion: %+v", envs[2].Promotion)
	}
	if envs[1].Binding != "" || envs[1].Promotion != nil {
		t.Errorf("staging: %+v", envs[1])
	}

	if len(st.Deployments) != 1 {
		t.Fatalf("deployments (another namespace's shown?): %+v", st.Deployments)
	}
	d := st.Deployments[0]
	if d.Name != "shop-dev-web" || d.Sync != "Synced" || d.Health != "Healthy" || d.Binding != "shop-dev" ||
		d.Ready == nil || d.Ready.Reason != "ResourcesReady" || len(d.Resources) != 1 ||
		d.Resources[0] != (Resource{Kind: "ConfigMap", Name: "cm-web-dev", Namespace: ns, Status: "Synced", Health: "Healthy"}) {
		t.Errorf("deployment: %+v", d)
	}
	if len(st.History) != 2 || st.History[0].User != "bob" || st.History[0].Verb != "patch" || st.History[1].User != "alice" ||
		st.History[0].Time != "2026-01-02T03:05:05.000Z" || st.History[0].Resource != "gitopsdeployments" {
		t.Errorf("history, newest first: %+v", st.History)
	}
}

func TestForbiddenIsShownAsSuch(t *testing.T) {
	c := fake.NewSimpleClientset(objects()...)
	c.PrependReactor("list", "gitopsdeployments", func(a k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: managedv1alpha1.GroupName, Resource: "gitopsdeployments"}, "",
			errors.New(`User "bob" cannot list resource "gitopsdeployments"`))
	})
	_, base := dashboard(t, c, Config{Describe: func(kind string, err error) string { return kind + ": " + err.Error() }})
	st := state(t, login(t, base), base, nil)
	msg := st.Errors["GitOpsDeployment"]
	if !strings.Contains(msg, `GitOpsDeployment: gitopsdeployments.managed-gitops.redhat.com is forbidden: User "bob" cannot list`) {
		t.Errorf("errors: %v", st.Errors)
	}
	if len(st.Deployments) != 0 {
		t.Errorf("deployments shown although refused: %+v", st.Deployments)
	}
}

// TestEventsDeliverChanges: a change the watch sees reaches the event stream.
func TestEventsDeliverChanges(t *testing.T) {
	c := fake.NewSimpleClientset(objects()...)
	_, base := dashboard(t, c, Config{})
	browser := login(t, base)
	state(t, browser, base, nil)

	req, _ := http.NewRequest(http.MethodGet, base+"/api/events", nil)
	res, err := browser.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if ct := res.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(res.Body)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	next := func(prefix string) string {
		t.Helper()
		timeout := time.After(5 * time.Second)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("stream ended waiting for %q", prefix)
				}
				if strings.HasPrefix(l, prefix) {
					return l
				}
			case <-timeout:
				t.Fatalf("no %q within 5s", prefix)
			}
		}
	}
	next("event: hello")

	d, err := c.ManagedGitopsV1alpha1().GitOpsDeployments(ns).Get(context.Background(), "shop-dev-web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d.Status.Health.Status = managedv1alpha1.HealthStatusCodeDegraded
	if _, err := c.ManagedGitopsV1alpha1().GitOpsDeployments(ns).Update(context.Background(), d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	next("event: change")
	if data := next("data: "); data != `data: {"kinds":["GitOpsDeployment"]}` {
		t.Errorf("change event: %s", data)
	}
	st := state(t, browser, base, func(s *State) bool { return len(s.Deployments) == 1 && s.Deployments[0].Health == "Degraded" })
	if st.Applications[0].Environments[0].Health != "Degraded" {
		t.Errorf("the graph's dev box did not follow: %+v", st.Applications[0].Environments[0])
	}
}

func TestCommandServesOnLoopbackOnly(t *testing.T) {
	s, err := New(Config{Namespace: ns, Client: fake.NewSimpleClientset()})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.cfg.Token) < 32 {
		t.Errorf("token %q is too short to be unguessable", s.cfg.Token)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- s.Serve(ctx, ln) }()
	u := s.URL(ln.Addr())
	if !strings.HasPrefix(u, "http://127.0.0.1:"+strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)+"/?token=") {
		t.Errorf("URL %s", u)
	}
	if code, _ := get(t, client(t), u, nil); code != http.StatusSeeOther {
		t.Errorf("GET %s: %d", u, code)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Serve: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not end with its context")
	}
}
