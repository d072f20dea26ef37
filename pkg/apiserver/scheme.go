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
	// apiSerializer is what the API groups negotiate with: Codecs, with JSON lists written item
	// by item (listjson.StreamingLists). Protobuf is served as for built-in kinds (the types'
	// generated.pb.go): typed clients skip JSON's cost on both sides, and clients that prefer
	// it (kube-controller-manager's namespace deleter and garbage collector, through the
	// metadata client) get what they ask for. Storage stays JSON (postgres.go's codec).
	apiSerializer runtime.NegotiatedSerializer = newAPISerializer(Codecs)
)

// apiSerializerFactory is the factory's serializers with JSON lists streamed. They are worked
// out once: the apiserver asks for them on every request (content negotiation).
type apiSerializerFactory struct {
	serializer.CodecFactory
	mediaTypes []runtime.SerializerInfo
}

func newAPISerializer(f serializer.CodecFactory) apiSerializerFactory {
	w := apiSerializerFactory{CodecFactory: f}
	w.mediaTypes = w.supportedMediaTypes()
	return w
}

func (w apiSerializerFactory) SupportedMediaTypes() []runtime.SerializerInfo { return w.mediaTypes }

func (w apiSerializerFactory) supportedMediaTypes() []runtime.SerializerInfo {
	var out []runtime.SerializerInfo
	for _, info := range w.CodecFactory.SupportedMediaTypes() {
		if info.MediaType == runtime.ContentTypeJSON {
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
