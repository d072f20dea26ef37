package listjson

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"

	appstudioinstall "github.com/gitops-service/gitops-service/pkg/apis/appstudio/install"
	gitopsinstall "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/install"
)

// Scheme and Codecs are the server's kinds, whose lists the encoder writes.
var (
	Scheme = func() *runtime.Scheme {
		s := runtime.NewScheme()
		gitopsinstall.Install(s)
		appstudioinstall.Install(s)
		return s
	}()
	Codecs = serializer.NewCodecFactory(Scheme)
)
