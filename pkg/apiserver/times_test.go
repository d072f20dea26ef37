package apiserver

import (
	"context"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned"
	"github.com/gitops-service/gitops-service/pkg/storage/pgtest"
)

// A time that decodes but has no RFC 3339 form in UTC (year 0 at +01:00 is year -1 in UTC)
// would be stored as a value no decoder reads, and the object and every list of its resource
// could not be read again. It is refused with 422 at its field, and the resource stays readable.
func TestTimeWithoutRFC3339FormIsRefused(t *testing.T) {
	clientset := versioned.NewForConfigOrDie(startServer(t, pgtest.NewDatabase(t)))
	rest := clientset.AppStudioV1alpha1().RESTClient()
	ctx := context.Background()
	const path = "/apis/appstudio.redhat.com/v1alpha1/namespaces/team/environments"
	created := rest.Post().AbsPath(path).SetHeader("Content-Type", "application/json").Body([]byte(
		`{"apiVersion":"appstudio.redhat.com/v1alpha1","kind":"Environment","metadata":{"name":"dev"},
		  "spec":{"displayName":"Dev","deploymentStrategy":"Manual"}}`)).Do(ctx)
	if err := created.Error(); err != nil {
		t.Fatal(err)
	}
	err := rest.Put().AbsPath(path, "dev", "status").SetHeader("Content-Type", "application/json").Body([]byte(
		`{"apiVersion":"appstudio.redhat.com/v1alpha1","kind":"Environment","metadata":{"name":"dev"},
		  "spec":{"displayName":"Dev","deploymentStrategy":"Manual"},
		  "status":{"conditions":[{"type":"ErrorOccurred","status":"False","reason":"R","message":"m",
		    "lastTransitionTime":"0000-01-01T00:00:00+01:00"}]}}`)).Do(ctx).Error()
	if !apierrors.IsInvalid(err) {
		t.Fatalf("status with a time of year -1 in UTC: want 422, got %v", err)
	}
	if causes := err.(apierrors.APIStatus).Status().Details.Causes; len(causes) != 1 || causes[0].Field != "status.conditions[0].lastTransitionTime" {
		t.Errorf("causes %+v, want one at status.conditions[0].lastTransitionTime", causes)
	}
	if _, err := clientset.AppStudioV1alpha1().Environments("team").List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("the resource must stay readable: %v", err)
	}
}
