package cli

import (
	"errors"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestAPIError(t *testing.T) {
	syncruns := schema.GroupResource{Group: "managed-gitops.redhat.com", Resource: "gitopsdeploymentsyncruns"}
	for _, tc := range []struct {
		name, verb, ns, obj string
		r                   resource
		err                 error
		want                string
	}{{
		name: "403 of RBAC names the verb and the resource",
		verb: "create", r: resSyncRun, ns: "team-a",
		err:  apierrors.NewForbidden(syncruns, "", errors.New(`User "carol" cannot create resource "gitopsdeploymentsyncruns" in API group "managed-gitops.redhat.com" in the namespace "team-a"`)),
		want: `you may not create gitopsdeploymentsyncruns.managed-gitops.redhat.com in namespace "team-a": User "carol" cannot create resource "gitopsdeploymentsyncruns" in API group "managed-gitops.redhat.com" in the namespace "team-a"`,
	}, {
		name: "403 of admission keeps the server's reason",
		verb: "create", r: resApproval, ns: "team-a",
		err: apierrors.NewForbidden(schema.GroupResource{Group: "appstudio.redhat.com", Resource: "promotionapprovals"}, "shop-42-prod-x7k2p",
			errors.New(`user "carol" may not approve environments/prod in namespace team-a: approving takes the verb approve on the Environment`)),
		want: `you may not create promotionapprovals.appstudio.redhat.com in namespace "team-a": user "carol" may not approve environments/prod in namespace team-a: approving takes the verb approve on the Environment`,
	}, {
		name: "404 of a name",
		verb: "get", r: resDeployment, ns: "x", obj: "foo",
		err:  apierrors.NewNotFound(schema.GroupResource{Group: "managed-gitops.redhat.com", Resource: "gitopsdeployments"}, "foo"),
		want: `gitopsdeployment "foo" not found in namespace "x"`,
	}, {
		name: "a list across namespaces",
		verb: "list", r: resApplication,
		err:  apierrors.NewForbidden(schema.GroupResource{Group: "appstudio.redhat.com", Resource: "applications"}, "", errors.New("no")),
		want: `you may not list applications.appstudio.redhat.com in any namespace: no`,
	}, {
		name: "anything else as the server says it",
		verb: "create", r: resRun, ns: "x",
		err:  apierrors.NewConflict(schema.GroupResource{Group: "appstudio.redhat.com", Resource: "promotionruns"}, "r", errors.New("busy")),
		want: `Operation cannot be fulfilled on promotionruns.appstudio.redhat.com "r": busy`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			if got := message(apiError(tc.err, tc.verb, tc.r, tc.ns, tc.obj)); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
	if apiError(nil, "get", resRun, "x", "y") != nil {
		t.Error("nil is no error")
	}
}
