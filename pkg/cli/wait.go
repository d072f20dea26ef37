package cli

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned"
)

// goal is what `wait --for` waits for.
type goal string

const (
	goalSynced   goal = "synced"
	goalHealthy  goal = "healthy"
	goalPromoted goal = "promoted"
)

// goals are the kinds each goal applies to, the first its default for a bare NAME.
var goals = map[goal][]resource{
	goalSynced:   {resDeployment, resSyncRun, resBinding},
	goalHealthy:  {resDeployment, resBinding},
	goalPromoted: {resRun},
}

func newWaitCommand(o *Options) *cobra.Command {
	var forGoal string
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "wait NAME | KIND/NAME --for=synced|healthy|promoted [--timeout=5m]",
		Short: "Wait until a deployment is synced or healthy, a SyncRun has synced, or a PromotionRun has promoted",
		Long: `Wait for an object of the GitOps Service to reach a state, printing a line each time what it
reports changes, for CI jobs. Exit 0 when it does, non-zero when it cannot any more (a failed
SyncRun or PromotionRun) or when --timeout passes, saying what it waited for and what it saw last.

  --for=synced    a GitOpsDeployment (the default kind) Synced at its current spec; a
                  SyncRun (syncrun/NAME) whose sync succeeded; a binding (binding/NAME) whose
                  GitOpsDeployments are all Synced
  --for=healthy   a GitOpsDeployment Synced and Healthy at its current spec (its ResourcesReady);
                  a binding with all components deployed (AllComponentsDeployed)
  --for=promoted  a PromotionRun (the default kind) Complete with Success

--timeout=0 checks once.`,
		Example: `  kubectl gitops wait web --for=healthy --timeout=3m
  kubectl gitops wait syncrun/web-manual-x7k2p --for=synced
  kubectl gitops wait shop-42-to-prod-q9w3z --for=promoted --timeout=15m`,
		Args:              exactArgs(1, "wait takes the name of what to wait for"),
		ValidArgsFunction: completeNames(o, resDeployment, resRun),
		RunE: func(cmd *cobra.Command, args []string) error {
			g := goal(strings.ToLower(forGoal))
			kinds, ok := goals[g]
			if !ok {
				return errorf("--for=%q: wait for one of synced, healthy or promoted", forGoal)
			}
			r, name, hasKind, err := splitKind(args[0])
			if err != nil {
				return err
			}
			if !hasKind {
				r = kinds[0]
			} else if !contains(kinds, r) {
				return errorf("a %s is never %s: --for=%s applies to %s", r.name(), g, g, kindNames(kinds))
			}
			ns, err := o.Namespace()
			if err != nil {
				return err
			}
			return waitFor(cmd.Context(), o, timeout, g, r, ns, name)
		},
	}
	cmd.Flags().StringVar(&forGoal, "for", "", "What to wait for: synced, healthy or promoted (required).")
	cmd.Flags().DurationVar(&timeout, "timeout", 5*time.Minute, "How long to wait; 0 checks once.")
	_ = cmd.RegisterFlagCompletionFunc("for", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return []string{"synced", "healthy", "promoted"}, cobra.ShellCompDirectiveNoFileComp
	})
	return cmd
}

// observation is what wait saw of an object: its state in words, and whether it reached the
// goal, or never will (failed says why).
type observation struct {
	state  string
	done   bool
	failed string
}

// waitFor polls r/name every o.PollInterval until it reaches g, printing each new state.
func waitFor(ctx context.Context, o *Options, timeout time.Duration, g goal, r resource, ns, name string) error {
	c, err := o.Client()
	if err != nil {
		return err
	}
	ref := r.name() + "/" + name
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := o.Now()
	last := ""
	for {
		obs, err := observe(ctx, c, g, r, ns, name)
		if err != nil {
			if ctx.Err() != nil && ctx.Err() == context.DeadlineExceeded {
				return timedOut(timeout, ref, g, last)
			}
			return err
		}
		if obs.state != last {
			fprintf(o.Out, "%s: %s\n", ref, obs.state)
			last = obs.state
		}
		if obs.done {
			fprintf(o.Out, "%s is %s (after %s)\n", ref, g, o.Now().Sub(start).Round(time.Second))
			return nil
		}
		if obs.failed != "" {
			return errorf("%s will not be %s: %s", ref, g, obs.failed)
		}
		if timeout <= 0 {
			return errorf("%s is not %s: %s", ref, g, last)
		}
		select {
		case <-ctx.Done():
			if ctx.Err() == context.DeadlineExceeded {
				return timedOut(timeout, ref, g, last)
			}
			return ctx.Err()
		case <-time.After(o.PollInterval):
		}
	}
}

func timedOut(timeout time.Duration, ref string, g goal, last string) error {
	if last == "" {
		last = "nothing (the API did not answer in time)"
	}
	return errorf("timed out after %s waiting for %s to be %s; last seen: %s", timeout, ref, g, last)
}

