//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/jsonmergepatch"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
)

// appServicePlayer plays application-service's SnapshotEnvironmentBinding controller for every
// binding of a namespace, in the background, as promotion_appservice_test.go plays it for one
// binding step by step: on each new generation of a binding it generates, for each component,
// the overlay components/<component>/overlays/<environment> (a ConfigMap cm-<component>-<environment>
// holding the Snapshot's image), commits and pushes it when it changed, writes status.components
// with an Update of the status, then its GitOpsResourcesGenerated condition (no
// observedGeneration) with a merge patch. As there, it reports the commit as the branch, so
// that Argo CD deploys it at once.
type appServicePlayer struct {
	ns, dir, repoURL string

	mu      sync.Mutex
	handled map[string]int64 // binding name → generation answered
	held    map[string]bool  // Environments whose bindings it does not answer yet
}

// startAppServicePlayer starts the player for ns until the spec (or container) ends.
func startAppServicePlayer(ctx context.Context, ns string) *appServicePlayer {
	GinkgoHelper()
	dir := GinkgoT().TempDir()
	p := &appServicePlayer{ns: ns, dir: dir, handled: map[string]int64{}, held: map[string]bool{}}
	p.repoURL = "file://" + gitRepository(dir, map[string]string{"README.md": "gitops\n"})
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	DeferCleanup(cancel)
	go func() {
		defer GinkgoRecover()
		for ctx.Err() == nil {
			if err := p.pass(ctx); err != nil && ctx.Err() == nil {
				GinkgoWriter.Printf("application-service player: %v\n", err)
			}
			select {
			case <-ctx.Done():
			case <-time.After(300 * time.Millisecond):
			}
		}
	}()
	return p
}

// hold stops answering env's bindings; release answers them again.
func (p *appServicePlayer) hold(env string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.held[env] = true
}

func (p *appServicePlayer) release(env string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.held, env)
}

// pass answers every binding with a generation not answered yet.
func (p *appServicePlayer) pass(ctx context.Context) error {
	list, err := gitops.AppStudioV1alpha1().SnapshotEnvironmentBindings(p.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for i := range list.Items {
		seb := &list.Items[i]
		p.mu.Lock()
		skip := p.held[seb.Spec.Environment] || p.handled[seb.Name] >= seb.Generation
		p.mu.Unlock()
		if skip {
			continue
		}
		if err := p.reconcile(ctx, seb); err != nil {
			return fmt.Errorf("binding %s: %w", seb.Name, err)
		}
		p.mu.Lock()
		p.handled[seb.Name] = seb.Generation
		p.mu.Unlock()
	}
	return nil
}

func (p *appServicePlayer) reconcile(ctx context.Context, seb *appstudiov1alpha1.SnapshotEnvironmentBinding) error {
	snapshot, err := gitops.AppStudioV1alpha1().Snapshots(p.ns).Get(ctx, seb.Spec.Snapshot, metav1.GetOptions{})
	if err != nil {
		return err
	}
	for _, c := range seb.Spec.Components {
		var image string
		for _, sc := range snapshot.Spec.Components {
			if sc.Name == c.Name {
				image = sc.ContainerImage
			}
		}
		overlay := filepath.Join("components", c.Name, "overlays", seb.Spec.Environment)
		commit, err := p.generate(overlay, configMap("cm-"+c.Name+"-"+seb.Spec.Environment, image))
		if err != nil {
			return err
		}
		status := appstudiov1alpha1.BindingComponentStatus{Name: c.Name, GitOpsRepository: appstudiov1alpha1.BindingComponentGitOpsRepository{
			URL: p.repoURL, Branch: commit, Path: overlay, CommitID: commit, GeneratedResources: []string{"cm.yaml"}}}
		replaced := false
		for i := range seb.Status.Components {
			if seb.Status.Components[i].Name == c.Name {
				seb.Status.Components[i], replaced = status, true
			}
		}
		if !replaced {
			seb.Status.Components = append(seb.Status.Components, status)
		}
	}
	if _, err := gitops.AppStudioV1alpha1().SnapshotEnvironmentBindings(p.ns).UpdateStatus(ctx, seb, metav1.UpdateOptions{}); err != nil {
		return err
	}
	current, err := gitops.AppStudioV1alpha1().SnapshotEnvironmentBindings(p.ns).Get(ctx, seb.Name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	original, _ := json.Marshal(current)
	meta.SetStatusCondition(&current.Status.GitOpsRepoConditions, metav1.Condition{Type: "GitOpsResourcesGenerated",
		Status: metav1.ConditionTrue, Reason: "OK", Message: "GitOps repository sync successful"})
	modified, _ := json.Marshal(current)
	patch, err := jsonmergepatch.CreateThreeWayJSONMergePatch(original, modified, original)
	if err != nil {
		return err
	}
	_, err = gitops.AppStudioV1alpha1().SnapshotEnvironmentBindings(p.ns).Patch(ctx, seb.Name, types.MergePatchType, patch, metav1.PatchOptions{}, "status")
	return err
}

// generate writes the overlay's cm.yaml, commits and pushes it if it changed, and returns the
// branch's head.
func (p *appServicePlayer) generate(overlay, content string) (string, error) {
	full := filepath.Join(p.dir, "work", overlay, "cm.yaml")
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
		return "", err
	}
	git := func(args ...string) (string, error) {
		cmd := exec.Command("git", append([]string{"-C", filepath.Join(p.dir, "work")}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=e2e", "GIT_AUTHOR_EMAIL=e2e@example.com",
			"GIT_COMMITTER_NAME=e2e", "GIT_COMMITTER_EMAIL=e2e@example.com")
		out, err := cmd.CombinedOutput()
		if err != nil {
			return "", fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out)), nil
	}
	if _, err := git("add", "."); err != nil {
		return "", err
	}
	if _, err := git("diff", "--cached", "--quiet"); err != nil {
		if _, err := git("commit", "-q", "-m", "Generate overlay "+overlay); err != nil {
			return "", err
		}
		if _, err := git("push", "-q", filepath.Join(p.dir, "repo.git"), "main"); err != nil {
			return "", err
		}
	}
	return git("rev-parse", "HEAD")
}
