package tenantsecrets

import (
	"context"
	"fmt"

	authenticationv1 "k8s.io/api/authentication/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/klog/v2"
)

// ReaderRole is the ClusterRole that reads Secrets (artifacts/agent/tenant-secrets.yaml). The
// service's identities may bind it (RBAC's bind, by name) only as BindingName of their own
// ServiceAccount, to that ServiceAccount alone, and only in a tenant namespace: the admission
// policy gitops-service-rolebindings (artifacts/admission-policy) refuses any other such binding.
const ReaderRole = "gitops-service-tenant-secrets-reader"

// BindingName is the RoleBinding of ReaderRole that the ServiceAccount serviceAccount (of the
// service's namespace) makes for itself in each namespace it serves.
func BindingName(serviceAccount string) string { return ReaderRole + "-" + serviceAccount }

// subject is the ServiceAccount the process runs as, asked of the kube-apiserver once; nil for
// another user (a developer's kubeconfig), which reads Secrets with its own rights and binds
// nothing.
func (s *Set) subject(ctx context.Context) (*rbacv1.Subject, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.selfKnown {
		return s.self, nil
	}
	review, err := s.kube.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("asking the kube-apiserver who this process is: %w", err)
	}
	user := review.Status.UserInfo.Username
	if namespace, name, err := serviceaccount.SplitUsername(user); err == nil {
		s.self = &rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: namespace}
	} else {
		klog.InfoS("not a ServiceAccount: reading the tenants' Secrets with the user's own rights, binding nothing", "user", user)
	}
	s.selfKnown = true
	return s.self, nil
}

// bind makes namespace's binding of ReaderRole to the process's ServiceAccount; created tells
// that this call made it (rather than finding it made). bound is false
// when it may not (the namespace is not a tenant's, or the identity lacks the rights): the
// namespace is then not watched, which the components' reads of it show, and the next event
// of the namespace tries again.
func (s *Set) bind(ctx context.Context, namespace string) (bound, created bool, err error) {
	self, err := s.subject(ctx)
	if err != nil || self == nil {
		return err == nil, false, err
	}
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: BindingName(self.Name), Namespace: namespace},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: ReaderRole},
		Subjects:   []rbacv1.Subject{*self},
	}
	_, err = s.kube.RbacV1().RoleBindings(namespace).Create(ctx, rb, metav1.CreateOptions{})
	switch {
	case err == nil:
		return true, true, nil
	case apierrors.IsAlreadyExists(err):
		return true, false, nil
	case apierrors.IsForbidden(err):
		klog.ErrorS(err, "may not read the Secrets of a namespace served", "namespace", namespace)
		return false, false, nil
	}
	return false, false, fmt.Errorf("binding %s in %s: %w", ReaderRole, namespace, err)
}

// unbind deletes namespace's binding of the process's ServiceAccount.
func (s *Set) unbind(ctx context.Context, namespace string) error {
	self, err := s.subject(ctx)
	if err != nil || self == nil {
		return err
	}
	err = s.kube.RbacV1().RoleBindings(namespace).Delete(ctx, BindingName(self.Name), metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting RoleBinding %s/%s: %w", namespace, BindingName(self.Name), err)
	}
	return nil
}
