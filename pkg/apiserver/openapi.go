package apiserver

import (
	"k8s.io/kube-openapi/pkg/common"

	generatedopenapi "github.com/gitops-service/gitops-service/pkg/generated/openapi"
)

// openAPIDefinitions are the generated definitions, with RawExtension (Snapshot's untyped
// spec.artifacts.unstableFields) marked as free-form: server-side apply would otherwise refuse
// every field inside it as undeclared.
func openAPIDefinitions(ref common.ReferenceCallback) map[string]common.OpenAPIDefinition {
	defs := generatedopenapi.GetOpenAPIDefinitions(ref)
	const rawExtension = "k8s.io/apimachinery/pkg/runtime.RawExtension"
	if def, ok := defs[rawExtension]; ok {
		def.Schema.AddExtension("x-kubernetes-preserve-unknown-fields", true)
		defs[rawExtension] = def
	}
	return defs
}
