package framework

import (
	"context"
	"fmt"
	"regexp"

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

// Event is an Event a controller decided to record on an object once the write it decided with
// it succeeded: a write that fails or conflicts records nothing, and its retry records it once.
type Event struct{ Type, Reason, Message string }

// NormalEvent is a Normal Event whose message has no URL userinfo (Redact).
func NormalEvent(reason, format string, args ...interface{}) Event {
	return Event{corev1.EventTypeNormal, reason, Redact(fmt.Sprintf(format, args...))}
}

// WarningEvent is a Warning Event whose message has no URL userinfo (Redact).
func WarningEvent(reason, format string, args ...interface{}) Event {
	return Event{corev1.EventTypeWarning, reason, Redact(fmt.Sprintf(format, args...))}
}

// RecordEvents records evs on obj; nothing with a nil recorder (tests).
func RecordEvents(recorder record.EventRecorder, obj runtime.Object, evs []Event) {
	if recorder == nil {
		return
	}
	for _, e := range evs {
		recorder.Event(obj, e.Type, e.Reason, e.Message)
	}
}

// userinfo matches the userinfo of a URL ("scheme://user:password@"), up to the last "@"
// before the path, since a password may hold an "@"; secretParam matches a query or form
// parameter that carries a secret.
var (
	userinfo    = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*://)[^/\s]*@`)
	secretParam = regexp.MustCompile(`(?i)\b((?:access_?)?token|password|passwd|secret|api_?key)=[^&\s]+`)
)

// Redact drops the userinfo of every URL in msg and the values of secret-looking parameters:
// a repository or API URL may carry a password or token, and Argo CD's messages may quote one.
func Redact(msg string) string {
	return secretParam.ReplaceAllString(userinfo.ReplaceAllString(msg, "$1"), "$1=REDACTED")
}
