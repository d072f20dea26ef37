package bench

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"

	gitopsv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	gitopsclient "github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned/typed/managedgitops/v1alpha1"
)

// Content types a target's single-object requests (create, get, update status, delete) use.
const (
	ContentTypeJSON     = "json"
	ContentTypeProtobuf = "protobuf"
)

// objectClient does the workload's single-object verbs in one content type. What create and
// updateStatus return is the object as the server answered, in the client's own encoding, for
// storedObjects: updateStatus takes it back and writes it with a new status.
type objectClient interface {
	create(ctx context.Context, obj *unstructured.Unstructured) ([]byte, error)
	get(ctx context.Context, name string) error
	// updateStatus returns the written object's name@resourceVersion and its stored form.
	updateStatus(ctx context.Context, stored []byte, revision string) (string, []byte, error)
	delete(ctx context.Context, name string) error
}

// dynamicObjects speak JSON through the dynamic client: the only way to reach a CRD (B), and
// how A and C ran before protobuf. Stored objects are JSON.
type dynamicObjects struct{ r dynamic.ResourceInterface }

func (d dynamicObjects) create(ctx context.Context, obj *unstructured.Unstructured) ([]byte, error) {
	o, err := d.r.Create(ctx, obj, metav1.CreateOptions{})
	if err != nil {
		return nil, err
	}
	return o.MarshalJSON()
}

func (d dynamicObjects) get(ctx context.Context, name string) error {
	_, err := d.r.Get(ctx, name, metav1.GetOptions{})
	return err
}

func (d dynamicObjects) updateStatus(ctx context.Context, stored []byte, revision string) (string, []byte, error) {
	o := &unstructured.Unstructured{}
	if err := o.UnmarshalJSON(stored); err != nil {
		return "", nil, err
	}
	setStatus(o, revision)
	updated, err := d.r.UpdateStatus(ctx, o, metav1.UpdateOptions{})
	if err != nil {
		return "", nil, err
	}
	b, err := updated.MarshalJSON()
	return updated.GetName() + "@" + updated.GetResourceVersion(), b, err
}

func (d dynamicObjects) delete(ctx context.Context, name string) error {
	return d.r.Delete(ctx, name, metav1.DeleteOptions{})
}

// typedObjects speak protobuf through our typed clientset, as the agent and kubectl-gitops
// do; only our group serves it. Stored objects are protobuf.
type typedObjects struct {
	c gitopsclient.GitOpsDeploymentInterface
}

func (t typedObjects) create(ctx context.Context, obj *unstructured.Unstructured) ([]byte, error) {
	d := &gitopsv1alpha1.GitOpsDeployment{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, d); err != nil {
		return nil, err
	}
	created, err := t.c.Create(ctx, d, metav1.CreateOptions{})
	if err != nil {
		return nil, err
	}
	return created.Marshal()
}

func (t typedObjects) get(ctx context.Context, name string) error {
	_, err := t.c.Get(ctx, name, metav1.GetOptions{})
	return err
}

func (t typedObjects) updateStatus(ctx context.Context, stored []byte, revision string) (string, []byte, error) {
	d := &gitopsv1alpha1.GitOpsDeployment{}
	if err := d.Unmarshal(stored); err != nil {
		return "", nil, err
	}
	setTypedStatus(d, revision)
	updated, err := t.c.UpdateStatus(ctx, d, metav1.UpdateOptions{})
	if err != nil {
		return "", nil, err
	}
	b, err := updated.Marshal()
	return updated.Name + "@" + updated.ResourceVersion, b, err
}

func (t typedObjects) delete(ctx context.Context, name string) error {
	return t.c.Delete(ctx, name, metav1.DeleteOptions{})
}

// setTypedStatus is setStatus for the typed object: the same status, field for field.
func setTypedStatus(d *gitopsv1alpha1.GitOpsDeployment, revision string) {
	ns := d.Spec.Destination.Namespace
	healthy := &gitopsv1alpha1.HealthStatus{Status: gitopsv1alpha1.HealthStatusCodeHealthy}
	d.Status = gitopsv1alpha1.GitOpsDeploymentStatus{
		Sync:   gitopsv1alpha1.SyncStatus{Status: gitopsv1alpha1.SyncStatusCodeSynced, Revision: revision},
		Health: gitopsv1alpha1.HealthStatus{Status: gitopsv1alpha1.HealthStatusCodeHealthy},
		ReconciledState: gitopsv1alpha1.ReconciledState{
			Source:      gitopsv1alpha1.GitOpsDeploymentSource{Path: d.Spec.Source.Path, RepoURL: d.Spec.Source.RepoURL, Branch: d.Spec.Source.TargetRevision},
			Destination: gitopsv1alpha1.GitOpsDeploymentDestination{Namespace: ns},
		},
		Resources: []gitopsv1alpha1.ResourceStatus{
			{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: ns, Name: "web", Status: gitopsv1alpha1.SyncStatusCodeSynced, Health: healthy},
			{Version: "v1", Kind: "Service", Namespace: ns, Name: "web", Status: gitopsv1alpha1.SyncStatusCodeSynced, Health: healthy.DeepCopy()},
		},
	}
}

// storedUpdateStatus writes the i-th stored object back with a status at revision and keeps
// what the server returned.
func (t *Target) storedUpdateStatus(ctx context.Context, objs storedObjects, i int, revision string) (string, error) {
	if objs[i] == nil {
		return "", fmt.Errorf("%s was not created", ObjectName(i))
	}
	key, b, err := t.objects.updateStatus(ctx, objs[i], revision)
	if err != nil {
		return "", err
	}
	objs[i] = b
	return key, nil
}
