package apiserver

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"

	"github.com/gitops-service/gitops-service/internal/listjson"
	appstudioinstall "github.com/gitops-service/gitops-service/pkg/apis/appstudio/install"
	gitopsinstall "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/install"
)

var (
	// Scheme holds both API groups, internal and versioned, as the server serves them.
	Scheme = runtime.NewScheme()
	// Codecs encodes and decodes with Scheme.
	Codecs = serializer.NewCodecFactory(Scheme)
	// apiSerializer is what the API groups negotiate with: Codecs with JSON lists written item
	// by item (listjson.StreamingLists), without protobuf, which our types have no encoding for. Clients that prefer protobuf (kube-controller-manager's
	// namespace deleter and garbage collector, through the metadata client) then get JSON;
	// offered protobuf, they were answered with an encoding error, and a namespace holding
	// GitOps objects could never be deleted.
	apiSerializer runtime.NegotiatedSerializer = newWithoutProtobuf(Codecs)
)

// withoutProtobuf is the factory's serializers without protobuf. They are worked out once:
// the apiserver asks for them on every request (content negotiation).
type withoutProtobuf struct {
	serializer.CodecFactory
	mediaTypes []runtime.SerializerInfo
}

func newWithoutProtobuf(f serializer.CodecFactory) withoutProtobuf {
	w := withoutProtobuf{CodecFactory: f}
	w.mediaTypes = w.supportedMediaTypes()
	return w
}

func (w withoutProtobuf) SupportedMediaTypes() []runtime.SerializerInfo { return w.mediaTypes }

func (w withoutProtobuf) supportedMediaTypes() []runtime.SerializerInfo {
	var out []runtime.SerializerInfo
	for _, info := range w.CodecFactory.SupportedMediaTypes() {
		switch info.MediaType {
		case runtime.ContentTypeProtobuf:
			continue
		case runtime.ContentTypeJSON:
			info.Serializer = listjson.StreamingLists{Serializer: info.Serializer}
		}
		out = append(out, info)
	}
	return out
}

func init() {
	gitopsinstall.Install(Scheme)
	appstudioinstall.Install(Scheme)

	// The options types (ListOptions, DeleteOptions, ...) every group version accepts, and
	// the unversioned types discovery and errors are written with.
	metav1.AddToGroupVersion(Scheme, schema.GroupVersion{Version: "v1"})
	unversioned := schema.GroupVersion{Group: "", Version: "v1"}
	Scheme.AddUnversionedTypes(unversioned,
		&metav1.Status{}, &metav1.APIVersions{}, &metav1.APIGroupList{}, &metav1.APIGroup{}, &metav1.APIResourceList{})
}
