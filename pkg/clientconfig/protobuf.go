// Package clientconfig adapts rest.Configs for the clients of this repository's API groups.
package clientconfig

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
)

// Protobuf returns a copy of cfg for a typed clientset of our groups
// (pkg/generated/clientset/versioned): it writes protobuf and prefers it in answers, which
// saves both ends JSON's encoding and decoding, as kube-controller-manager's clients of
// built-in kinds do. JSON stays acceptable for answers a server gives only in JSON.
//
// Only for our groups' typed clients, and only for programs deployed with the server they talk
// to (the agent): a gitops-apiserver older than protobuf refuses a protobuf body with 415.
// Argo CD's kinds are CRDs, which kube-apiserver serves in JSON only, and dynamic clients speak
// JSON anyway.
func Protobuf(cfg *rest.Config) *rest.Config {
	cfg = ProtobufAnswers(cfg)
	cfg.ContentType = runtime.ContentTypeProtobuf
	return cfg
}

// ProtobufAnswers returns a copy of cfg that asks for protobuf answers and writes JSON: for
// clients that meet servers of any version (kubectl-gitops, installed apart from the service),
// since an older server answers the Accept header in JSON but would refuse a protobuf body.
func ProtobufAnswers(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	return cfg
}
