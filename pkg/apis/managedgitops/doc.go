// Package managedgitops is the internal version of the managed-gitops.redhat.com API group,
// the form the server validates and converts through.
//
// +k8s:deepcopy-gen=package
// +groupName=managed-gitops.redhat.com
package managedgitops
