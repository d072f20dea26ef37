// Package appstudio is the internal version of the appstudio.redhat.com API group, the form the
// server validates and converts through.
//
// +k8s:deepcopy-gen=package
// +groupName=appstudio.redhat.com
package appstudio
