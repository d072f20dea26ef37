package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ArgoCDInstanceConditionReady is the condition of an ArgoCDInstance whose agent serves it.
const ArgoCDInstanceConditionReady = "Ready"

// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ArgoCDInstance is one Argo CD instance of the service's fleet: where it runs, how many tenant
// namespaces it may take, and, as its agent reports, whether it is served and how loaded it is.
// It is cluster-scoped and internal to the service: only the service's accounts and cluster
// admins may read or write it.
type ArgoCDInstance struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	// +optional
	Spec ArgoCDInstanceSpec `json:"spec,omitempty" protobuf:"bytes,2,opt,name=spec"`
	// +optional
	Status ArgoCDInstanceStatus `json:"status,omitempty" protobuf:"bytes,3,opt,name=status"`
}

// ArgoCDInstanceSpec is where an instance runs and what it may take.
type ArgoCDInstanceSpec struct {
	// Cluster names the cluster Argo CD runs on (its engine cluster), for the admins' eyes; empty
	// when it runs on the cluster that serves the API. Its agents reach it with their engine
	// kubeconfig.
	// +optional
	Cluster string `json:"cluster,omitempty" protobuf:"bytes,1,opt,name=cluster"`
	// Namespace is Argo CD's namespace on that cluster. It cannot change.
	Namespace string `json:"namespace" protobuf:"bytes,2,opt,name=namespace"`
	// Capacity is the most tenant namespaces the service places on the instance; tenants beyond
	// it are moved to instances with room.
	Capacity int32 `json:"capacity" protobuf:"varint,3,opt,name=capacity"`
	// Draining empties the instance: its tenants that are not pinned move to other instances,
	// and none is placed on it.
	// +optional
	Draining bool `json:"draining,omitempty" protobuf:"varint,4,opt,name=draining"`
}

// ArgoCDInstanceStatus is what the instance's leading agent reports.
type ArgoCDInstanceStatus struct {
	// Conditions: Ready is True while an agent serves the instance and reports in.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty" protobuf:"bytes,1,rep,name=conditions"`
	// Leader is the identity of the agent that serves the instance.
	// +optional
	Leader string `json:"leader,omitempty" protobuf:"bytes,2,opt,name=leader"`
	// LastHeartbeatTime is when that agent last reported; an instance whose agent has not
	// reported for a while takes no new tenants.
	// +optional
	LastHeartbeatTime *metav1.Time `json:"lastHeartbeatTime,omitempty" protobuf:"bytes,3,opt,name=lastHeartbeatTime"`
	// Tenants is the number of tenant namespaces the instance holds.
	// +optional
	Tenants int32 `json:"tenants,omitempty" protobuf:"varint,4,opt,name=tenants"`
	// Applications is the number of Argo CD Applications the agent keeps on the instance.
	// +optional
	Applications int32 `json:"applications,omitempty" protobuf:"varint,5,opt,name=applications"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ArgoCDInstanceList is a list of ArgoCDInstances.
type ArgoCDInstanceList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`
	Items           []ArgoCDInstance `json:"items" protobuf:"bytes,2,rep,name=items"`
}