// observe reads the object once.
func observe(ctx context.Context, c versioned.Interface, g goal, r resource, ns, name string) (observation, error) {
	switch r {
	case resDeployment:
		d, err := getDeployment(ctx, c, ns, name)
		if err != nil {
			return observation{}, err
		}
		return observeDeployment(d, g), nil
	case resSyncRun:
		s, err := getSyncRun(ctx, c, ns, name)
		if err != nil {
			return observation{}, err
		}
		return observeSyncRun(s), nil
	case resBinding:
		b, err := getBinding(ctx, c, ns, name)
		if err != nil {
			return observation{}, err
		}
		return observeBinding(b, g), nil
	case resRun:
		run, err := getRun(ctx, c, ns, name)
		if err != nil {
			return observation{}, err
		}
		return observeRun(run), nil
	}
	return observation{}, fmt.Errorf("cannot wait for a %s", r.name())
}

func observeDeployment(d *managedv1alpha1.GitOpsDeployment, g goal) observation {
	parts := []string{"sync " + orUnknown(string(d.Status.Sync.Status)), "health " + orUnknown(string(d.Status.Health.Status))}
	current := reconciled(d)
	if !current {
		parts = append(parts, "Argo CD has not compared the current spec yet")
	}
	state := strings.Join(parts, ", ")
	if problems := deploymentProblems(d); len(problems) > 0 {
		state += ": " + oneLine(problems[0])
	}
	synced := current && d.Status.Sync.Status == managedv1alpha1.SyncStatusCodeSynced
	if g == goalSynced {
		return observation{state: state, done: synced}
	}
	return observation{state: state, done: deploymentReady(d)}
}

func observeSyncRun(s *managedv1alpha1.GitOpsDeploymentSyncRun) observation {
	for _, c := range s.Status.Conditions {
		if c.Type != managedv1alpha1.GitOpsDeploymentSyncRunConditionErrorOccurred {
			continue
		}
		switch c.Status {
		case managedv1alpha1.GitOpsConditionStatusFalse:
			return observation{state: "the sync succeeded", done: true}
		case managedv1alpha1.GitOpsConditionStatusTrue:
			return observation{state: "failed: " + oneLine(c.Message), failed: oneLine(c.Message)}
		}
	}
	return observation{state: "waiting or syncing (gitopsdeployment " + s.Spec.GitopsDeploymentName + ")"}
}

func observeBinding(b *appstudiov1alpha1.SnapshotEnvironmentBinding, g goal) observation {
	n := bindingNode(b, nil, false)
	state := n.State
	if n.Reason != "" {
		state += ": " + oneLine(n.Reason)
	}
	if g == goalHealthy {
		deployed := findCondition(b.Status.ComponentDeploymentConditions, appstudiov1alpha1.ComponentDeploymentConditionAllComponentsDeployed)
		return observation{state: state, done: deployed != nil && deployed.Status == "True"}
	}
	synced := len(b.Status.GitOpsDeployments) > 0
	for _, d := range b.Status.GitOpsDeployments {
		synced = synced && d.SyncStatus == string(managedv1alpha1.SyncStatusCodeSynced)
	}
	return observation{state: state, done: synced}
}

func observeRun(r *appstudiov1alpha1.PromotionRun) observation {
	parts := []string{runState(r)}
	for _, s := range r.Status.EnvironmentStatus {
		if s.Status != appstudiov1alpha1.PromotionRunEnvironmentStatusSuccess {
			parts = append(parts, fmt.Sprintf("%s %s: %s", s.EnvironmentName, s.Status, oneLine(s.DisplayStatus)))
		}
	}
	var errorMessage string
	for _, c := range r.Status.Conditions {
		if c.Type == appstudiov1alpha1.PromotionRunConditionErrorOccurred && c.Status == appstudiov1alpha1.PromotionRunConditionStatusTrue {
			errorMessage = oneLine(c.Message)
			// A step that failed for the run's reason says it already.
			if !strings.HasSuffix(parts[len(parts)-1], ": "+errorMessage) {
				parts = append(parts, errorMessage)
			}
		}
	}
	obs := observation{state: strings.Join(parts, "; ")}
	if r.Status.State == appstudiov1alpha1.PromotionRunStateComplete {
		if r.Status.CompletionResult == appstudiov1alpha1.PromotionRunCompleteResultSuccess {
			obs.done = true
		} else {
			obs.failed = orDefault(errorMessage, obs.state)
		}
	}
	return obs
}

func contains(l []resource, r resource) bool {
	for _, x := range l {
		if x == r {
			return true
		}
	}
	return false
}

func kindNames(l []resource) string {
	var names []string
	for _, r := range l {
		names = append(names, r.name())
	}
	return strings.Join(names, ", ")
}
