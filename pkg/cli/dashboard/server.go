// Package dashboard is `kubectl gitops dashboard`: a web page served on 127.0.0.1 by the
// plugin's own process, which is the only thing that talks to the GitOps API, with the user's
// credentials. It watches the namespace's kinds and pushes what changed to the page with
// Server-Sent Events; the page (static/, embedded, no code from elsewhere) fetches the state
// again and renders it. Actions (sync, approve, reject, roll back, release) are POSTs that call the plugin's own
// code paths.
//
// The server is for the user alone: it answers only requests that carry the random token of
// its URL (a cookie after the first page load), with a Host header of 127.0.0.1 or localhost
// at its port (against DNS rebinding), and POSTs only from its own origin.
package dashboard

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned"
)

//go:embed static
var static embed.FS

// Config is what the dashboard needs of the plugin.
type Config struct {
	Namespace string
	Client    versioned.Interface
	// Describe is what the user reads of err, returned when listing or watching kind; nil:
	// err's own message.
	Describe func(kind string, err error) string
	// Sync creates a SyncRun of the manual GitOpsDeployment name and returns what was created.
	Sync func(ctx context.Context, name string) (string, error)
	// Decide approves or rejects (approve false) the promotion of the PromotionRun run into env.
	Decide func(ctx context.Context, run, env string, approve bool, comment string) (string, error)
	// Rollback holds the GitOpsDeployment deployment at the commit of its DeploymentRecord
	// record, for reason (kubectl gitops rollback --to), and returns what it did.
	Rollback func(ctx context.Context, deployment, record, reason string) (string, error)
	// Release deletes the hold of the GitOpsDeployment deployment (kubectl gitops release).
	Release func(ctx context.Context, deployment string) (string, error)
	// Diff is the API's diff of the records from and to of the GitOpsDeployment deployment
	// (kubectl gitops diff --from --to).
	Diff func(ctx context.Context, deployment, from, to string) (*managedv1alpha1.DeploymentRecordDiff, error)
	// Token is the secret of the URL; empty: a random one.
	Token string
	// Retry is how long to wait before listing a kind again after an error; 0: 10s.
	Retry time.Duration
	// Ping is how often an idle event stream gets a comment; 0: 15s.
	Ping time.Duration
}

// Server serves the dashboard.
type Server struct {
	cfg   Config
	store *store
}

// New is a dashboard of cfg.Namespace; Start begins its watches.
func New(cfg Config) (*Server, error) {
	if cfg.Token == "" {
		b := make([]byte, 24)
		if _, err := rand.Read(b); err != nil {
			return nil, err
		}
		cfg.Token = hex.EncodeToString(b)
	}
	if cfg.Describe == nil {
		cfg.Describe = func(_ string, err error) string { return err.Error() }
	}
	if cfg.Retry == 0 {
		cfg.Retry = 10 * time.Second
	}
	if cfg.Ping == 0 {
		cfg.Ping = 15 * time.Second
	}
	return &Server{cfg: cfg, store: newStore()}, nil
}

// Start opens the watches of the namespace's kinds; they end with ctx.
func (s *Server) Start(ctx context.Context) {
	for _, src := range sources(s.cfg.Client, s.cfg.Namespace) {
		go s.store.run(ctx, src, s.cfg.Retry)
	}
}

// URL is the address to open, with the token, for a server listening at addr.
func (s *Server) URL(addr net.Addr) string {
	return fmt.Sprintf("http://127.0.0.1:%d/?token=%s", port(addr), s.cfg.Token)
}

// Serve starts the watches and serves on ln until ctx ends.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s.Start(ctx)
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return ctx }}
	go func() {
		<-ctx.Done()
		// Event streams do not end by themselves: Close, not Shutdown.
		_ = srv.Close()
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Handler is the dashboard's HTTP handler, every route behind the checks.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	assets, _ := fs.Sub(static, "static")
	files := http.FileServer(http.FS(assets))
	mux.Handle("GET /", files)
	mux.HandleFunc("GET /api/state", s.state)
	mux.HandleFunc("GET /api/events", s.events)
	mux.HandleFunc("POST /api/sync", s.sync)
	mux.HandleFunc("POST /api/decide", s.decide)
	mux.HandleFunc("GET /api/diff", s.diff)
	mux.HandleFunc("POST /api/rollback", s.rollback)
	mux.HandleFunc("POST /api/release", s.release)
	return s.guard(mux)
}

// cookieName is per port: cookies do not tell ports apart, and two dashboards may run.
func cookieName(p int) string { return "gitops-dashboard-" + strconv.Itoa(p) }

