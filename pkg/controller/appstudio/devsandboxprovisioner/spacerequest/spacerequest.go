// Package spacerequest is what the controllers know of the Dev Sandbox operator's SpaceRequests
// (toolchain.dev.openshift.com/v1alpha1, reference §3.11): the resource, the labels and the
// finalizer the original service used with them, the few fields it reads (on unstructured
// objects: the service takes no dependency on the toolchain's Go module), and whether the
// cluster serves the API at all (Served), which the binder and the Dev Sandbox provisioner
// share.
package spacerequest

import (
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/klog/v2"
)

// GroupVersion serves the Dev Sandbox operator's SpaceRequests.
const GroupVersion = "toolchain.dev.openshift.com/v1alpha1"

// Resource is the SpaceRequests' resource.
var Resource = schema.GroupVersionResource{Group: "toolchain.dev.openshift.com", Version: "v1alpha1", Resource: "spacerequests"}

// Kind is the SpaceRequests' kind.
const Kind = "SpaceRequest"

// The labels and finalizer of the original service (application-api's constants).
const (
	// LabelClaim names the DeploymentTargetClaim a SpaceRequest was made for.
	LabelClaim = "appstudio.openshift.io/dtc"
	// LabelTarget names the DeploymentTarget made from a SpaceRequest.
	LabelTarget = "appstudio.openshift.io/dt"
	// Finalizer is the Dev Sandbox operator's: it removes it once the space is gone.
	Finalizer = "toolchain.dev.openshift.com/finalizer"
	// TierAppStudioEnv is the tier of the spaces requested for DeploymentTargetClaims.
	TierAppStudioEnv = "appstudio-env"
	// ReasonUnableToTerminate is the Ready reason of a SpaceRequest whose space the operator
	// cannot delete.
	ReasonUnableToTerminate = "UnableToTerminate"
)

// Recheck is how often discovery is asked whether the API is served.
const Recheck = time.Minute

// Served returns a function that tells whether the cluster serves SpaceRequests, asking
// discovery at most once a Recheck. Only discovery's own answer changes it: the group/version
// not found (NotFound), or found without the resource, is "not served"; the resource listed
// is "served". Any other error (a timeout, a 503, a broken connection)
// says nothing about the API: the previous answer stands (false before the first one) and the
// error is logged, so that a transient failure neither stops the provisioner's informer nor
// makes the binder report SpaceRequestAPINotServed.
func Served(d discovery.DiscoveryInterface, now func() time.Time) func() bool {
	var mu sync.Mutex
	var asked time.Time
	var served bool
	return func() bool {
		mu.Lock()
		defer mu.Unlock()
		if !asked.IsZero() && now().Sub(asked) < Recheck {
			return served
		}
		asked = now()
		list, err := d.ServerResourcesForGroupVersion(GroupVersion)
		switch {
		case apierrors.IsNotFound(err):
			served = false
		case err != nil || list == nil:
			klog.InfoS("could not ask discovery whether SpaceRequests are served; keeping the last answer",
				"groupVersion", GroupVersion, "served", served, "err", err)
		default:
			served = false
			for _, r := range list.APIResources {
				if r.Name == Resource.Resource {
					served = true
				}
			}
		}
		return served
	}
}

// NamespaceAccess is one entry of status.namespaceAccess: a namespace of the space and the
// Secret, in the SpaceRequest's namespace, with a kubeconfig for it.
type NamespaceAccess struct {
	Name      string
	SecretRef string
}

// Ready is the SpaceRequest's Ready condition, nil when it has none.
func Ready(sr *unstructured.Unstructured) *metav1.Condition {
	conds, _, _ := unstructured.NestedSlice(sr.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]interface{})
		if !ok || m["type"] != "Ready" {
			continue
		}
		str := func(k string) string { s, _ := m[k].(string); return s }
		return &metav1.Condition{Type: "Ready", Status: metav1.ConditionStatus(str("status")), Reason: str("reason"), Message: str("message")}
	}
	return nil
}

// IsReady tells whether the SpaceRequest's Ready condition is True.
func IsReady(sr *unstructured.Unstructured) bool {
	c := Ready(sr)
	return c != nil && c.Status == metav1.ConditionTrue
}

// Access is the SpaceRequest's status.namespaceAccess.
func Access(sr *unstructured.Unstructured) []NamespaceAccess {
	list, _, _ := unstructured.NestedSlice(sr.Object, "status", "namespaceAccess")
	out := make([]NamespaceAccess, 0, len(list))
	for _, a := range list {
		m, ok := a.(map[string]interface{})
		if !ok {
			continue
		}
		name, _ := m["name"].(string)
		ref, _ := m["secretRef"].(string)
		out = append(out, NamespaceAccess{Name: name, SecretRef: ref})
	}
	return out
}

// TargetClusterURL is the SpaceRequest's status.targetClusterURL.
func TargetClusterURL(sr *unstructured.Unstructured) string {
	s, _, _ := unstructured.NestedString(sr.Object, "status", "targetClusterURL")
	return s
}

// TierName is the SpaceRequest's spec.tierName.
func TierName(sr *unstructured.Unstructured) string {
	s, _, _ := unstructured.NestedString(sr.Object, "spec", "tierName")
	return s
}

// New is a SpaceRequest to create in namespace with generateName prefix, of tier, with labels
// and annotations.
func New(namespace, generateName, tier string, labels, annotations map[string]string) *unstructured.Unstructured {
	sr := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": GroupVersion,
		"kind":       Kind,
		"spec":       map[string]interface{}{"tierName": tier},
	}}
	sr.SetNamespace(namespace)
	sr.SetGenerateName(generateName)
	sr.SetLabels(labels)
	sr.SetAnnotations(annotations)
	return sr
}
