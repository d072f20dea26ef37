package framework

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"

	gitopsscheme "github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned/scheme"
)

// EventComponent is the source of the Events the controllers record.
const EventComponent = "gitops-service-agent"

// Events records Kubernetes Events on the objects the controllers act on, through the
// kube-apiserver's core/v1 Events, where `kubectl describe` finds them.
type Events struct {
	kube        kubernetes.Interface
	broadcaster record.EventBroadcaster
	// Recorder records an Event on an object of the Kubernetes or GitOps API.
	Recorder record.EventRecorder
}

// NewEvents makes the recorder; Events recorded before Start are dropped.
func NewEvents(kube kubernetes.Interface) *Events {
	// The involved object's kind and apiVersion come from the scheme: informers' objects carry
	// no TypeMeta.
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(gitopsscheme.AddToScheme(scheme))
	b := record.NewBroadcaster()
	return &Events{
		kube:        kube,
		broadcaster: b,
		Recorder:    b.NewRecorder(scheme, corev1.EventSource{Component: EventComponent}),
	}
}

// Start sends the recorded Events to the kube-apiserver until ctx is done.
func (e *Events) Start(ctx context.Context) {
	e.broadcaster.StartStructuredLogging(4)
	e.broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: e.kube.CoreV1().Events("")})
	go func() {
		<-ctx.Done()
		e.broadcaster.Shutdown()
	}()
}