// guard lets through what comes from the user's own page only.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-store")

		p := 0
		if addr, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
			p = port(addr)
		}
		self := []string{"127.0.0.1:" + strconv.Itoa(p), "localhost:" + strconv.Itoa(p)}
		if p == 0 || (r.Host != self[0] && r.Host != self[1]) {
			http.Error(w, "forbidden: the dashboard answers at 127.0.0.1 or localhost only", http.StatusForbidden)
			return
		}
		if t := r.URL.Query().Get("token"); t != "" {
			if !s.validToken(t) {
				http.Error(w, "forbidden: wrong token; open the URL that kubectl gitops dashboard printed", http.StatusForbidden)
				return
			}
			http.SetCookie(w, &http.Cookie{Name: cookieName(p), Value: t, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
			if r.Method == http.MethodGet && r.URL.Path == "/" {
				// The token leaves the address bar (and the history) once it is in the cookie.
				http.Redirect(w, r, "/", http.StatusSeeOther)
				return
			}
		} else if c, err := r.Cookie(cookieName(p)); err != nil || !s.validToken(c.Value) {
			http.Error(w, "forbidden: open the URL that kubectl gitops dashboard printed (it holds the token)", http.StatusForbidden)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			origin := r.Header.Get("Origin")
			if origin != "http://"+self[0] && origin != "http://"+self[1] {
				http.Error(w, "forbidden: not from the dashboard's own page", http.StatusForbidden)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

func (s *Server) validToken(t string) bool {
	return subtle.ConstantTimeCompare([]byte(t), []byte(s.cfg.Token)) == 1
}

func (s *Server) state(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, buildState(s.cfg.Namespace, s.store.snapshot(), s.cfg.Describe))
}

// events is the event stream: "change" with the kinds changed since the last event, and a
// comment now and then so that nothing between closes an idle stream.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	sub := s.store.subscribe()
	defer s.store.unsubscribe(sub)
	w.Header().Set("Content-Type", "text/event-stream")
	fmt.Fprintf(w, "retry: 2000\nevent: hello\ndata: {\"namespace\":%q}\n\n", s.cfg.Namespace)
	flusher.Flush()
	ping := time.NewTicker(s.cfg.Ping)
	defer ping.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-ping.C:
			_, _ = io.WriteString(w, ": ping\n\n")
		case <-sub.signal:
			kinds, _ := json.Marshal(map[string][]string{"kinds": s.store.changed(sub)})
			fmt.Fprintf(w, "event: change\ndata: %s\n\n", kinds)
		}
		flusher.Flush()
	}
}

type syncRequest struct {
	Name string `json:"name"`
}

type decideRequest struct {
	Run      string `json:"run"`
	Env      string `json:"env"`
	Decision string `json:"decision"`
	Comment  string `json:"comment"`
}

type holdRequest struct {
	Deployment string `json:"deployment"`
	Record     string `json:"record"`
	Reason     string `json:"reason"`
}

// result is what an action answers: what it created, or why it failed.
type result struct {
	Message string `json:"message,omitempty"`
	Error   string `json:"error,omitempty"`
}

func (s *Server) sync(w http.ResponseWriter, r *http.Request) {
	var req syncRequest
	if !readJSON(w, r, &req) {
		return
	}
	if req.Name == "" || s.cfg.Sync == nil {
		writeJSON(w, http.StatusBadRequest, result{Error: "name the GitOpsDeployment to sync"})
		return
	}
	msg, err := s.cfg.Sync(r.Context(), req.Name)
	answer(w, msg, err)
}

func (s *Server) decide(w http.ResponseWriter, r *http.Request) {
	var req decideRequest
	if !readJSON(w, r, &req) {
		return
	}
	if req.Run == "" || (req.Decision != "approve" && req.Decision != "reject") || s.cfg.Decide == nil {
		writeJSON(w, http.StatusBadRequest, result{Error: "name the PromotionRun, and approve or reject"})
		return
	}
	msg, err := s.cfg.Decide(r.Context(), req.Run, req.Env, req.Decision == "approve", req.Comment)
	answer(w, msg, err)
}

func (s *Server) rollback(w http.ResponseWriter, r *http.Request) {
	var req holdRequest
	if !readJSON(w, r, &req) {
		return
	}
	if req.Deployment == "" || req.Record == "" || s.cfg.Rollback == nil {
		writeJSON(w, http.StatusBadRequest, result{Error: "name the GitOpsDeployment and the DeploymentRecord to roll back to"})
		return
	}
	msg, err := s.cfg.Rollback(r.Context(), req.Deployment, req.Record, req.Reason)
	answer(w, msg, err)
}

func (s *Server) release(w http.ResponseWriter, r *http.Request) {
	var req holdRequest
	if !readJSON(w, r, &req) {
		return
	}
	if req.Deployment == "" || s.cfg.Release == nil {
		writeJSON(w, http.StatusBadRequest, result{Error: "name the GitOpsDeployment to release"})
		return
	}
	msg, err := s.cfg.Release(r.Context(), req.Deployment)
	answer(w, msg, err)
}

func answer(w http.ResponseWriter, msg string, err error) {
	if err != nil {
		writeJSON(w, http.StatusUnprocessableEntity, result{Error: err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, result{Message: msg})
}

// readJSON reads a JSON request body: a form's POST (which another site may send) is not one.
func readJSON(w http.ResponseWriter, r *http.Request, v interface{}) bool {
	if !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		writeJSON(w, http.StatusUnsupportedMediaType, result{Error: "send application/json"})
		return false
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(v); err != nil {
		writeJSON(w, http.StatusBadRequest, result{Error: "bad request: " + err.Error()})
		return false
	}
	return true
}

func writeJSON(w http.ResponseWriter, code int, v interface{}) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func port(addr net.Addr) int {
	if a, ok := addr.(*net.TCPAddr); ok {
		return a.Port
	}
	_, p, _ := net.SplitHostPort(addr.String())
	n, _ := strconv.Atoi(p)
	return n
}
