// Package v1alpha1 is the v1alpha1 version of the appstudio.redhat.com API group: the
// environment, promotion and deployment-target API that is translated into the core GitOps API.
//
// +k8s:deepcopy-gen=package
// +k8s:conversion-gen=github.com/gitops-service/gitops-service/pkg/apis/appstudio
// +k8s:defaulter-gen=TypeMeta
// +k8s:openapi-gen=true
// +groupName=appstudio.redhat.com
// +groupGoName=AppStudio
package v1alpha1
