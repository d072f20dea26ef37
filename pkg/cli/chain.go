package cli

import (
	"fmt"
	"strings"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
)

// The chains `why` prints: from the object asked about down to what fails, each link with the
// reason the service gives, keeping only the links that are not well.

// whyDeployment is a GitOpsDeployment and its resources that are not Synced and Healthy.
func whyDeployment(d *managedv1alpha1.GitOpsDeployment) *Node {
	return deploymentNode(d, true)
}

// whyBinding is a binding, its GitOpsDeployments that are not well, and their resources.
func whyBinding(b *appstudiov1alpha1.SnapshotEnvironmentBinding, deployments map[string]*managedv1alpha1.GitOpsDeployment) *Node {
	return bindingNode(b, deployments, true)
}

// whyRun is a PromotionRun, its steps that did not succeed (a step's display status says what
// it waits for or why it failed), and under each the binding of the run's Application to that
// Environment, down to the failing resources.
func whyRun(r *appstudiov1alpha1.PromotionRun, bindings []appstudiov1alpha1.SnapshotEnvironmentBinding,
	deployments map[string]*managedv1alpha1.GitOpsDeployment) *Node {
	n := &Node{Kind: "PromotionRun", Name: r.Name, Namespace: r.Namespace, State: runState(r)}
	for _, c := range r.Status.Conditions {
		if c.Type == appstudiov1alpha1.PromotionRunConditionErrorOccurred && c.Status == appstudiov1alpha1.PromotionRunConditionStatusTrue {
			n.Problem, n.Reason = true, c.Message
		}
	}
	if r.Status.CompletionResult == appstudiov1alpha1.PromotionRunCompleteResultFailure {
		n.Problem = true
	}
	target := r.Spec.ManualPromotion.TargetEnvironment
	if target == "" {
		target = r.Spec.AutomatedPromotion.InitialEnvironment
	}
	n.Details = []string{"application " + r.Spec.Application, "snapshot " + r.Spec.Snapshot, "to " + target}
	steps := r.Status.EnvironmentStatus
	if len(steps) == 0 && r.Status.State != appstudiov1alpha1.PromotionRunStateComplete {
		n.Problem = true
		if n.Reason == "" {
			n.Reason = "not started yet: the service has not taken it up"
		}
	}
	for _, s := range steps {
		if s.Status == appstudiov1alpha1.PromotionRunEnvironmentStatusSuccess {
			continue
		}
		e := &Node{Kind: "Environment", Name: s.EnvironmentName, State: fmt.Sprintf("step %d %s", s.Step, s.Status),
			Problem: true, Reason: s.DisplayStatus}
		for i := range bindings {
			b := &bindings[i]
			if b.Spec.Application == r.Spec.Application && b.Spec.Environment == s.EnvironmentName {
				if bn := whyBinding(b, deployments); bn.Problem {
					e.Children = append(e.Children, bn)
				}
			}
		}
		n.Children = append(n.Children, e)
	}
	if n.Problem && n.Reason == "" && len(n.Children) == 0 {
		n.Reason = "failed, with no step that says why"
	}
	return n
}

// runState is a PromotionRun's state as a person says it.
func runState(r *appstudiov1alpha1.PromotionRun) string {
	switch {
	case r.Status.State == "":
		return "Pending"
	case r.Status.CompletionResult != "":
		return string(r.Status.State) + " " + string(r.Status.CompletionResult)
	}
	return string(r.Status.State)
}

// verdict is the one sentence `why` ends with: nothing to explain, or how many objects fail.
func verdict(n *Node) string {
	if !n.Problem && !anyProblem(n.Children) {
		switch n.Kind {
		case "PromotionRun":
			if n.State == "Complete Success" {
				return fmt.Sprintf("%s %s succeeded: nothing to explain.", n.Kind, n.Name)
			}
			return fmt.Sprintf("%s %s is %s and reports no problem.", n.Kind, n.Name, n.State)
		case "SnapshotEnvironmentBinding":
			return fmt.Sprintf("%s %s: every component is deployed, nothing to explain.", n.Kind, n.Name)
		}
		return fmt.Sprintf("%s %s is Synced and Healthy: nothing to explain.", n.Kind, n.Name)
	}
	leaves := failingLeaves(n)
	return fmt.Sprintf("%s %s is not well; where it fails: %s.", n.Kind, n.Name, strings.Join(leaves, ", "))
}

func anyProblem(nodes []*Node) bool {
	for _, c := range nodes {
		if c.Problem || anyProblem(c.Children) {
			return true
		}
	}
	return false
}

// failingLeaves are the deepest objects that fail: where to look first.
func failingLeaves(n *Node) []string {
	var out []string
	for _, c := range n.Children {
		out = append(out, failingLeaves(c)...)
	}
	if len(out) == 0 && n.Problem {
		out = append(out, n.Kind+"/"+n.Name)
	}
	return out
}
