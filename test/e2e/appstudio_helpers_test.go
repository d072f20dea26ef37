//go:build e2e

package e2e

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
)

// createApplicationWithManualEnvironments creates, in ns, the Application app (displayed as
// display) and a Manual Environment for each name of environments (displayed as its value),
// as a team does before it promotes by hand.
func createApplicationWithManualEnvironments(ctx context.Context, ns, app, display string, environments map[string]string) {
	GinkgoHelper()
	studio := gitops.AppStudioV1alpha1()
	_, err := studio.Applications(ns).Create(ctx, &appstudiov1alpha1.Application{
		ObjectMeta: metav1.ObjectMeta{Name: app}, Spec: appstudiov1alpha1.ApplicationSpec{DisplayName: display},
	}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	for env, envDisplay := range environments {
		_, err = studio.Environments(ns).Create(ctx, &appstudiov1alpha1.Environment{
			ObjectMeta: metav1.ObjectMeta{Name: env},
			Spec:       appstudiov1alpha1.EnvironmentSpec{DisplayName: envDisplay, DeploymentStrategy: appstudiov1alpha1.DeploymentStrategyManual},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
	}
}
